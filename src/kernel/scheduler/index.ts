// The scheduler: Dask's get_async state machine, the executors that run tasks (this thread,
// thread and process pools), and the choice between them (options, config, an open Client).
export {
  get,
  registerExecutor,
  setDefaultGraphScheduler,
  type GetOptions,
  type GetFunction,
  type GraphScheduler,
  type GraphRun,
  type SchedulerChoice,
  type SchedulerName,
  type ExecutorFactory,
  AbortError,
} from "./get";
export { config, withConfig, type ConfigValues, type ConfigChange } from "./config";
export { SchedulerState } from "./state";
export { type Executor, type TaskJob, type TaskOutcome, SyncExecutor } from "./executor";
export { WorkerPool, WorkerDiedError, TaskTransferError, UnshippableFunctionError, getPool, closePools, type PoolKind } from "../execution";
