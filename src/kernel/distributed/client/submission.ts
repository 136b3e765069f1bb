// Graphs as the cluster scheduler takes them: a culled, ordered Plan (graph/plan.ts) turned into
// the columns of a GraphSubmission — key ids, reprs, prefixes, groups, wire tasks whose
// functions are ids in the cluster's FunctionTable (checked here, before anything runs).

import { type Key, formatKey, keyPrefixer } from "../../graph/keys";
import { type SpanPath, anyTaskTagged, currentSpan, spanOfSpec } from "../../metrics/spans";
import type { Plan } from "../../graph/plan";
import type { Expr } from "../../graph/spec";
import type { WireTask } from "../messages";
import type { FunctionTable } from "../../execution/ship";
import { TaskTransferError, findUncloneable } from "../../execution/transfer";
import type { GraphSubmission } from "../scheduler/state";

/** Dask's task group (key_split_group): a tuple key's name, else the key's prefix. */
export function groupOf(key: Key, prefix: string): string {
  return Array.isArray(key) ? String(key[0]) : prefix;
}

/** Shared one-element id lists: most tasks call one function. */
const singleIds: number[][] = [];
const NO_IDS: readonly number[] = [];

/** Builds wire tasks, collecting the function ids each one calls. */
export class WireBuilder {
  /**
   * The functions the task being built calls: the first alone while it is the only one, so the
   * common task (one function) allocates no list of its own.
   */
  private firstId = -1;
  private moreIds: number[] | undefined;

  constructor(
    private readonly functions: FunctionTable,
    private readonly refOf: (index: number) => string,
  ) {}

  /** The wire form of `expr` (task `key`); `functionIds` afterwards lists the functions it calls. */
  build(expr: Expr, key: Key): WireTask {
    this.firstId = -1;
    this.moreIds = undefined;
    return this.wire(expr, key);
  }

  get functionIds(): readonly number[] {
    if (this.moreIds !== undefined) return this.moreIds;
    return this.firstId < 0 ? NO_IDS : (singleIds[this.firstId] ??= [this.firstId]);
  }

  private called(id: number): void {
    if (this.firstId < 0) this.firstId = id;
    else if (this.moreIds === undefined) {
      if (id !== this.firstId) this.moreIds = [this.firstId, id];
    } else if (!this.moreIds.includes(id)) this.moreIds.push(id);
  }

  private wire(expr: Expr, key: Key): WireTask {
    switch (expr.kind) {
      case "literal":
        checkSendable(expr.value, key);
        return ["lit", expr.value];
      case "ref":
        return ["ref", this.refOf(expr.index)];
      case "call": {
        const id = this.functions.idFor(expr.fn, key);
        this.called(id);
        const wire: unknown[] = ["call", id];
        const { args } = expr;
        for (let i = 0; i < args.length; i++) {
          const arg = args[i];
          if (arg.kind === "literal") {
            checkSendable(arg.value, key, i + 1);
            wire.push(["lit", arg.value]);
          } else {
            wire.push(this.wire(arg, key));
          }
        }
        return wire as unknown as WireTask;
      }
      case "list": {
        const wire: unknown[] = ["list"];
        for (const item of expr.items) wire.push(this.wire(item, key));
        return wire as unknown as WireTask;
      }
    }
  }
}

/**
 * The submission of `plan`. Data nodes become tasks producing their value, except `known` ones
 * (keys the cluster already holds, given as data to the plan): those are references to them.
 */
export function planSubmission(plan: Plan, keyIds: readonly string[], functions: FunctionTable, known: (node: number) => boolean): GraphSubmission {
  const n = plan.keys.length;
  const names = new Array<string>(n);
  const prefixes = new Array<string>(n);
  const groups = new Array<string>(n);
  const tasks = new Array<WireTask | undefined>(n);
  const functionIds = new Array<readonly number[]>(n);
  const builder = new WireBuilder(functions, (index) => keyIds[index]);
  const prefixOf = keyPrefixer();
  const wanted: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = plan.keys[i];
    names[i] = formatKey(key);
    prefixes[i] = prefixOf(key);
    groups[i] = groupOf(key, prefixes[i]);
    const expr = plan.exprs[i];
    if (expr !== undefined) {
      tasks[i] = builder.build(expr, key);
      functionIds[i] = builder.functionIds;
    } else {
      if (!known(i)) checkSendable(plan.dataValues[i], key);
      tasks[i] = known(i) ? undefined : ["lit", plan.dataValues[i]];
      functionIds[i] = NO_IDS;
    }
    if (plan.isOutput[i] === 1) wanted.push(i);
  }
  return {
    keys: keyIds,
    names,
    prefixes,
    groups,
    tasks,
    functions: functionIds,
    dependencyStart: plan.dependencyStart,
    dependencies: plan.dependencies,
    order: plan.priority,
    wanted,
  };
}

/**
 * Refuses, before anything is sent, a literal of task `key` (its argument number `argument`,
 * when it is one) that V8's serialiser cannot write: sent as it is, it would fail the message to
 * the worker, which would be lost and the task retried on worker after worker.
 */
export function checkSendable(value: unknown, key: Key, argument?: number, skip?: (value: object) => boolean): void {
  const part = findUncloneable(value, skip);
  if (part !== undefined) throw new TaskTransferError(key, "argument", undefined, argument === undefined ? part : { argument, ...part });
}

/**
 * Where a plan's tasks belong (spans): the span active where it is submitted, and for tasks a
 * collection built inside another span (delayed values, arrays), that one. Spread into the
 * plan's submission.
 */
export function planSpans(plan: Plan): Pick<GraphSubmission, "span" | "taskSpans"> {
  const span = currentSpan();
  if (!anyTaskTagged()) return { span };
  let taskSpans: (SpanPath | undefined)[] | undefined;
  for (let node = 0; node < plan.keys.length; node++) {
    const tagged = spanOfSpec(plan.graph.get(plan.keys[node]));
    if (tagged !== undefined) (taskSpans ??= new Array<SpanPath | undefined>(plan.keys.length))[node] = tagged;
  }
  return { span, taskSpans };
}
