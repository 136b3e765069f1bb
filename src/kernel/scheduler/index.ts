// The scheduler: Dask's get_async state machine and the executors that run tasks
// (this thread now; thread and process pools register themselves here).
export {
  get,
  registerExecutor,
  setDefaultGraphScheduler,
  type GetOptions,
  type SchedulerName,
  type ExecutorFactory,
  type GraphScheduler,
  type GraphRun,
  AbortError,
} from "./get";
export { type State, SchedulerState } from "./state";
export { type Executor, type TaskJob, type TaskOutcome, type TaskTiming, SyncExecutor } from "./executor";
export { WorkerPool, WorkerDiedError, TaskTransferError, UnshippableFunctionError, getPool, closePools, type PoolKind } from "./pool";
