// The cluster scheduler: a pure state machine (ClusterState: tasks, workers, placement, worker
// restrictions, queuing, work stealing, releasing, worker loss, task stream, heartbeat data) and
// the Scheduler that drives it over a Transport.
//
// ## Transport (how a second one plugs in)
//
// `Transport` (./transport.ts) carries messages; it decides nothing. A transport:
// - reports, from `start(events)` on: `events.workerJoined(registerMessage)` when a worker's first
//   message arrives, `events.received(address, fromWorkerMessages)` for every later batch (in order),
//   `events.workerLeft(address, reason)` when it is gone;
// - delivers `send(address, toWorkerMessages)` (one batch per worker per event-loop turn);
// - says its `placement`: "locality" (LocalCluster, ../local: the scheduler picks each task's
//   worker; workers keep results and fetch inputs from peers) or "queue" (Redis, ../redis: ready
//   tasks go to `enqueue(computeTasks)` for any worker to take, lowest priority first; results live
//   in a store read by `fetch(keys)` and dropped by `forget(keys)`). The same ClusterState serves
//   both: with "queue" it never picks a worker, counts the store as every key's holder, and keeps
//   no more tasks enqueued than the workers' root slots (worker-saturation) allow;
// - lets idle handles go with `setKeepsAlive(false)` (the Scheduler turns it on while a computation
//   or request is under way) and stops everything in `close()`.
//
// ## What diagnostics read (Scheduler)
// `taskStream` (TaskStreamRing: `index`, `collect({ start, stop, count, startIndex })` of
// TaskStreamRecords), `cumulativeWorkerMetrics()`, `spans()` (SpanRecords, from `state.spans`,
// Dask's spans extension), `syncMetrics()` (waits for a heartbeat from every worker), `memory()`
// (ClusterMemory), `bandwidth()` (BandwidthSummary), `systemHistory(start, stop)` (cluster CPU and
// memory per heartbeat), `profileWindows(range, workers)` (the workers' statistical profiles,
// pulled on request), `workerRecords()` (WorkerRecord[]), `taskCounts()`, and the "worker-joined"
// / "worker-left" / "graph-submitted" / "heartbeat" events (the dashboard's ClusterFeed follows
// computations and idle news with them). These read what is there now, cheaply (a dashboard polls
// them); the client's metrics()/spans() sync first.
export { Scheduler, type SchedulerSettings, type SchedulerEvents } from "./scheduler";
export { ClusterState, type GraphSubmission, type TaskListener, type TaskFailure, type TaskStateName, type SchedulerOptions } from "./state";
export { TaskStreamRing, type CollectOptions, DEFAULT_TASK_STREAM_LENGTH } from "./task-stream";
export type { Transport, TransportEvents, Placement } from "./transport";
export { WorkerState } from "./workers";
export { BandwidthEstimate, CumulativeMetrics, SystemHistory, WorkerMemory, clusterMemory } from "./heartbeats";
