// A LocalCluster and its Client for one test, closed however the test ends.
import { Client, LocalCluster, type LocalClusterOptions } from "../../src";

export async function withCluster(options: LocalClusterOptions, fn: (cluster: LocalCluster, client: Client) => Promise<void>): Promise<void> {
  const cluster = await LocalCluster.start({ dashboardAddress: null, ...options });
  try {
    await fn(cluster, await Client.connect(cluster));
  } finally {
    await cluster.close();
  }
}
