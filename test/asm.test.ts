// The WebAssembly chunk kernels in the repository match their AssemblyScript sources in asm/
// (a full AssemblyScript compile: the heavy tier, beside the array unit tests).
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";

test("the committed WebAssembly kernels are built from asm/", () => {
  // Exits non-zero, with a message naming the stale file, when the two disagree.
  execFileSync(process.execPath, [join(__dirname, "../../scripts/build-wasm.mjs"), "--check"], { stdio: "pipe" });
});
