// The scheduler's state machine (Dask's start_state / finish_task / release_data) over node
// numbers, plus the Dask-shaped read-only view of it that callbacks receive.

import type { Plan } from "../graph/plan";
import { type Key, keyId } from "../graph/keys";

/** What callbacks see; the field names and meanings are Dask's. Read-only views, cheap to hold. */
export interface State {
  /** key → the keys it depends on (constant). */
  readonly dependencies: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** key → the keys that depend on it (constant). */
  readonly dependents: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** task → dependencies not computed yet; a task leaves when it becomes ready. */
  readonly waiting: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** key → dependents that have not run yet; a key leaves when its value is released. */
  readonly waitingData: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** key → value, for data and results not yet released. */
  readonly cache: ReadonlyMap<Key, unknown>;
  /** Tasks ready to run; the last one runs next. A fresh array on each read. */
  readonly ready: readonly Key[];
  readonly running: ReadonlySet<Key>;
  readonly finished: ReadonlySet<Key>;
  readonly released: ReadonlySet<Key>;
}

const COMPUTED = 1; // data, or a finished task
const RUNNING = 2;
const FINISHED = 4;
const RELEASED = 8;

export class SchedulerState {
  /** Node → value while cached (the scheduler's cache). */
  readonly values: unknown[];
  /** Ready nodes as a stack: pop from the end, smallest priority on top. */
  readonly ready: number[] = [];
  readonly view: State;
  readonly taskCount: number;

  private readonly flags: Uint8Array;
  private readonly waitingCount: Int32Array;
  private readonly waitingDataCount: Int32Array;
  private waitingTasks = 0;
  private runningCount = 0;
  private finishedTasks = 0;
  private releasedNodes = 0;
  private cachedNodes = 0;
  private readonly newlyReady: number[] = [];

  constructor(
    readonly plan: Plan,
    /** A user-supplied cache kept in step with the scheduler's own, as Dask's `cache=`. */
    private readonly userCache?: Map<Key, unknown>,
  ) {
    const n = plan.keys.length;
    const { dependencyStart, dependentStart, exprs, priority } = plan;
    this.values = new Array(n);
    this.flags = new Uint8Array(n);
    this.waitingCount = new Int32Array(n);
    this.waitingDataCount = new Int32Array(n);
    let tasks = 0;
    for (let i = 0; i < n; i++) {
      this.waitingDataCount[i] = dependentStart[i + 1] - dependentStart[i];
      if (exprs[i] === undefined) {
        this.values[i] = plan.dataValues[i];
        this.flags[i] = COMPUTED;
        this.cachedNodes++;
        userCache?.set(plan.keys[i], plan.dataValues[i]);
      } else {
        tasks++;
      }
    }
    this.taskCount = tasks;
    for (let i = 0; i < n; i++) {
      if (exprs[i] === undefined) continue;
      let waiting = 0;
      for (let e = dependencyStart[i]; e < dependencyStart[i + 1]; e++) {
        if ((this.flags[plan.dependencies[e]] & COMPUTED) === 0) waiting++;
      }
      this.waitingCount[i] = waiting;
      if (waiting > 0) this.waitingTasks++;
      else this.ready.push(i);
    }
    this.ready.sort((a, b) => priority[b] - priority[a]);
    this.view = new StateView(this, plan);
  }

  get running(): number {
    return this.runningCount;
  }

  hasWork(): boolean {
    return this.waitingTasks > 0 || this.ready.length > 0 || this.runningCount > 0;
  }

  /** Takes the next ready task and marks it running. */
  startNext(): number {
    const node = this.ready.pop()!;
    this.flags[node] |= RUNNING;
    this.runningCount++;
    return node;
  }

  /**
   * Marks a ready task running wherever it sits in `ready`, for a scheduler that picks tasks in
   * its own order (a cluster's). False if the task is not ready (still waiting, or started).
   */
  start(node: number): boolean {
    const at = this.ready.lastIndexOf(node);
    if (at < 0) return false;
    this.ready.splice(at, 1);
    this.flags[node] |= RUNNING;
    this.runningCount++;
    return true;
  }

  isRunning(node: number): boolean {
    return (this.flags[node] & RUNNING) !== 0;
  }

  /** Dask's finish_task: store the result, wake dependents, release data nobody needs any more. */
  finishTask(node: number, value: unknown): void {
    const { plan, flags } = this;
    this.values[node] = value;
    this.cachedNodes++;
    this.userCache?.set(plan.keys[node], value);
    const newlyReady = this.newlyReady;
    for (let e = plan.dependentStart[node]; e < plan.dependentStart[node + 1]; e++) {
      const dependent = plan.dependents[e];
      if (--this.waitingCount[dependent] === 0) {
        this.waitingTasks--;
        newlyReady.push(dependent);
      }
    }
    if (newlyReady.length > 0) {
      if (newlyReady.length > 1) newlyReady.sort((a, b) => plan.priority[b] - plan.priority[a]);
      for (const dependent of newlyReady) this.ready.push(dependent);
      newlyReady.length = 0;
    }
    for (let e = plan.dependencyStart[node]; e < plan.dependencyStart[node + 1]; e++) {
      const dependency = plan.dependencies[e];
      if (--this.waitingDataCount[dependency] === 0 && plan.isOutput[dependency] === 0) this.release(dependency);
    }
    flags[node] = (flags[node] & ~RUNNING) | COMPUTED | FINISHED;
    this.finishedTasks++;
    this.runningCount--;
  }

  private release(node: number): void {
    this.values[node] = undefined;
    this.flags[node] |= RELEASED;
    this.releasedNodes++;
    this.cachedNodes--;
    this.userCache?.delete(this.plan.keys[node]);
  }

  // Queries the view is built from.
  is(node: number, flag: number): boolean {
    return (this.flags[node] & flag) !== 0;
  }
  isWaiting(node: number): boolean {
    return this.waitingCount[node] > 0;
  }
  get waitingTaskCount(): number {
    return this.waitingTasks;
  }
  get finishedCount(): number {
    return this.finishedTasks;
  }
  get releasedCount(): number {
    return this.releasedNodes;
  }
  get cachedCount(): number {
    return this.cachedNodes;
  }
}

/** Nodes as a read-only set of keys; membership is a flag test, size a counter. */
class NodeSet implements ReadonlySet<Key> {
  constructor(
    private readonly keyOf: readonly Key[],
    private readonly indexOf: (key: Key) => number,
    private readonly contains: (node: number) => boolean,
    private readonly count: () => number,
    private readonly candidates: () => Iterable<number>,
  ) {}
  get size(): number {
    return this.count();
  }
  has(key: Key): boolean {
    const node = this.indexOf(key);
    return node >= 0 && this.contains(node);
  }
  *keys(): IterableIterator<Key> {
    for (const node of this.candidates()) if (this.contains(node)) yield this.keyOf[node];
  }
  values(): IterableIterator<Key> {
    return this.keys();
  }
  *entries(): IterableIterator<[Key, Key]> {
    for (const key of this.keys()) yield [key, key];
  }
  [Symbol.iterator](): IterableIterator<Key> {
    return this.keys();
  }
  forEach(fn: (value: Key, key: Key, set: ReadonlySet<Key>) => void): void {
    for (const key of this.keys()) fn(key, key, this);
  }
}

/** Nodes as a read-only map from key to a value computed on demand. */
class NodeMap<V> implements ReadonlyMap<Key, V> {
  constructor(
    private readonly keyOf: readonly Key[],
    private readonly indexOf: (key: Key) => number,
    private readonly contains: (node: number) => boolean,
    private readonly count: () => number,
    private readonly valueOf: (node: number) => V,
  ) {}
  get size(): number {
    return this.count();
  }
  has(key: Key): boolean {
    const node = this.indexOf(key);
    return node >= 0 && this.contains(node);
  }
  get(key: Key): V | undefined {
    const node = this.indexOf(key);
    return node >= 0 && this.contains(node) ? this.valueOf(node) : undefined;
  }
  *entries(): IterableIterator<[Key, V]> {
    for (let node = 0; node < this.keyOf.length; node++) {
      if (this.contains(node)) yield [this.keyOf[node], this.valueOf(node)];
    }
  }
  *keys(): IterableIterator<Key> {
    // Not via entries(): values may be costly to build (the key sets of `waiting`).
    for (let node = 0; node < this.keyOf.length; node++) if (this.contains(node)) yield this.keyOf[node];
  }
  *values(): IterableIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }
  [Symbol.iterator](): IterableIterator<[Key, V]> {
    return this.entries();
  }
  forEach(fn: (value: V, key: Key, map: ReadonlyMap<Key, V>) => void): void {
    for (const [key, value] of this.entries()) fn(value, key, this);
  }
}

function* range(start: number, end: number, list: Int32Array): IterableIterator<number> {
  for (let e = start; e < end; e++) yield list[e];
}

function* allNodes(n: number): IterableIterator<number> {
  for (let i = 0; i < n; i++) yield i;
}

class StateView implements State {
  readonly dependencies: ReadonlyMap<Key, ReadonlySet<Key>>;
  readonly dependents: ReadonlyMap<Key, ReadonlySet<Key>>;
  readonly waiting: ReadonlyMap<Key, ReadonlySet<Key>>;
  readonly waitingData: ReadonlyMap<Key, ReadonlySet<Key>>;
  readonly cache: ReadonlyMap<Key, unknown>;
  readonly running: ReadonlySet<Key>;
  readonly finished: ReadonlySet<Key>;
  readonly released: ReadonlySet<Key>;

  constructor(
    private readonly state: SchedulerState,
    plan: Plan,
  ) {
    const { keys, dependencyStart, dependencies, dependentStart, dependents } = plan;
    const n = keys.length;
    const indexOf = (key: Key): number => plan.indexById.get(keyId(key)) ?? -1;
    const always = (): boolean => true;
    const everyNode = (): IterableIterator<number> => allNodes(n);
    const subset = (start: Int32Array, list: Int32Array, node: number, keep: (i: number) => boolean): ReadonlySet<Key> => {
      let size = -1;
      return new NodeSet(
        keys,
        (key) => {
          const i = indexOf(key);
          for (let e = start[node]; e < start[node + 1]; e++) if (list[e] === i) return i;
          return -1;
        },
        keep,
        () => {
          if (size < 0 || keep !== always) {
            size = 0;
            for (let e = start[node]; e < start[node + 1]; e++) if (keep(list[e])) size++;
          }
          return size;
        },
        () => range(start[node], start[node + 1], list),
      );
    };
    const notComputed = (i: number): boolean => !state.is(i, COMPUTED);
    const notFinished = (i: number): boolean => !state.is(i, FINISHED);

    this.dependencies = new NodeMap(keys, indexOf, always, () => n, (i) => subset(dependencyStart, dependencies, i, always));
    this.dependents = new NodeMap(keys, indexOf, always, () => n, (i) => subset(dependentStart, dependents, i, always));
    this.waiting = new NodeMap(
      keys,
      indexOf,
      (i) => state.isWaiting(i),
      () => state.waitingTaskCount,
      (i) => subset(dependencyStart, dependencies, i, notComputed),
    );
    this.waitingData = new NodeMap(
      keys,
      indexOf,
      (i) => !state.is(i, RELEASED),
      () => n - state.releasedCount,
      (i) => subset(dependentStart, dependents, i, notFinished),
    );
    this.cache = new NodeMap(
      keys,
      indexOf,
      (i) => state.is(i, COMPUTED) && !state.is(i, RELEASED),
      () => state.cachedCount,
      (i) => state.values[i],
    );
    this.running = new NodeSet(keys, indexOf, (i) => state.is(i, RUNNING), () => state.running, everyNode);
    this.finished = new NodeSet(keys, indexOf, (i) => state.is(i, FINISHED), () => state.finishedCount, everyNode);
    this.released = new NodeSet(keys, indexOf, (i) => state.is(i, RELEASED), () => state.releasedCount, everyNode);
  }

  get ready(): readonly Key[] {
    return this.state.ready.map((node) => this.state.plan.keys[node]);
  }
}
