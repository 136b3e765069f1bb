// serveDashboard over real loopback HTTP: the page, the event stream of snapshots, the address
// rules, a taken port, hostile Host headers, and that it never keeps a script alive.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { DashboardFeed, DashboardPublisher, type DashboardServer, get, parseDashboardAddress, serveDashboard, withCallbacks } from "../../src";
import type { DashboardSnapshot } from "../../src/protocol/dashboard";
import { within } from "../helpers/wait";

/** Reads server-sent events from `url` until `until` says stop (or the time runs out). */
async function readEvents(url: string, until: (events: DashboardSnapshot[]) => boolean, ms = 10_000): Promise<DashboardSnapshot[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  const events: DashboardSnapshot[] = [];
  try {
    const response = await fetch(url, { signal: controller.signal });
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of response.body!) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").find((line) => line.startsWith("data: "));
        if (data !== undefined) events.push(JSON.parse(data.slice(6)) as DashboardSnapshot);
      }
      if (until(events)) break;
    }
  } catch (error) {
    // Aborted by the timer, or the server went away ("terminated"): return what came.
    const ended = error instanceof TypeError && error.message === "terminated";
    if (!controller.signal.aborted && !ended) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

describe("serveDashboard", () => {
  const publisher = new DashboardPublisher({ notebook: false, minIntervalMs: 100 });
  let server: DashboardServer;
  before(async () => {
    server = await serveDashboard("127.0.0.1:0", publisher);
  });
  after(() => server.close());

  test("serves the dashboard page: the views inlined, a CSP that allows only its own origin to be fetched", async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const response = await fetch(server.url);
    assert.equal(response.status, 200);
    const html = await response.text();
    assert.match(html, /Content-Security-Policy" content="default-src 'none';[^"]*; connect-src 'self'"/);
    assert.match(html, /tsdaskViews\.mountDashboardPage\(/);
    assert.match(html, /--jp-ui-font-color1/, "the views' styles are inlined");
    assert.equal((await fetch(new URL("nothing", server.url))).status, 404);
    assert.equal((await fetch(server.url, { method: "POST" })).status, 405);
  });

  test("streams the latest snapshot at once, then each new one, from a real computation", async () => {
    const feed = new DashboardFeed({ publisher, label: "served" });
    const inc = (x: number): number => x + 1;
    const dsk: Record<string, unknown> = { x: 0 };
    for (let i = 0; i < 50; i++) dsk[`inc-${i}`] = [inc, "x"];
    await withCallbacks(feed, () => get(dsk, Object.keys(dsk)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const url = new URL("events", server.url).href;
    const first = await readEvents(url, (events) => events.length >= 1);
    const run = first[0]!.progress!.find((p) => p.label === "served");
    assert.deepEqual({ state: run?.state, done: run?.done, total: run?.total }, { state: "finished", done: 50, total: 50 });

    const next = readEvents(url, (events) => events.some((e) => e.progress?.some((p) => p.label === "second")));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await withCallbacks(new DashboardFeed({ publisher, label: "second" }), () => get({ a: 1, b: [inc, "a"] }, "b"));
    const events = await next;
    assert.ok(events.some((e) => e.progress?.some((p) => p.label === "second" && p.state === "finished")));
    for (let k = 1; k < events.length; k++) assert.ok(events[k]!.seq > events[k - 1]!.seq, "snapshots in order");

    const latest = (await (await fetch(new URL("snapshot.json", server.url))).json()) as DashboardSnapshot;
    assert.equal(latest.seq, publisher.latest!.seq);
  });

  test("a request for another host name is refused (DNS rebinding), loopback names are served", async () => {
    const { request } = await import("node:http");
    const status = (host: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(server.url, { headers: { Host: host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    assert.equal(await status(`evil.example:${server.port}`), 403);
    assert.equal(await status(`localhost:${server.port}`), 200);
    assert.equal(await status(`127.0.0.1:${server.port}`), 200);
  });
});

test("addresses: host:port, :port, a port; loopback unless told; bad ones named", () => {
  assert.deepEqual(parseDashboardAddress("127.0.0.1:8787"), { host: "127.0.0.1", port: 8787 });
  assert.deepEqual(parseDashboardAddress(":8787"), { host: "127.0.0.1", port: 8787 });
  assert.deepEqual(parseDashboardAddress(8788), { host: "127.0.0.1", port: 8788 });
  assert.deepEqual(parseDashboardAddress("0.0.0.0:80"), { host: "0.0.0.0", port: 80 });
  assert.deepEqual(parseDashboardAddress("[::1]:9000"), { host: "::1", port: 9000 });
  assert.throws(() => parseDashboardAddress("localhost:http"), /dashboard address must be "host:port", ":port" or a port number, got "localhost:http"/);
  assert.throws(() => parseDashboardAddress("1.2.3.4:70000"), /got "1.2.3.4:70000"/);
});

test("a taken port: another free one with a warning, or a clear error when asked not to", async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as { port: number }).port;
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning.message);
  process.on("warning", onWarning);
  try {
    const server = await serveDashboard(`127.0.0.1:${port}`, new DashboardPublisher({ notebook: false }));
    assert.notEqual(server.port, port);
    await server.close();
    await new Promise((resolve) => setImmediate(resolve));
    assert.match(warnings.join("\n"), new RegExp(`Port ${port} is already in use .*serving the dashboard on port ${server.port} instead`));
    await assert.rejects(
      serveDashboard(`127.0.0.1:${port}`, new DashboardPublisher({ notebook: false }), { fallbackToRandomPort: false }),
      new RegExp(`serveDashboard: cannot listen on "127.0.0.1:${port}": the port is already in use`),
    );
  } finally {
    process.off("warning", onWarning);
    blocker.close();
  }
});

test("a script that serves the dashboard ends when its work is done, even with a page still streaming", async () => {
  const script = `
    const { serveDashboard, DashboardFeed, get, withCallbacks } = require(${JSON.stringify(join(__dirname, "../../src"))});
    (async () => {
      const server = await serveDashboard("127.0.0.1:0");
      await withCallbacks(new DashboardFeed(), () => get({ a: 1, b: [(x) => x + 1, "a"] }, "b"));
      console.log(server.url);
      // The work "goes on" long enough for the test to open the page's stream.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    })();`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const line = /^(http:\/\/\S+)$/m.exec(out);
        if (line !== null) resolve(line[1]!);
      });
      child.once("exit", () => reject(new Error(`the script ended before serving: ${out}`)));
    });
    const events = await readEvents(new URL("events", url).href, (e) => e.length >= 1);
    assert.equal(events[0]!.progress![0]!.state, "finished");
    const stream = readEvents(new URL("events", url).href, () => false, 15_000);
    const code = await within(exited, 10_000);
    assert.equal(code, 0, "the script ended by itself");
    await stream;
  } finally {
    child.kill();
  }
});
