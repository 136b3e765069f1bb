// Message batches as they cross a LocalCluster socket, scheduler ↔ worker. The two messages sent
// once per task — compute-task and task-finished — travel as runs of plain fields in one flat
// array rather than as objects: V8's serialiser and deserialiser spend most of their time on
// objects and their properties, and on graphs of small tasks these two messages are nearly all
// the traffic: even a task's expression and a dependency's holders go inline, not as arrays.
// A batch that cannot hold a binary block (only literals in tasks and run results can) also
// skips the frames' search for blocks. Every other message travels as it is.

import { serialize } from "node:v8";
import { encodeValue } from "./frames";
import type { ComputeTaskMessage, DependencyInfo, FromWorker, TaskFinishedMessage, ToWorker, WireTask } from "../messages";
import type { StartStop } from "../../../protocol/records";

type Message = ToWorker | FromWorker;

// Record tags in the flat array.
const AS_IS = 0;
const COMPUTE_TASK = 1;
const TASK_FINISHED = 2;

/** Messages made of keys, numbers and names only: nothing in them can be a binary block. */
const PLAIN: ReadonlySet<Message["op"]> = new Set<Message["op"]>([
  "define-functions",
  "free-keys",
  "steal-request",
  "heartbeat-reply",
  "close",
  "register",
  "missing-data",
  "reschedule",
  "add-keys",
  "release-worker-data",
  "worker-status-change",
  "heartbeat",
  "steal-response",
]);

/**
 * Messages per socket message: V8's serialiser slows down per message on much larger batches
 * (its buffer and its table of objects written grow), so a long batch goes as several.
 */
const MESSAGES_PER_BATCH = 512;

/**
 * The frames of each socket message for `messages`, in order (see `encodeBatch`), each encoded
 * when asked for: a sender that writes one before asking for the next has the receiver at work
 * on the first while it encodes the rest.
 */
export function* encodeBatches(messages: readonly Message[]): Generator<Buffer[]> {
  if (messages.length <= MESSAGES_PER_BATCH) {
    yield encodeBatch(messages);
    return;
  }
  for (let i = 0; i < messages.length; i += MESSAGES_PER_BATCH) yield encodeBatch(messages.slice(i, i + MESSAGES_PER_BATCH));
}

/** The frames of a batch (see ./frames), ready for `Connection.sendFrames`. */
export function encodeBatch(messages: readonly Message[]): Buffer[] {
  const flat: unknown[] = [];
  let mayHoldBinary = false;
  for (const message of messages) {
    if (message.op === "compute-task") {
      packComputeTask(message, flat);
      if (!mayHoldBinary && hasObjectLiteral(message.task)) mayHoldBinary = true;
    } else if (message.op === "task-finished") {
      packTaskFinished(message, flat);
      if (!mayHoldBinary && typeof message.value === "object" && message.value !== null) mayHoldBinary = true;
    } else {
      flat.push(AS_IS, message);
      if (!PLAIN.has(message.op)) mayHoldBinary = true;
    }
  }
  return mayHoldBinary ? encodeValue(flat) : [serialize(flat)];
}

/** The messages of a batch `encodeBatch` made, once its frames are decoded. */
export function decodeBatch(value: unknown): Message[] {
  if (!Array.isArray(value)) throw new Error(`A message batch must be an array, got ${typeof value}`);
  const messages: Message[] = [];
  let i = 0;
  while (i < value.length) {
    const tag = value[i++];
    if (tag === COMPUTE_TASK) i = unpackComputeTask(value, i, messages);
    else if (tag === TASK_FINISHED) i = unpackTaskFinished(value, i, messages);
    else if (tag === AS_IS) messages.push(value[i++] as Message);
    else throw new Error(`Corrupt message batch: record tag ${JSON.stringify(tag)} at ${i - 1}`);
  }
  return messages;
}

function packComputeTask(message: ComputeTaskMessage, flat: unknown[]): void {
  const { dependencies } = message;
  flat.push(COMPUTE_TASK, message.key, message.name, message.prefix, message.priority, message.spanId, message.returnsResult === true);
  packWireTask(message.task, flat);
  flat.push(dependencies.length);
  for (const { key, nbytes, whoHas, local } of dependencies) {
    flat.push(key, nbytes, local, whoHas.length);
    for (const worker of whoHas) flat.push(worker);
  }
}

function unpackComputeTask(flat: readonly unknown[], at: number, into: Message[]): number {
  const cursor = { at: at + 6 };
  const task = unpackWireTask(flat, cursor);
  let i = cursor.at;
  const count = flat[i++] as number;
  const dependencies = new Array<DependencyInfo>(count);
  for (let d = 0; d < count; d++) {
    const key = flat[i] as string;
    const nbytes = flat[i + 1] as number;
    const local = flat[i + 2] as boolean | undefined;
    const holders = flat[i + 3] as number;
    const whoHas = holders === 0 ? [] : (flat.slice(i + 4, i + 4 + holders) as string[]);
    i += 4 + holders;
    dependencies[d] = local === undefined ? { key, nbytes, whoHas } : { key, nbytes, whoHas, local };
  }
  const message: ComputeTaskMessage = {
    op: "compute-task",
    key: flat[at] as string,
    name: flat[at + 1] as string,
    prefix: flat[at + 2] as string,
    task,
    dependencies,
    priority: flat[at + 3] as number,
    spanId: flat[at + 4] as string,
  };
  into.push(flat[at + 5] === true ? { ...message, returnsResult: true } : message);
  return i;
}

function packTaskFinished(message: TaskFinishedMessage, flat: unknown[]): void {
  const { startstops } = message;
  const withValue = "value" in message;
  flat.push(TASK_FINISHED, message.key, message.nbytes, message.type, message.thread, withValue, withValue ? message.value : undefined, startstops.length);
  for (const startstop of startstops) flat.push(startstop.action, startstop.start, startstop.stop, startstop.source);
}

function unpackTaskFinished(flat: readonly unknown[], at: number, into: Message[]): number {
  const count = flat[at + 6] as number;
  const startstops = new Array<StartStop>(count);
  let i = at + 7;
  for (let s = 0; s < count; s++, i += 4) {
    const source = flat[i + 3] as string | undefined;
    const action = flat[i] as StartStop["action"];
    const start = flat[i + 1] as number;
    const stop = flat[i + 2] as number;
    startstops[s] = source === undefined ? { action, start, stop } : { action, start, stop, source };
  }
  const message: TaskFinishedMessage = { op: "task-finished", key: flat[at] as string, nbytes: flat[at + 1] as number, type: flat[at + 2] as string, thread: flat[at + 3] as number, startstops };
  into.push(flat[at + 4] === true ? { ...message, value: flat[at + 5] } : message);
  return i;
}

/**
 * A task expression in prefix order, its nodes' tags and counts inline: the serialiser's cost
 * is mostly per object, and a task as nested arrays is two or more objects.
 */
function packWireTask(task: WireTask, flat: unknown[]): void {
  switch (task[0]) {
    case "lit":
    case "ref":
      flat.push(task[0], task[1]);
      return;
    case "call":
      flat.push("call", task[1], task.length - 2);
      for (let i = 2; i < task.length; i++) packWireTask(task[i] as WireTask, flat);
      return;
    case "list":
      flat.push("list", task.length - 1);
      for (let i = 1; i < task.length; i++) packWireTask(task[i] as WireTask, flat);
      return;
  }
}

/** The expression `packWireTask` wrote at `cursor.at`; moves the cursor past it. */
function unpackWireTask(flat: readonly unknown[], cursor: { at: number }): WireTask {
  const tag = flat[cursor.at];
  switch (tag) {
    case "lit":
    case "ref":
      cursor.at += 2;
      return [tag, flat[cursor.at - 1]] as WireTask;
    case "call":
    case "list": {
      const task: unknown[] = tag === "call" ? ["call", flat[cursor.at + 1]] : ["list"];
      cursor.at += task.length;
      const count = flat[cursor.at++] as number;
      for (let c = 0; c < count; c++) task.push(unpackWireTask(flat, cursor));
      return task as unknown as WireTask;
    }
    default:
      throw new Error(`Corrupt message batch: task expression tag ${JSON.stringify(tag)} at ${cursor.at}`);
  }
}

/** Whether a literal in `task` is an object (which could be, or hold, a binary block). */
function hasObjectLiteral(task: WireTask): boolean {
  switch (task[0]) {
    case "lit":
      return typeof task[1] === "object" && task[1] !== null;
    case "ref":
      return false;
    case "call":
      for (let i = 2; i < task.length; i++) if (hasObjectLiteral(task[i] as WireTask)) return true;
      return false;
    default:
      for (let i = 1; i < task.length; i++) if (hasObjectLiteral(task[i] as WireTask)) return true;
      return false;
  }
}
