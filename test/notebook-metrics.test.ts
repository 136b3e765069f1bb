// fine-performance-metrics.ipynb against the real tslab kernel: it runs clean as written, and the
// cluster's fine performance metrics panel shows in its cell (test/notebook/user-notebooks.ts says
// which file runs which notebook).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FpmData } from "../src/protocol/fpm";
import { cellStartingWith, displays } from "./notebook/harness";
import { NOTEBOOK_TEST_FILE, runUserNotebook, testRunsAsWritten, userNotebooks } from "./notebook/user-notebooks";

const MIME = "application/vnd.tsdask.v1+json";

describe("user notebooks run as written", () => {
  for (const name of userNotebooks()) if (NOTEBOOK_TEST_FILE[name] === "notebook-metrics.test.ts") testRunsAsWritten(name);
});

describe("fine performance metrics on a cluster, in the notebook", () => {
  test("the cluster's panel shows in the cell with the workers' Send data; the table and the seed's check print", async () => {
    const report = await runUserNotebook("fine-performance-metrics.ipynb");
    const panelCell = cellStartingWith(report, "const panel = await client.visualizeMetrics()");
    // Shown at once from what the scheduler had, then brought up to date in place (the workers' next heartbeats).
    const shown = displays(panelCell).map((m) => ({
      type: m.msg_type,
      id: (m.content.transient as { display_id?: string } | undefined)?.display_id,
      payload: (m.content.data as Record<string, unknown>)[MIME] as { kind: string; seq: number; data: FpmData },
      image: typeof (m.content.data as Record<string, unknown>)["image/svg+xml"] === "string",
    }));
    const outline = JSON.stringify(shown.map(({ type, id, payload, image }) => ({ type, id, seq: payload?.seq, image })));
    assert.equal(shown[0]?.type, "display_data", outline);
    // (Updates of earlier outputs, such as the cluster's own, may land here too: they keep their ids.)
    const panelOutput = shown.filter((m) => m.id === shown[0].id);
    assert.ok(panelOutput.slice(1).every((m) => m.type === "update_display_data"), outline);
    const last = panelOutput[panelOutput.length - 1];
    assert.ok(last.payload.seq === 1 && last.image, outline);
    const payload = last.payload;
    assert.equal(payload.kind, "fpm");
    assert.equal(payload.data.source?.transfers, true);
    assert.match(payload.data.source?.description ?? "", /LocalCluster 'local', 2 workers, 2 threads/);
    assert.ok(payload.data.metrics.some((m) => m.context === "get-data" && m.activity === "network" && m.value > 0), "Send data has the workers' get-data");
    assert.ok(payload.data.spans.some((span) => span.name.join("/") === "qr"), "the qr span");
    const printed = cellStartingWith(report, "console.log(String(panel))").stdout;
    for (const fn of ["tsqr", "dot", "random_sample", "N/A (no task)"]) assert.ok(printed.includes(fn), printed);
    const ratio = Number(/= (\d\.\d{3})$/m.exec(printed)?.[1]);
    // The wall time there includes fetching the 80 MB result into the kernel, which keeps no worker busy.
    assert.ok(ratio > 0.8 && ratio <= 1.02, printed);
  });
});
