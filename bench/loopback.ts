// The ceiling under any peer transfer on this machine: raw Node sockets between two processes,
// no tsdask code. Each side's listener writes 4 MiB blocks as fast as the socket takes them; the
// other side connects and reads them with `onread` straight into fresh 4 MiB blocks of its own,
// as PeerClient reads a get-data reply. "One way": one side sends; "both ways": each sends the
// other as much at once, as the all-to-all exchange of bench/redis-data does between 2 workers.
// Run alone: npm run bench -- loopback (bench/redis-data prints the same figures beside its own).

import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { type Server, createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { printTable } from "./harness";

const MiB = 2 ** 20;
const BLOCK_BYTES = 4 * MiB;

export type LoopbackKind = "tcp" | "unix";

/** What the parent tells a side: how much to send, where its peer listens, when to start sending. */
type ToSide = { readonly amount: number } | { readonly peer: string | number } | "send";
/** What a side tells the parent: where it listens, then what it read. */
type Listening = { readonly listening: string | number };
type Read = { readonly bytes: number; readonly seconds: number };

/** Bytes per second between two processes over `kind` sockets: `bytesEachWay` from one to the other, or each way at once. */
export async function loopbackBandwidth(kind: LoopbackKind, bothWays: boolean, bytesEachWay = 512 * MiB): Promise<number> {
  // The unix sockets' files go in a folder of their own, removed however the sides end.
  const folder = mkdtempSync(join(tmpdir(), "tsdask-loopback-"));
  const sides = [0, 1].map((i) => fork(__filename, ["side", kind, join(folder, `side-${i}.sock`)]));
  try {
    const amounts = [bytesEachWay, bothWays ? bytesEachWay : 0];
    sides.forEach((side, i) => side.send({ amount: amounts[i] } satisfies ToSide));
    const [first, second] = (await Promise.all(sides.map(nextMessage))) as Listening[];
    const read = Promise.all(sides.map(nextMessage)) as Promise<Read[]>;
    sides[0].send({ peer: second.listening } satisfies ToSide);
    sides[1].send({ peer: first.listening } satisfies ToSide);
    for (const side of sides) side.send("send" satisfies ToSide);
    const results = await read;
    const bytes = results.reduce((sum, result) => sum + result.bytes, 0);
    return bytes / Math.max(...results.map((result) => result.seconds));
  } finally {
    for (const side of sides) side.kill();
    rmSync(folder, { recursive: true, force: true });
  }
}

function nextMessage(child: ChildProcess): Promise<Listening | Read> {
  return new Promise((resolve, reject) => {
    child.once("message", (message) => resolve(message as Listening | Read));
    child.once("exit", (code) => reject(new Error(`a loopback side exited with code ${code}`)));
  });
}

/** One process of the pair: listens and writes `amount` bytes to whoever connects; connects to its peer and reads. */
function side(kind: LoopbackKind, path: string): void {
  let amount = 0;
  const block = Buffer.alloc(BLOCK_BYTES, 7);
  let server: Server | undefined;
  // Sending starts once the peer has connected and the parent said go (both sides start together).
  let connected: (() => void) | undefined;
  let go = false;
  const startIfReady = (): void => {
    if (go && connected !== undefined) connected();
  };
  process.on("message", (message: ToSide) => {
    if (typeof message === "object" && "amount" in message) {
      amount = message.amount;
      server = createServer((socket) => {
        let sent = 0;
        const pump = (): void => {
          while (sent < amount) {
            sent += BLOCK_BYTES;
            if (!socket.write(block)) {
              socket.once("drain", pump);
              return;
            }
          }
          socket.end();
        };
        connected = pump;
        startIfReady();
      });
      const listened = (): void => {
        const address = server!.address();
        process.send!({ listening: kind === "tcp" && typeof address === "object" && address !== null ? address.port : path } satisfies Listening | Read);
      };
      if (kind === "tcp") server.listen(0, "127.0.0.1", listened);
      else server.listen(path, listened);
    } else if (message === "send") {
      go = true;
      startIfReady();
    } else {
      read(kind, message.peer);
    }
  });
}

/** Reads everything the peer at `address` sends, into fresh 4 MiB blocks; reports bytes and seconds from the first byte. */
function read(kind: LoopbackKind, address: string | number): void {
  let block = new Uint8Array(BLOCK_BYTES);
  let filled = 0;
  let bytes = 0;
  let start: number | undefined;
  const onread = {
    buffer: () => block.subarray(filled),
    callback: (n: number) => {
      start ??= performance.now();
      bytes += n;
      filled += n;
      if (filled === BLOCK_BYTES) {
        block = new Uint8Array(BLOCK_BYTES);
        filled = 0;
      }
      return true;
    },
  };
  const socket = typeof address === "number" ? createConnection({ host: "127.0.0.1", port: address, onread }) : createConnection({ path: address, onread });
  socket.on("end", () => process.send!({ bytes, seconds: start === undefined ? 0 : (performance.now() - start) / 1000 } satisfies Listening | Read));
}

/** The best of `runs` measurements (the machine is shared: the best is the least disturbed). */
export async function bestLoopback(kind: LoopbackKind, bothWays: boolean, runs = 3): Promise<number> {
  let best = 0;
  for (let i = 0; i < runs; i++) best = Math.max(best, await loopbackBandwidth(kind, bothWays));
  return best;
}

async function main(): Promise<void> {
  const rows: (string | number)[][] = [];
  for (const kind of ["tcp", "unix"] as const) {
    for (const bothWays of [false, true]) rows.push([`${kind} ${bothWays ? "both ways" : "one way"}`, (await bestLoopback(kind, bothWays)) / MiB]);
  }
  console.log("raw Node sockets between two processes, 512 MiB each way that sends, read into fresh 4 MiB blocks (best of 3)");
  printTable(["sockets", "MiB/s (all directions)"], rows);
}

if (process.argv[2] === "side") side(process.argv[3] as LoopbackKind, process.argv[4]);
else if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
