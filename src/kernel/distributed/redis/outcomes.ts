// The outcome reader of the Redis transport: a worker completes each job with its task's outcome,
// which BullMQ puts in the job's "completed" event; this loop reads the queue's event stream and
// the client's reply stream and reports both as worker messages, on this process's clock.

import type { Redis } from "ioredis";
import type { StartStop, TransferLogEntry } from "../../../protocol/records";
import type { FromWorker, TaskErredMessage, TaskFinishedMessage, WorkerAddress } from "../messages";
import type { WorkerClock } from "../worker/clock";
import { type OutcomeEntry, type Publication, type ReplyEntry, carryFrames, decodeOutcome, decodeReply, taskJobNumber } from "./jobs";
import type { Namespace } from "./keys";
import type { WorkerRequests } from "./requests";
import type { Pending, TaskQueue } from "./task-queue";

/** A task's report with the read of its inputs from Redis, as the worker logged it (an optional addition). */
export type RedisTaskFinished = TaskFinishedMessage & { readonly transfer?: TransferLogEntry };

/** Entries of each stream read per round trip (a job makes four or five events, one of them its outcome). */
const OUTCOME_BATCH = 4000;
/**
 * Entries read from a stream before the read trims them: a chain's task wakes the read three
 * times (its job added, taken, completed), and a trim with each read was a command of its own
 * per wake-up. The stream stays that short while tasks run, and is trimmed whole once reads come
 * back empty (idle for a blocking read's second).
 */
const TRIM_EVERY = 1000;
const COMPLETED = Buffer.from("completed");
const FAILED = Buffer.from("failed");

type StreamEntry = [id: Buffer, fields: Buffer[]];

export class OutcomeReader {
  constructor(
    /** A connection of its own: XREAD blocks it. */
    private readonly blocking: Redis,
    private readonly namespace: Namespace,
    private readonly tasks: TaskQueue,
    private readonly requests: WorkerRequests,
    /** This process's offset from Redis's clock. */
    private readonly clock: WorkerClock,
    /** Reports messages as `worker`'s. */
    private readonly report: (worker: WorkerAddress, messages: readonly FromWorker[]) => void,
    /** Whether the transport has stopped (failed or closing): the loop ends. */
    private readonly stopped: () => boolean,
    /** A read failed (the connection dropped; it reconnects by itself and the loop tries again). */
    private readonly readFailed: (error: Error) => void,
  ) {}

  /**
   * Reads task outcomes from the task queues' event streams (the "completed" and "failed" events of
   * jobs; BullMQ's other events are passed over) and workers' replies from the reply stream, past
   * the last entries handled, until the transport stops. What was handled is removed in the same
   * write as a later read (events up to the last one read, once TRIM_EVERY of them or the stream
   * went quiet; replies one by one with the next read). That write waits
   * for the next turn of the event loop, after the jobs these outcomes made ready were added: a
   * chain's next task does not wait behind it.
   */
  async run(): Promise<void> {
    // BullMQ's streams of the queues' events (the shared queue's, and each worker's own, see
    // ./placement): a job's "completed" event holds the task's outcome.
    const { replies } = this.namespace;
    const lastEvent = new Map<string, string>();
    let lastReply = "0-0";
    /** Per stream: entries read and not trimmed yet. */
    const untrimmed = new Map<string, number>();
    let idle = false;
    let handledReplies: string[] = [];
    while (!this.stopped()) {
      const taskEvents = this.tasks.eventStreams();
      let reply: unknown;
      try {
        const trimmed = [...untrimmed].filter(([, count]) => idle || count >= TRIM_EVERY).map(([stream]) => stream);
        const after = taskEvents.map((stream) => lastEvent.get(stream) ?? "0-0");
        const readArgs = ["COUNT", String(OUTCOME_BATCH), "BLOCK", "1000", "STREAMS", ...taskEvents, replies, ...after, lastReply];
        this.tasks.outcomesInHand = false;
        if (!this.tasks.deletionsPending && trimmed.length === 0 && handledReplies.length === 0) {
          // Most reads of a chain carry nothing else: the read alone, without making a pipeline.
          reply = await this.blocking.callBuffer("XREAD", ...readArgs);
        } else {
          const read = this.blocking.pipeline();
          this.tasks.queueDeletions(read);
          for (const stream of trimmed) read.xtrim(stream, "MINID", nextStreamId(lastEvent.get(stream)!));
          if (handledReplies.length > 0) read.xdel(replies, ...handledReplies);
          read.callBuffer("XREAD", ...readArgs);
          const results = (await read.exec()) ?? [];
          for (const stream of trimmed) untrimmed.delete(stream);
          handledReplies = [];
          const [error, value] = results[results.length - 1] ?? [new Error("no reply")];
          if (error !== null) throw error;
          reply = value;
        }
      } catch (error) {
        if (this.stopped()) return;
        // The connection dropped: it reconnects by itself (the transport bounds how long); unread entries wait.
        this.readFailed(error as Error);
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      idle = reply === null;
      if (reply === null) continue;
      const read = streamsRead(reply);
      const events: StreamEntry[] = [];
      for (const stream of taskEvents) {
        const entries = read.get(stream) ?? [];
        if (entries.length === 0) continue;
        lastEvent.set(stream, entries[entries.length - 1][0].toString());
        untrimmed.set(stream, (untrimmed.get(stream) ?? 0) + entries.length);
        events.push(...entries);
      }
      const replyEntries = read.get(replies) ?? [];
      if (replyEntries.length > 0) {
        handledReplies = replyEntries.map(([id]) => id.toString());
        lastReply = handledReplies[handledReplies.length - 1];
      }
      this.tasks.outcomesInHand = true;
      this.handle(events, replyEntries);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Deletions left for a read that will not come.
    if (this.tasks.outcomesInHand) {
      this.tasks.outcomesInHand = false;
      this.tasks.flushDeletions();
    }
  }

  private handle(events: readonly StreamEntry[], replies: readonly StreamEntry[]): void {
    const byWorker = new Map<string, FromWorker[]>();
    const deliver = (worker: string, messages: readonly FromWorker[]): void => {
      const list = byWorker.get(worker) ?? [];
      byWorker.set(worker, list);
      list.push(...messages);
    };
    for (const [, fields] of replies) {
      let entry: ReplyEntry;
      try {
        entry = decodeReply(fields[1]);
      } catch {
        continue; // written by something other than a tsdask worker: skipped, the loop goes on
      }
      const reply = entry.reply.op === "profile-reply" ? this.requests.receivedProfile(entry.reply) : entry.reply;
      if (reply !== undefined) deliver(entry.worker, [reply]);
    }
    const orphans: string[] = [];
    for (const [, fields] of events) {
      // Fields: "event", its name, "jobId", the id, then the event's own (see BullMQ's scripts).
      const event = fields[1];
      const jobId = fields[3]?.toString() ?? "";
      if (event.equals(FAILED)) {
        const reason = eventField(fields, "failedReason")?.toString() ?? "no reason given";
        const failure = this.tasks.failedJob(jobId, (name) => lostTaskMessage(name, reason));
        if (failure !== undefined) deliver("redis", [failure]);
        continue;
      }
      if (!event.equals(COMPLETED)) continue;
      let outcome: ReturnType<typeof decodeOutcome>;
      try {
        outcome = decodeOutcome(eventField(fields, "returnvalue") ?? Buffer.alloc(0));
      } catch (error) {
        // Not a tsdask worker's report (another program completing jobs of this queue?): its task errs.
        const failure = this.tasks.failedJob(jobId, (name) => `Task ${name} was completed with a report this client cannot read: ${(error as Error).message}`);
        if (failure !== undefined) deliver("redis", [failure]);
        continue;
      }
      const { publication, entry } = outcome;
      const job = this.tasks.jobOf(entry.key);
      if (job === undefined) {
        // The scheduler forgot the key: a value published for nobody goes.
        if (publication === "published" && !this.tasks.isHeld(entry.key)) orphans.push(entry.key);
        continue;
      }
      // An earlier job of a key queued again: the current job reports too, and its value is the stored one.
      if (job.jobId !== entry.jobId) continue;
      this.tasks.ended(entry.key, job);
      deliver(entry.worker, this.toMessages(entry, job, publication));
    }
    if (orphans.length > 0) this.tasks.deleteValues(orphans);
    for (const [worker, messages] of byWorker) this.report(worker, messages);
  }

  private toMessages(entry: OutcomeEntry, job: Pending, publication: Publication): FromWorker[] {
    switch (entry.status) {
      case "finished": {
        // Frames are carried only when they are the stored value: a re-run that found a value
        // stored (perhaps another, should the task not be deterministic) sent its own.
        const carried = publication === "published" && entry.frames !== undefined ? carryFrames(entry.frames) : undefined;
        // Likewise the worker keeps the value only if its record is the stored one.
        const holder = publication === "published" && entry.heldAt !== undefined ? entry.worker : undefined;
        this.tasks.hold(entry.key, { name: job.name, carried, job: taskJobNumber(job.jobId), ...(holder === undefined ? {} : { holder, nbytes: entry.nbytes }) });
        const finished: RedisTaskFinished = {
          op: "task-finished",
          key: entry.key,
          nbytes: entry.nbytes,
          type: entry.type,
          thread: entry.thread,
          startstops: entry.startstops.map((startstop) => this.fromRedisStartStop(startstop)),
          digests: entry.metrics,
          transfer: entry.transfer === undefined ? undefined : this.fromRedisTransfer(entry.transfer),
        };
        return [finished];
      }
      case "erred": {
        const erred: TaskErredMessage = {
          op: "task-erred",
          key: entry.key,
          error: entry.error,
          thread: entry.thread,
          startstops: entry.startstops.map((startstop) => this.fromRedisStartStop(startstop)),
          digests: entry.metrics,
        };
        return [erred];
      }
      case "missing": {
        // An input lost and computed again while this job looked for it is there now: the task
        // runs again on the new copy, which is not taken for lost too (a third run).
        const lost = entry.missing.filter((key) => !this.tasks.computedAfter(key, job.jobId));
        if (lost.length === 0) return [{ op: "reschedule", key: entry.key }];
        return lost.map((key) => ({ op: "missing-data", key, errantWorker: "redis", task: entry.key }));
      }
    }
  }

  /** A Redis-clock time on this process's clock. */
  private fromRedis(time: number): number {
    return time + this.clock.offset;
  }

  private fromRedisStartStop(startstop: StartStop): StartStop {
    return { ...startstop, start: this.fromRedis(startstop.start), stop: this.fromRedis(startstop.stop) };
  }

  private fromRedisTransfer(entry: TransferLogEntry): TransferLogEntry {
    return { ...entry, start: this.fromRedis(entry.start), stop: this.fromRedis(entry.stop), middle: this.fromRedis(entry.middle) };
  }
}

/** The entries of XREAD's reply by stream: `[[key, entries], …]` in RESP2, `[key, entries, …]` as ioredis flattens RESP3's map. */
function streamsRead(reply: unknown): Map<string, StreamEntry[]> {
  const items = reply as unknown[];
  const pairs = Buffer.isBuffer(items[0]) ? items.flatMap((item, i) => (i % 2 === 0 ? [[item, items[i + 1]]] : [])) : items;
  return new Map((pairs as [Buffer, StreamEntry[]][]).map(([key, entries]) => [key.toString(), entries]));
}

/** The value of a stream entry's field `name`. */
function eventField(fields: readonly Buffer[], name: string): Buffer | undefined {
  for (let i = 0; i < fields.length - 1; i += 2) if (fields[i].toString() === name) return fields[i + 1];
  return undefined;
}

/** The smallest stream id after `id` ("<ms>-<seq>"): XTRIM MINID with it removes `id` and all before. */
function nextStreamId(id: string): string {
  const dash = id.indexOf("-");
  return `${id.slice(0, dash)}-${BigInt(id.slice(dash + 1)) + 1n}`;
}

function lostTaskMessage(name: string, reason: string): string {
  if (/stalled more than allowable limit/.test(reason)) {
    return `Task ${name} was running on workers that died or stopped answering, more times than they allow (tsdask worker --allowed-failures): it is given up (Dask's KilledWorker)`;
  }
  return `Task ${name} failed in its queue: ${reason}`;
}
