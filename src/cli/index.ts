#!/usr/bin/env node
// The `tsdask` command: `tsdask demo` computes a small graph in the terminal with a callback
// that prints keys (Dask's "Custom Callbacks" example).

import { Callback, type Key, formatKey, get, withCallbacks } from "../kernel";

class PrintKeys extends Callback {
  override pretask(key: Key): void {
    console.log(`Computing: ${formatKey(key)}!`);
  }
}

const add = (a: number, b: number): number => a + b;
const mul = (a: number, b: number): number => a * b;

async function demo(): Promise<void> {
  const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };
  console.log("Graph: a = 1, b = 2, c = add(a, b), d = mul(a, b), e = mul(c, d)");
  const result = await withCallbacks([new PrintKeys()], () => get(dsk, "e"));
  console.log(`Result: e = ${result}`);
}

const commands: Record<string, () => Promise<void>> = { demo };

async function main(argv: readonly string[]): Promise<void> {
  const [name = "demo"] = argv;
  const command = commands[name];
  if (command === undefined) {
    console.error(`Unknown command "${name}". Commands: ${Object.keys(commands).join(", ")}`);
    process.exitCode = 2;
    return;
  }
  await command();
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
