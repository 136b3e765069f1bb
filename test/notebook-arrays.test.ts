// arrays.ipynb against the real tslab kernel: it runs clean as written. Its own file: it
// factorises the seeds' QR example under three profilers, which beside another notebook made one
// file that ran on alone at the end of the suite (test/notebook/user-notebooks.ts).
import { describe } from "node:test";
import { NOTEBOOK_TEST_FILE, testRunsAsWritten, userNotebooks } from "./notebook/user-notebooks";

describe("user notebooks run as written", () => {
  for (const name of userNotebooks()) if (NOTEBOOK_TEST_FILE[name] === "notebook-arrays.test.ts") testRunsAsWritten(name);
});
