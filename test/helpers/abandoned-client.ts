// A client process for the test of a client that dies without closing: connects to the Redis at
// argv[2], stores a value, prints its client id and waits to be killed.
import { RedisTransport } from "../../src/kernel/distributed/redis/transport";

async function main(): Promise<void> {
  const transport = await RedisTransport.connect(process.argv[2]);
  await transport.scatter(new Map([["orphan", new Float64Array(1000)]]));
  console.log(transport.clientId);
  setInterval(() => {}, 1 << 30);
}

void main();
