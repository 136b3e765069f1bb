// A minimal scheduler over the Redis transport, for its tests and benchmark until the cluster
// scheduler is plugged in: the local Plan gives nodes, dependencies and priorities; tasks are
// enqueued when their inputs are stored, intermediate results are forgotten once their
// dependents finished, and the requested keys are fetched at the end.
import { Graph, type GraphInput } from "../../src/kernel/graph/graph";
import { type Key, formatKey, keyId, keyPrefix } from "../../src/kernel/graph/keys";
import { type Plan, type Request, buildPlan } from "../../src/kernel/graph/plan";
import type { Expr } from "../../src/kernel/graph/spec";
import { FunctionShipper } from "../../src/kernel/scheduler/pool/ship";
import { type FnSpec, unpackError } from "../../src/kernel/scheduler/pool/wire";
import type { FromWorker, RegisterMessage, WireTask } from "../../src/kernel/distributed/messages";
import type { RedisTaskFinished, RedisTransport, RedisTransportEvents } from "../../src/kernel/distributed/redis/transport";

/** What the loop saw, for tests of the diagnostics. */
export interface RunRecord {
  /** Reports of finished tasks by key (kept only when the runner keeps records). */
  readonly finished: Map<string, RedisTaskFinished & { readonly worker: string }>;
  /** Tasks finished, over all computations. */
  finishedCount: number;
  readonly notices: string[];
  readonly joined: RegisterMessage[];
  readonly left: string[];
  /** Reports that arrived for keys already finished (must stay empty: each result counts once). */
  readonly duplicates: string[];
}

export interface ComputeOptions {
  /** Leave the requested results in Redis (to look at them there); `forget` removes them. */
  readonly keepOutputs?: boolean;
}

export interface PlanRunner {
  readonly record: RunRecord;
  compute(graph: GraphInput, keys: Key | readonly unknown[], options?: ComputeOptions): Promise<unknown>;
}

export interface RunnerOptions {
  /** Keep each finished task's report in `record.finished` (default true; a benchmark of memory says false). */
  readonly keepRecords?: boolean;
}

/** Starts `transport` and returns a runner that computes graphs on it, one at a time. */
export async function planRunner(transport: RedisTransport, options: RunnerOptions = {}): Promise<PlanRunner> {
  const record: RunRecord = { finished: new Map(), finishedCount: 0, notices: [], joined: [], left: [], duplicates: [] };
  const keepRecords = options.keepRecords ?? true;
  let current: Computation | undefined;
  let failure: Error | undefined;
  const events: RedisTransportEvents = {
    workerJoined: (registration) => {
      record.joined.push(registration);
      current?.workerJoined(registration);
    },
    workerLeft: (worker) => void record.left.push(worker),
    received: (worker, messages) => current?.received(worker, messages),
    failed: (error) => {
      failure = error;
      current?.fail(error);
    },
    notice: (message) => void record.notices.push(message),
  };
  await transport.start(events);
  return {
    record,
    async compute(graph, keys, options = {}) {
      if (failure !== undefined) throw failure;
      const plan = buildPlan(Graph.from(graph), keys);
      current = new Computation(transport, plan, record, options.keepOutputs ?? false, keepRecords);
      try {
        return await current.run();
      } finally {
        current = undefined;
      }
    },
  };
}

class Computation {
  private readonly remaining: Int32Array;
  private readonly unfinishedDependents: Int32Array;
  private readonly done: Uint8Array;
  private readonly ids: string[];
  private readonly functionIds = new Map<string, number>();
  private readonly newFunctions: [number, FnSpec][] = [];
  private shipper: FunctionShipper | undefined;
  private doneCount = 0;
  private resolve!: (value: unknown) => void;
  private reject!: (error: unknown) => void;
  private settled = false;

  constructor(
    private readonly transport: RedisTransport,
    private readonly plan: Plan,
    private readonly record: RunRecord,
    private readonly keepOutputs: boolean,
    private readonly keepRecords: boolean,
  ) {
    const n = plan.keys.length;
    this.ids = plan.keys.map((key) => keyId(key));
    this.remaining = new Int32Array(n);
    this.unfinishedDependents = new Int32Array(n);
    this.done = new Uint8Array(n);
    for (let node = 0; node < n; node++) {
      this.remaining[node] = plan.dependencyStart[node + 1] - plan.dependencyStart[node];
      this.unfinishedDependents[node] = plan.dependentStart[node + 1] - plan.dependentStart[node];
    }
  }

  async run(): Promise<unknown> {
    const finished = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const worker = this.transport.registeredWorkers[0];
    if (worker !== undefined) this.shipper = new FunctionShipper(worker.info.globals);
    // Data nodes go to the store first; tasks follow as their inputs are there.
    const data = new Map<string, unknown>();
    const names = new Map<string, string>();
    this.plan.exprs.forEach((expr, node) => {
      if (expr !== undefined) return;
      data.set(this.ids[node], this.plan.dataValues[node]);
      names.set(this.ids[node], formatKey(this.plan.keys[node]));
    });
    await this.transport.scatter(data, names);
    const ready: number[] = [];
    this.plan.exprs.forEach((expr, node) => {
      if (expr !== undefined && this.remaining[node] === 0) ready.push(node);
    });
    this.plan.exprs.forEach((expr, node) => {
      if (expr === undefined) this.finish(node, ready);
    });
    if (this.shipper !== undefined) this.submit(ready);
    else this.waiting = ready;
    if (this.doneCount === this.plan.keys.length) void this.complete();
    return finished;
  }

  /** Tasks held back until a worker says which globals shipped sources may use. */
  private waiting: number[] = [];

  workerJoined(registration: RegisterMessage): void {
    if (this.shipper !== undefined) return;
    this.shipper = new FunctionShipper(registration.globals);
    const ready = this.waiting;
    this.waiting = [];
    this.submit(ready);
  }

  private submit(nodes: readonly number[]): void {
    if (nodes.length === 0 || this.settled) return;
    const tasks = [];
    try {
      for (const node of nodes) {
        const task = this.wire(this.plan.exprs[node]!, this.plan.keys[node]);
        const dependencies = [];
        for (let e = this.plan.dependencyStart[node]; e < this.plan.dependencyStart[node + 1]; e++) {
          dependencies.push({ key: this.ids[this.plan.dependencies[e]], nbytes: 0, whoHas: [] });
        }
        const functions = this.newFunctions.splice(0);
        tasks.push({
          op: "compute-task" as const,
          key: this.ids[node],
          name: formatKey(this.plan.keys[node]),
          prefix: keyPrefix(this.plan.keys[node]),
          task,
          dependencies,
          priority: this.plan.priority[node],
          spanId: "default",
          functions,
        });
      }
    } catch (error) {
      this.fail(error);
      return;
    }
    this.transport.enqueue(tasks);
  }

  private wire(expr: Expr, key: Key): WireTask {
    switch (expr.kind) {
      case "literal":
        return ["lit", expr.value];
      case "ref":
        return ["ref", this.ids[expr.index]];
      case "call": {
        const spec = this.shipper!.spec(expr.fn, key);
        const text = JSON.stringify(spec);
        let id = this.functionIds.get(text);
        if (id === undefined) {
          id = this.functionIds.size;
          this.functionIds.set(text, id);
          this.newFunctions.push([id, spec]);
        }
        return ["call", id, ...expr.args.map((arg) => this.wire(arg, key))];
      }
      case "list":
        return ["list", ...expr.items.map((item) => this.wire(item, key))];
    }
  }

  received(worker: string, messages: readonly FromWorker[]): void {
    const ready: number[] = [];
    for (const message of messages) {
      if (message.op === "task-finished") {
        const node = this.plan.indexById.get(message.key);
        if (node === undefined || this.done[node] === 1) {
          this.record.duplicates.push(message.key);
          continue;
        }
        if (this.keepRecords) this.record.finished.set(message.key, { ...(message as RedisTaskFinished), worker });
        this.record.finishedCount++;
        this.finish(node, ready);
      } else if (message.op === "task-erred") {
        this.fail(unpackError(message.error));
      } else if (message.op === "missing-data") {
        this.fail(new Error(`Input ${message.key} is missing from Redis`));
      }
    }
    this.submit(ready);
    if (this.doneCount === this.plan.keys.length) void this.complete();
  }

  /** Marks `node` done; its dependents whose inputs are all there become ready; inputs nobody needs any more are forgotten. */
  private finish(node: number, ready: number[]): void {
    const plan = this.plan;
    this.done[node] = 1;
    this.doneCount++;
    for (let e = plan.dependentStart[node]; e < plan.dependentStart[node + 1]; e++) {
      const dependent = plan.dependents[e];
      if (--this.remaining[dependent] === 0) ready.push(dependent);
    }
    const unneeded: string[] = [];
    for (let e = plan.dependencyStart[node]; e < plan.dependencyStart[node + 1]; e++) {
      const dependency = plan.dependencies[e];
      if (--this.unfinishedDependents[dependency] === 0 && plan.isOutput[dependency] === 0) unneeded.push(this.ids[dependency]);
    }
    if (unneeded.length > 0) this.transport.forget(unneeded);
  }

  private async complete(): Promise<void> {
    if (this.settled) return;
    try {
      const outputs: string[] = [];
      this.plan.isOutput.forEach((flag, node) => {
        if (flag === 1) outputs.push(this.ids[node]);
      });
      const values = await this.transport.fetch(outputs);
      const missing = outputs.filter((id) => !values.has(id));
      if (missing.length > 0) throw new Error(`Results missing from Redis: ${missing.join(", ")}`);
      const collect = (request: Request): unknown => (typeof request === "number" ? values.get(this.ids[request]) : request.map(collect));
      const result = collect(this.plan.request);
      if (!this.keepOutputs) this.transport.forget(outputs);
      this.settled = true;
      this.resolve(result);
    } catch (error) {
      this.fail(error);
    }
  }

  fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(error);
  }
}
