// What travels through Redis between a client and the workers besides stored values: the data
// of a task job (BullMQ keeps it as JSON) and the outcome a worker pushes when it is done.

import { deserialize, serialize } from "node:v8";
import type { MetricRecord, StartStop, TransferLogEntry } from "../../../protocol/records";
import type { FnSpec, PackedError } from "../../scheduler/pool/wire";
import { decodeValue, encodeValue, framesByteLength } from "../frames";
import type { ProfileReplyMessage, ProfileRequestMessage, RunMessage, RunReplyMessage, WireTask } from "../messages";

/** Task specs up to this size travel inside their job; larger ones are stored and the job names them. */
export const INLINE_TASK_BYTES = 128 * 1024;

export interface TaskJobData {
  /** keyId of the task's key. */
  readonly key: string;
  /** Dask's repr of the key, for records and errors. */
  readonly name: string;
  readonly prefix: string;
  readonly spanId: string;
  /** The WireTask's frames in base64, or the token of a spec stored with `RedisStore.putTask`. */
  readonly task: { readonly frames: readonly string[] } | { readonly stored: string };
  /** The definitions of the function ids the task calls. */
  readonly functions: readonly (readonly [number, FnSpec])[];
  /** keyIds of the inputs the task references (read from the store before it runs). */
  readonly inputs: readonly string[];
}

/** A task spec's frames, for the job (inline) or for the store (too large to inline). */
export function encodeTask(task: WireTask): { frames: Buffer[]; inline: boolean } {
  const frames = encodeValue(task);
  return { frames, inline: framesByteLength(frames) <= INLINE_TASK_BYTES };
}

export function decodeInlineTask(frames: readonly string[]): WireTask {
  return decodeValue(frames.map((frame) => Buffer.from(frame, "base64")), { shared: false }) as WireTask;
}

interface OutcomeBase {
  /** The BullMQ job that ran: the client counts only the job it is waiting for. */
  readonly jobId: string;
  readonly key: string;
  /** The worker's name (its address). */
  readonly worker: string;
}

/** A worker's answer to a request (client.run, a profile), on the asking client's outcome stream. */
export interface ReplyEntry {
  readonly status: "reply";
  readonly worker: string;
  readonly reply: RunReplyMessage | ProfileReplyMessage;
}

/** What a worker sends to a client that asked it something (see keys.ts `registry.requests`). */
export interface WorkerRequest {
  /** The asking client's id: the reply goes on its outcome stream. */
  readonly client: string;
  /** Times of a profile request are on the Redis server's clock, as are those of its reply. */
  readonly message: RunMessage | ProfileRequestMessage;
}

/** Times are on the Redis server's clock. */
export type OutcomeEntry =
  | (OutcomeBase & {
      readonly status: "finished";
      readonly nbytes: number;
      readonly type: string;
      readonly thread: number;
      readonly startstops: readonly StartStop[];
      readonly metrics: readonly MetricRecord[];
      /** The read of the task's inputs, when it had any. */
      readonly transfer?: TransferLogEntry;
    })
  | (OutcomeBase & {
      readonly status: "erred";
      readonly error: PackedError;
      readonly thread: number;
      readonly startstops: readonly StartStop[];
      readonly metrics: readonly MetricRecord[];
    })
  | (OutcomeBase & {
      /** Inputs were not in Redis. */
      readonly status: "missing";
      readonly missing: readonly string[];
    });

/** How the outcome's value was stored: published by this run, already there (a re-run), or no value (errors). */
export type Publication = "published" | "existed" | "none";

const PUBLICATION_BY_MARK: Readonly<Record<string, Publication>> = { "1": "published", "0": "existed", "-": "none" };

/** V8 serialisation: packed errors and run results may hold anything structured clone keeps. */
export function encodeOutcome(entry: OutcomeEntry | ReplyEntry): Buffer {
  return serialize(entry);
}

/** Reads an outcome as read from the stream: a mark byte (see Publication), then the entry. */
export function decodeOutcome(item: Buffer): { publication: Publication; entry: OutcomeEntry | ReplyEntry } {
  const publication = PUBLICATION_BY_MARK[String.fromCharCode(item[0])];
  if (publication === undefined) throw new Error(`tsdask: unreadable task outcome in Redis (mark ${item[0]})`);
  return { publication, entry: deserialize(item.subarray(1)) as OutcomeEntry | ReplyEntry };
}
