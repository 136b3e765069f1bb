// The outcome reader of the Redis transport: a worker adds each task's outcome to the client's
// outcome stream as it stores the result (./store); this loop reads that stream and the client's
// reply stream and reports both as worker messages, on this process's clock. Jobs that end
// without an outcome are found by the transport's poll (TaskQueue.endedElsewhere).

import type { Socket } from "node:net";
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

/** Entries of each stream read per round trip. */
const OUTCOME_BATCH = 4000;
/**
 * Outcomes read before the read trims them: a trim with each read would be a command of its own
 * per step of a chain. The stream stays that short while tasks run, and is trimmed whole once
 * reads come back empty (idle for a blocking read's second).
 */
const TRIM_EVERY = 1000;

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
   * Reads task outcomes from the outcome stream and workers' replies from the reply stream, past
   * the last entries handled, until the transport stops: one wake-up per step of a chain. What
   * was handled is removed in the same write as a later read (outcomes up to the last one read,
   * once TRIM_EVERY of them or the stream went quiet; replies one by one with the next read).
   * That write waits for the next turn of the event loop, after the jobs these outcomes made
   * ready were added: a chain's next task does not wait behind it.
   */
  async run(): Promise<void> {
    const { outcomes, replies } = this.namespace;
    let lastOutcome = "0-0";
    let lastReply = "0-0";
    /** Outcomes read and not trimmed yet. */
    let untrimmed = 0;
    let idle = false;
    let handledReplies: string[] = [];
    while (!this.stopped()) {
      let reply: unknown;
      try {
        const trim = untrimmed > 0 && (idle || untrimmed >= TRIM_EVERY);
        const readArgs = ["COUNT", String(OUTCOME_BATCH), "BLOCK", "1000", "STREAMS", outcomes, replies, lastOutcome, lastReply];
        this.tasks.outcomesInHand = false;
        if (!this.tasks.deletionsPending && !trim && handledReplies.length === 0) {
          // Most reads of a chain carry nothing else: the read alone, without making a pipeline.
          reply = await this.blocking.callBuffer("XREAD", ...readArgs);
        } else {
          // The commands before the read leave with it in one write, as a pipeline would send them,
          // without a pipeline's cost (a chain makes one per step); their failures do not matter.
          const socket = (this.blocking as unknown as { stream?: Socket }).stream;
          socket?.cork();
          let read: Promise<unknown>;
          try {
            this.tasks.queueDeletions(this.blocking);
            if (trim) this.blocking.xtrim(outcomes, "MINID", nextStreamId(lastOutcome)).catch(() => {});
            if (handledReplies.length > 0) this.blocking.xdel(replies, ...handledReplies).catch(() => {});
            read = this.blocking.callBuffer("XREAD", ...readArgs);
          } finally {
            socket?.uncork();
          }
          reply = await read;
          if (trim) untrimmed = 0;
          handledReplies = [];
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
      const outcomeEntries = read.get(outcomes) ?? [];
      if (outcomeEntries.length > 0) {
        lastOutcome = outcomeEntries[outcomeEntries.length - 1][0].toString();
        untrimmed += outcomeEntries.length;
      }
      const replyEntries = read.get(replies) ?? [];
      if (replyEntries.length > 0) {
        handledReplies = replyEntries.map(([id]) => id.toString());
        lastReply = handledReplies[handledReplies.length - 1];
      }
      this.tasks.outcomesInHand = true;
      this.handle(outcomeEntries, replyEntries);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Deletions left for a read that will not come.
    if (this.tasks.outcomesInHand) {
      this.tasks.outcomesInHand = false;
      this.tasks.flushDeletions();
    }
  }

  private handle(outcomes: readonly StreamEntry[], replies: readonly StreamEntry[]): void {
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
    for (const [, fields] of outcomes) {
      let outcome: ReturnType<typeof decodeOutcome>;
      try {
        // Fields: "p", how the value was stored, and "o", the outcome (see ./store).
        outcome = decodeOutcome(fields[1], fields[3]);
      } catch {
        continue; // written by something other than a tsdask worker: skipped, the loop goes on
      }
      const { publication, entry } = outcome;
      const job = this.tasks.jobOf(entry.key);
      if (job === undefined) {
        // The scheduler forgot the key: a value published for nobody goes.
        if (publication === "published" && !this.tasks.isHeld(entry.key)) orphans.push(entry.key);
        continue;
      }
      // An earlier job of a key queued again: the current job reports too, and its value is the
      // stored one. A job's later outcome (a run after a takeover) finds its key's job ended.
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

/** The smallest stream id after `id` ("<ms>-<seq>"): XTRIM MINID with it removes `id` and all before. */
function nextStreamId(id: string): string {
  const dash = id.indexOf("-");
  return `${id.slice(0, dash)}-${BigInt(id.slice(dash + 1)) + 1n}`;
}

