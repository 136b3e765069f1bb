// diagnosing-performance.ipynb against the real tslab kernel: it runs clean as written. Its own
// file: it factorises the seeds' QR example four times (twice on the threads scheduler, twice on
// a cluster, each run watched by two diagnostics), the longest of the user notebooks
// (test/notebook/user-notebooks.ts).
import { describe } from "node:test";
import { NOTEBOOK_TEST_FILE, testRunsAsWritten, userNotebooks } from "./notebook/user-notebooks";

describe("user notebooks run as written", () => {
  for (const name of userNotebooks()) if (NOTEBOOK_TEST_FILE[name] === "notebook-diagnosing.test.ts") testRunsAsWritten(name);
});
