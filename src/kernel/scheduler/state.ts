// The scheduler's state machine (Dask's start_state / finish_task / release_data) over node
// numbers, plus the Dask-shaped read-only view of it that callbacks receive.

import type { Plan } from "../graph/plan";
import { type Key, keyId } from "../graph/keys";
import type { State } from "../callbacks/state";

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

/** The parts of a read-only set of keys that follow from its `keys()`. */
abstract class KeySet implements ReadonlySet<Key> {
  abstract readonly size: number;
  abstract has(key: Key): boolean;
  abstract keys(): IterableIterator<Key>;
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

/** Nodes as a read-only set of keys; membership is a flag test, size a counter. */
class NodeSet extends KeySet {
  constructor(
    private readonly keyOf: readonly Key[],
    private readonly indexOf: (key: Key) => number,
    private readonly contains: (node: number) => boolean,
    private readonly count: () => number,
    private readonly candidates: () => Iterable<number>,
  ) {
    super();
  }
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
}

/**
 * A node's dependencies or dependents (`list[from..to)`), those passing `keep` when given: one
 * small object per lookup, iterated straight off the plan's edge list.
 */
class EdgeSet extends KeySet {
  constructor(
    private readonly keyOf: readonly Key[],
    private readonly indexOf: (key: Key) => number,
    private readonly list: Int32Array,
    private readonly from: number,
    private readonly to: number,
    private readonly keep: ((node: number) => boolean) | null,
  ) {
    super();
  }
  get size(): number {
    if (this.keep === null) return this.to - this.from;
    let size = 0;
    for (let e = this.from; e < this.to; e++) if (this.keep(this.list[e])) size++;
    return size;
  }
  has(key: Key): boolean {
    const node = this.indexOf(key);
    if (node < 0) return false;
    for (let e = this.from; e < this.to; e++) if (this.list[e] === node) return this.keep === null || this.keep(node);
    return false;
  }
  *keys(): IterableIterator<Key> {
    const { list, keep, keyOf } = this;
    for (let e = this.from; e < this.to; e++) if (keep === null || keep(list[e])) yield keyOf[list[e]];
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
    // Callbacks pass back the plan's own tuple instances: an identity map (built on first use)
    // finds those without serialising the key. Strings are their own ids.
    let byInstance: Map<Key, number> | undefined;
    const instances = (): Map<Key, number> => {
      if (byInstance === undefined) {
        byInstance = new Map();
        for (let i = 0; i < n; i++) if (typeof keys[i] === "object") byInstance.set(keys[i], i);
      }
      return byInstance;
    };
    const indexOf = (key: Key): number => (typeof key === "object" ? instances().get(key) : undefined) ?? plan.indexById.get(keyId(key)) ?? -1;
    const always = (): boolean => true;
    const everyNode = (): IterableIterator<number> => allNodes(n);
    const edges = (start: Int32Array, list: Int32Array, keep: ((i: number) => boolean) | null) => (node: number): ReadonlySet<Key> =>
      new EdgeSet(keys, indexOf, list, start[node], start[node + 1], keep);
    const notComputed = (i: number): boolean => !state.is(i, COMPUTED);
    const notFinished = (i: number): boolean => !state.is(i, FINISHED);

    this.dependencies = new NodeMap(keys, indexOf, always, () => n, edges(dependencyStart, dependencies, null));
    this.dependents = new NodeMap(keys, indexOf, always, () => n, edges(dependentStart, dependents, null));
    this.waiting = new NodeMap(keys, indexOf, (i) => state.isWaiting(i), () => state.waitingTaskCount, edges(dependencyStart, dependencies, notComputed));
    this.waitingData = new NodeMap(keys, indexOf, (i) => !state.is(i, RELEASED), () => n - state.releasedCount, edges(dependentStart, dependents, notFinished));
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
