// tsdask/array against NumPy and dask.array in the same run: the 1000×1000 chunk kernels
// (matmul, QR) against single-thread OpenBLAS, and the seeds' whole QR example (10000×1000 in
// 1000×1000 chunks: qr, then q.dot(r).compute()) against dask.array's threaded scheduler.
// Run: npm run bench -- array
//
// Kernel choice (measured on this machine while choosing, 1000×1000, one thread, same run, a busy
// machine): ml-matrix 6.15 mmul 1.80 s and QrDecomposition + Q 8.4 s; @stdlib/blas dgemm 4.26 s;
// a plain JavaScript i-k-j loop 1.57 s, a packed 4×4-tile JavaScript loop 0.9–1.1 s (QR with it:
// 2.2–3.7 s); the same tiling in WebAssembly SIMD (AssemblyScript, asm/) 0.16–0.5 s (QR 0.4–0.9 s);
// a 6×4 tile was no faster than 4×4.
// No maintained WASM BLAS installs from npm (emlapack is a 2017 CLAPACK build without SIMD),
// so the kernels are hand-written in AssemblyScript.

import type { SchedulerName } from "../src";
import * as da from "../src/kernel/collections/array";
import { qr as qrBlock } from "../src/kernel/collections/array/householder";
import { matmul } from "../src/kernel/collections/array/matmul";
import { bestOf, hasScheduler, printTable, runPython, timeOnce } from "./harness";

interface NumpyKernels {
  numpy: string;
  matmul: number;
  qr: number;
  qr_10000x1000: number;
}
interface DaskExample {
  dask: string;
  blas_threads: string;
  qr_example: number;
}

function randomBlock(seed: number): da.Chunk {
  const data = new Float64Array(1000 * 1000);
  let state = seed;
  for (let i = 0; i < data.length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    data[i] = state / 4294967296;
  }
  return { shape: [1000, 1000], data };
}

async function main(): Promise<void> {
  const single = { OPENBLAS_NUM_THREADS: "1", OMP_NUM_THREADS: "1", MKL_NUM_THREADS: "1" };
  const numpy = runPython<NumpyKernels>("numpy_array.py", ["kernels", "3"], single);
  const a = randomBlock(1);
  const b = randomBlock(2);
  const matmulSeconds = await bestOf(3, async () => matmul(a, b));
  const qrSeconds = await bestOf(2, async () => qrBlock(a));
  console.log(`chunk kernels, 1000×1000, one thread (numpy ${numpy.numpy}, OpenBLAS single-threaded)`);
  printTable(
    ["kernel", "tsdask s", "numpy s", "ratio"],
    [
      ["matmul", matmulSeconds, numpy.matmul, matmulSeconds / numpy.matmul],
      ["qr (q and r)", qrSeconds, numpy.qr, qrSeconds / numpy.qr],
    ],
  );

  const schedulers: SchedulerName[] = ["sync"];
  if (await hasScheduler("threads")) schedulers.push("threads");
  const example: Record<string, number> = {};
  for (const scheduler of schedulers) {
    // One run each: the sync run takes about a minute.
    const x = da.random.random([10000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(x);
    example[scheduler] = await timeOnce(() => q.dot(r).compute({ scheduler }));
  }
  const dask = runPython<DaskExample>("numpy_array.py", ["example", "2"]);
  const daskSingle = runPython<DaskExample>("numpy_array.py", ["example", "2"], single);
  const best = schedulers.includes("threads") ? "threads" : "sync";
  // Under load OpenBLAS's own threads can fight Dask's; the fairer Dask figure is its faster one.
  const daskBest = Math.min(dask.qr_example, daskSingle.qr_example);
  console.log(`\nQR example: random 10000×1000, chunks 1000×1000, qr, q.dot(r).compute() (dask ${dask.dask}, threaded)`);
  printTable(
    ["run", "seconds", "vs best dask"],
    [
      ...schedulers.map((s) => [`tsdask ${s}`, example[s], example[s] / daskBest] as [string, number, number]),
      ["dask threads, BLAS threads default", dask.qr_example, dask.qr_example / daskBest],
      ["dask threads, BLAS single-threaded", daskSingle.qr_example, daskSingle.qr_example / daskBest],
    ],
  );
  if (!schedulers.includes("threads")) console.log("(threads scheduler not in this build: only sync was timed)");
  console.log(
    JSON.stringify({
      bench: "array",
      matmul: { tsdask: matmulSeconds, numpy: numpy.matmul, ratio: matmulSeconds / numpy.matmul },
      qr: { tsdask: qrSeconds, numpy: numpy.qr, ratio: qrSeconds / numpy.qr },
      qrExample: { ...example, dask: dask.qr_example, daskSingleThreadBlas: daskSingle.qr_example, ratio: example[best] / daskBest, scheduler: best },
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
