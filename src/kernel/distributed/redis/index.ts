// Past one machine: the Redis transport ("queue" placement) of the cluster scheduler, the store of
// results in Redis, and the worker that `tsdask worker redis://…` runs, on BullMQ.
// Importing this folder loads BullMQ and ioredis; ./errors alone loads neither.
export { RedisCluster, type RedisClusterOptions } from "./cluster";
export { RedisTransport } from "./transport";
export type { RedisTransportOptions } from "./options";
export type { QueuedTask } from "./task-queue";
export { RedisAddressError, RedisConnectError, RedisConnectionLostError, RedisDataLostError, RedisProtocolError } from "./errors";
export { RedisWorker } from "./worker";
export type { RedisWorkerOptions } from "./worker-options";
export { RedisStore, type StoredInfo } from "./store";
export { PASSWORD_VARIABLE, RedisTarget, parseRedisUrl } from "./address";
export { WorkerCannotRunError } from "./functions";
export { WorkerNameTakenError, type RegisteredWorker, type WorkerInfo, type WorkerBeat } from "./registry";
