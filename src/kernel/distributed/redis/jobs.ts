// What travels through Redis between a client and the workers besides stored values: the data
// of a task job (BullMQ keeps it as JSON), the task's outcome (which the worker adds to the
// client's outcome stream as it stores the result, see ./store) and a worker's reply to a request.

import { deserialize, serialize } from "node:v8";
import type { MetricContext, MetricRecord, StartStop, TransferLogEntry } from "../../../protocol/records";
import type { FnSpec, PackedError } from "../../execution/wire";
import { decodeValue, encodeValue, framesByteLength } from "../comm/frames";
import type { FreeKeysMessage, PluginAddMessage, PluginRemoveMessage, ProfileReplyMessage, ProfileRequestMessage, RunMessage, RunReplyMessage, WireTask } from "../messages";

/** Task specs up to this size travel inside their job; larger ones are stored and the job names them. */
export const INLINE_TASK_BYTES = 128 * 1024;

/**
 * Results up to this size (their frames) also travel with their outcome, and the client carries
 * them inside the jobs of the tasks that use them: a worker then runs such a task without a read
 * from Redis (a chain of small values: one round trip less per task). The stored value stays the
 * reference (the client's gather, a re-run, a value too large to carry).
 */
export const CARRIED_VALUE_BYTES = 1024;

/** A task job's id: the job's number in its client's sequence (a later job of a key has a larger one, see ./store). */
export function taskJobId(jobNumber: number): string {
  return `j${jobNumber}`;
}

/** The number in a task job's id (see taskJobId). */
export function taskJobNumber(jobId: string): number {
  const jobNumber = Number(jobId.slice(1));
  if (jobId[0] !== "j" || !Number.isSafeInteger(jobNumber)) throw new Error(`tsdask: ${JSON.stringify(jobId)} is not a task job's id`);
  return jobNumber;
}

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
  /** keyIds of the inputs the task references (read from the store before it runs, unless carried). */
  readonly inputs: readonly string[];
  /** Inputs whose value the job carries (see CARRIED_VALUE_BYTES): keyId and the stored frames in base64. */
  readonly carried?: readonly (readonly [key: string, frames: readonly string[]])[];
  /**
   * How many jobs the client queued in the same step, this one included: more than a worker's
   * threads tell it to take jobs ahead (see RedisWorker.jobsAtOnce).
   */
  readonly queuedWith?: number;
  /** The client's holdAbove option, when it gave one (else the worker's own): results larger than this many bytes stay with their worker. */
  readonly holdAbove?: number;
}

/** A task spec's frames, for the job (inline) or for the store (too large to inline). */
export function encodeTask(task: WireTask): { frames: Buffer[]; inline: boolean } {
  const frames = encodeValue(task);
  return { frames, inline: framesByteLength(frames) <= INLINE_TASK_BYTES };
}

export function decodeInlineTask(frames: readonly string[]): WireTask {
  return decodeValue(frames.map((frame) => Buffer.from(frame, "base64")), { shared: false }) as WireTask;
}

/** A value's frames as a job carries them (JSON: base64). */
export function carryFrames(frames: readonly Uint8Array[]): string[] {
  return frames.map((frame) => Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString("base64"));
}

/** The value of frames a job carries. */
export function decodeCarried(frames: readonly string[]): unknown {
  return decodeValue(frames.map((frame) => Buffer.from(frame, "base64")));
}

interface OutcomeBase {
  /** The BullMQ job that ran: the client counts only the job it is waiting for. */
  readonly jobId: string;
  readonly key: string;
  /** The worker's name (its address). */
  readonly worker: string;
}

/** A worker's answer to a request (client.run, a profile), on the asking client's reply stream. */
export interface ReplyEntry {
  readonly status: "reply";
  readonly worker: string;
  readonly reply: RunReplyMessage | ProfileReplyMessage;
}

/**
 * A peer (or the client) that cannot reach a worker's data listener asks it to put values it
 * keeps into Redis (see ./fallback); no reply: the asker watches the values' records.
 */
export interface PublishHeldMessage {
  readonly op: "publish-held";
  readonly keys: readonly string[];
}

/**
 * From a leaving worker (./handoff) to a peer: fetch these values it keeps (key, job) from its
 * data listener, keep them, and record them as yours in place of its.
 */
export interface AcquireHeldMessage {
  readonly op: "acquire-held";
  /** The leaving worker's name, and its data listener. */
  readonly from: string;
  readonly address: string;
  readonly keys: readonly (readonly [key: string, job: number])[];
}

/** What a worker answers on the asking client's reply stream. */
export type AnsweredMessage = RunMessage | ProfileRequestMessage | PluginAddMessage | PluginRemoveMessage;

/** What a client (or, for publish-held, a peer acting for it) asks a worker (see keys.ts `registry.requests`). */
export interface WorkerRequest {
  /** The asking client's id: the reply goes on its reply stream. */
  readonly client: string;
  /**
   * Times of a profile request are on the Redis server's clock, as are those of its reply.
   * free-keys (values the worker keeps that the client forgot), publish-held and acquire-held
   * (from a leaving worker, not a client) get no reply.
   */
  readonly message: AnsweredMessage | FreeKeysMessage | PublishHeldMessage | AcquireHeldMessage;
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
      /** The value's frames, when they are at most CARRIED_VALUE_BYTES. */
      readonly frames?: readonly Uint8Array[];
      /** The data address of the worker that keeps the value (./held), when it is not in Redis. */
      readonly heldAt?: string;
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

/**
 * How the outcome's value was stored: published by this job, already there (a re-run of the job
 * found its earlier run's value), or no value (errors).
 */
export type Publication = "published" | "existed" | "none";

/** By the "p" field of an outcome stream entry: ./store's script codes (1 published, 0 there already) and its NO_VALUE. */
const PUBLICATION_BY_CODE: Readonly<Record<string, Publication>> = { "1": "published", "0": "existed", "-": "none" };

/**
 * A task's outcome as it goes on the client's outcome stream (field "o"): the entry in V8's
 * serialisation (packed errors and run results may hold anything structured clone keeps; the
 * metrics travel packed, see packMetrics).
 */
export function encodeOutcome(entry: OutcomeEntry): Buffer {
  return serialize("metrics" in entry ? { ...entry, metrics: packMetrics(entry.metrics) } : entry);
}

/** An outcome from its outcome stream entry's fields "p" and "o". */
export function decodeOutcome(code: Buffer, outcome: Buffer): { publication: Publication; entry: OutcomeEntry } {
  const publication = PUBLICATION_BY_CODE[code.toString("latin1")];
  if (publication === undefined) throw new Error(`tsdask: unreadable task outcome in Redis (stored as ${JSON.stringify(code.toString("latin1"))})`);
  const entry = deserialize(outcome) as OutcomeEntry;
  if (!("metrics" in entry)) return { publication, entry };
  return { publication, entry: { ...entry, metrics: unpackMetrics(entry.metrics as unknown as PackedMetrics) } };
}

/**
 * Why a task job found completed in its queue cannot count: tsdask workers report on the
 * outcome stream and leave no completed job behind, so it was completed by another program,
 * with `returnValue` (BullMQ's JSON text).
 */
export function foreignCompletion(returnValue: string): string {
  return `tsdask: unreadable task outcome in Redis (${JSON.stringify(returnValue.slice(0, 8))}…)`;
}

export function encodeReply(entry: ReplyEntry): Buffer {
  return serialize(entry);
}

export function decodeReply(item: Buffer): ReplyEntry {
  return deserialize(item) as ReplyEntry;
}

/**
 * Metrics as they travel in an outcome: for each run of records sharing context, span and prefix,
 * those three (null when absent) and the run's length, then activity, unit and value per record.
 * As records, a tiny task's five metrics were two thirds of its outcome, and most of the client's
 * work reading it.
 */
type PackedMetrics = (string | number | null)[];

export function packMetrics(records: readonly MetricRecord[]): PackedMetrics {
  const packed: PackedMetrics = [];
  let lengthAt = -1;
  let previous: MetricRecord | undefined;
  for (const record of records) {
    if (previous === undefined || record.context !== previous.context || record.span !== previous.span || record.prefix !== previous.prefix) {
      lengthAt = packed.push(record.context, record.span ?? null, record.prefix ?? null, 0) - 1;
    }
    packed.push(record.activity, record.unit, record.value);
    (packed[lengthAt] as number)++;
    previous = record;
  }
  return packed;
}

export function unpackMetrics(packed: PackedMetrics): MetricRecord[] {
  const records: MetricRecord[] = [];
  for (let i = 0; i < packed.length; ) {
    const [context, span, prefix, length] = packed.slice(i, (i += 4)) as [MetricContext, string | null, string | null, number];
    for (const end = i + 3 * length; i < end; i += 3) {
      const [activity, unit, value] = packed.slice(i, i + 3) as [string, string, number];
      const record: { -readonly [K in keyof MetricRecord]: MetricRecord[K] } = { context, activity, unit, value };
      if (span !== null) record.span = span;
      if (prefix !== null) record.prefix = prefix;
      records.push(record);
    }
  }
  return records;
}
