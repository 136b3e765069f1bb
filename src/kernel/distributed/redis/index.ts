// Past one machine: the Redis transport ("queue" placement) of the cluster scheduler, the store of
// results in Redis, and the worker that `tsdask worker redis://…` runs, on BullMQ.
export { RedisTransport, RedisConnectionLostError, RedisDataLostError, type RedisTransportEvents, type RedisTransportOptions, type QueuedTask } from "./transport";
export { RedisWorker, type RedisWorkerOptions } from "./worker";
export { RedisStore, type StoredInfo } from "./store";
export { RedisAddressError, RedisConnectError, parseRedisUrl, type RedisTarget } from "./connection";
export { WorkerCannotRunError } from "./functions";
export { WorkerNameTakenError, type RegisteredWorker, type WorkerInfo, type WorkerBeat } from "./registry";
