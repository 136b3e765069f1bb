// The seeds' two dask.array examples, timed on each scheduler this build has, with the speed-up
// over sync: `a.dot(a.T).mean(axis=0)` of a normal random array, and the QR example.
// Run: npm run bench -- array-seeds   (default: the dot example at 3000×3000 in the seeds'
// 1000×1000 chunks, 27 block products; TSDASK_SEED_FULL=1: the seeds' 10000×10000, 1000 of them)

import type { SchedulerName } from "../src";
import * as da from "../src/kernel/collections/array";
import { hasScheduler, printTable, timeOnce } from "./harness";

const full = process.env.TSDASK_SEED_FULL === "1";
const dotSize = full ? 10000 : 3000;
const dotChunk = 1000;

async function main(): Promise<void> {
  const schedulers: SchedulerName[] = ["sync"];
  for (const pool of ["threads", "processes"] as const) if (await hasScheduler(pool)) schedulers.push(pool);
  const rows: (string | number)[][] = [];
  const results: Record<string, Record<string, number>> = { dot: {}, qr: {} };
  for (const scheduler of schedulers) {
    // Start the pool and compile the WebAssembly kernels in its workers first, as any earlier
    // computation in a notebook session would have: the timings below are the steady state.
    const warm = da.random.normal([200, 200], { chunks: [100, 100] });
    await warm.dot(warm.T).compute({ scheduler });
    const a = da.random.normal([dotSize, dotSize], { chunks: [dotChunk, dotChunk] });
    const res = a.dot(a.T).mean({ axis: 0 });
    results.dot[scheduler] = await timeOnce(() => res.compute({ scheduler }));

    const b = da.random.random([10000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(b);
    const b2 = q.dot(r);
    results.qr[scheduler] = await timeOnce(() => b2.compute({ scheduler }));
  }
  for (const example of ["dot", "qr"] as const) {
    for (const scheduler of schedulers) {
      const seconds = results[example][scheduler];
      rows.push([example, scheduler, seconds, results[example].sync / seconds]);
    }
  }
  console.log(`dot: normal ${dotSize}×${dotSize}, chunks ${dotChunk}; a.dot(a.T).mean(axis=0)`);
  console.log("qr: random 10000×1000, chunks 1000×1000; q, r = qr(a); q.dot(r)");
  printTable(["example", "scheduler", "seconds", "speed-up vs sync"], rows);
  if (schedulers.length === 1) console.log("(no pool scheduler in this build: only sync was timed)");
  console.log(JSON.stringify({ bench: "array-seeds", dotSize, dotChunk, ...results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
