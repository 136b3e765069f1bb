// A bare BullMQ worker process, the floor the Redis benchmark compares tsdask's workers with: it
// completes each job of a queue with `data.x + 1` and nothing else (jobs say how long they are kept).
// Usage: node bullmq-floor-worker.js <redis url> <queue name> <concurrency>
import { Worker } from "bullmq";
import { parseRedisUrl } from "../../src/kernel/distributed/redis/address";
import { redisOptions } from "../../src/kernel/distributed/redis/connection";

const [url, queueName, concurrency] = process.argv.slice(2);
const worker = new Worker<{ x: number }, number>(queueName, async (job) => job.data.x + 1, {
  connection: redisOptions(parseRedisUrl(url)),
  concurrency: Number(concurrency),
});
worker.on("error", (error) => console.error(`floor worker: ${error.message}`));
void worker.waitUntilReady().then(() => console.log("ready"));
process.on("SIGTERM", () => void worker.close().then(() => process.exit(0)));
