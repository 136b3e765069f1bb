// A client process for the test of a client that dies without closing: connects to the Redis at
// argv[2], has a result computed and held there, prints its client id and waits to be killed.
import { Client } from "../../src";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { ramp } from "../fixtures/cluster-tasks";

async function main(): Promise<void> {
  const client = await Client.connect(process.argv[2]);
  const held = client.submit(ramp, 1000, 0, false);
  await held.result();
  console.log((client.scheduler.transport as RedisTransport).clientId);
  setInterval(() => void held, 1 << 30);
}

void main();
