// The Bandwidth panel (Dask's "Bandwidth Types" and "Bandwidth Workers"): the scheduler's running
// estimate, then bars by data type and a source × destination matrix of worker pairs, shaded by
// bandwidth. Rows are kept by name and patched, so nothing jumps while transfers update them.
import type { DashboardSnapshot } from "../../protocol/dashboard";
import { formatBytes, naturalOrder } from "../../protocol/format";
import type { BandwidthSummary } from "../../protocol/records";
import { KeyedRows, element, textElement } from "../dom";
import type { PanelView } from "./kinds";

/** Above this many workers the matrix would be unreadable: pairs are listed as bars instead. */
const MATRIX_WORKERS = 16;

function rate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** A label, a bar scaled to the largest value of its list, and the value as text. */
class RateBar {
  readonly node = element("div", "tsdask-bandwidth-row");
  private readonly name = element("span", "tsdask-bandwidth-name", this.node);
  private readonly fill = element("span", "tsdask-bandwidth-fill", element("span", "tsdask-bandwidth-track", this.node));
  private readonly value = element("span", "tsdask-bandwidth-value", this.node);

  update(name: string, bandwidth: number, largest: number): void {
    if (this.name.textContent !== name) this.name.textContent = this.name.title = name;
    this.fill.style.width = `${largest > 0 ? (100 * Math.max(0, bandwidth)) / largest : 0}%`;
    const text = rate(bandwidth);
    if (this.value.textContent !== text) this.value.textContent = text;
  }
}

type TypeRate = BandwidthSummary["byType"][number];
type Pair = BandwidthSummary["byWorkers"][number];

/** The pairs as a matrix: one row per sender, one column per receiver, cells shaded by bandwidth. */
class PairMatrix {
  readonly node = element("table", "tsdask-dashboard-table tsdask-bandwidth-matrix");

  update(pairs: readonly Pair[], nameOf: (address: string) => string): void {
    const byName = (a: string, b: string): number => naturalOrder(nameOf(a), nameOf(b));
    const sources = [...new Set(pairs.map((pair) => pair.source))].sort(byName);
    const destinations = [...new Set(pairs.map((pair) => pair.destination))].sort(byName);
    const value = new Map(pairs.map((pair) => [`${pair.source}\u0000${pair.destination}`, pair.bandwidth]));
    const largest = Math.max(0, ...pairs.map((pair) => pair.bandwidth));
    // A handful of cells: rebuilt whole, which keeps the code plain and costs nothing measurable.
    const thead = element("thead", "");
    const head = element("tr", "", thead);
    textElement("th", "tsdask-bandwidth-corner", "from \\ to", head);
    for (const destination of destinations) textElement("th", "", nameOf(destination), head).title = destination;
    const body = element("tbody", "");
    for (const source of sources) {
      const row = element("tr", "", body);
      textElement("th", "tsdask-bandwidth-source", nameOf(source), row).title = source;
      for (const destination of destinations) {
        const bandwidth = value.get(`${source}\u0000${destination}`);
        const cell = textElement("td", "tsdask-bandwidth-cell", bandwidth === undefined ? "" : rate(bandwidth), row);
        if (bandwidth !== undefined) {
          cell.style.setProperty("--tsdask-share", String(largest > 0 ? bandwidth / largest : 0));
          cell.title = `${nameOf(source)} → ${nameOf(destination)}: ${rate(bandwidth)}`;
        }
      }
    }
    this.node.replaceChildren(thead, body);
  }
}

export function mountBandwidthPanel(container: HTMLElement, snapshot: DashboardSnapshot): PanelView {
  const root = element("div", "tsdask-dashboard-bandwidth", container);
  const summary = element("div", "tsdask-dashboard-summary", root);
  const typesHeading = textElement("h3", "tsdask-dashboard-heading", "By type", root);
  const types = new KeyedRows(element("div", "tsdask-bandwidth-list", root), (entry: TypeRate) => entry.type, () => new RateBar());
  const pairsHeading = textElement("h3", "tsdask-dashboard-heading", "By worker pair", root);
  const matrix = new PairMatrix();
  root.append(matrix.node);
  const pairList = new KeyedRows(element("div", "tsdask-bandwidth-list", root), (pair: Pair) => `${pair.source}\u0000${pair.destination}`, () => new RateBar());

  const update = (next: DashboardSnapshot): void => {
    const bandwidth = next.bandwidth ?? { total: 0, byType: [], byWorkers: [] };
    const names = new Map((next.workers ?? []).map((worker) => [worker.address, worker.name]));
    const nameOf = (address: string): string => names.get(address) ?? address;
    summary.textContent = `Estimated bandwidth between workers: ${rate(bandwidth.total)}`;

    const byType = [...bandwidth.byType].sort((a, b) => b.bandwidth - a.bandwidth);
    const largestType = Math.max(0, ...byType.map((entry) => entry.bandwidth));
    typesHeading.hidden = byType.length === 0;
    types.sync(byType, (bar, entry) => bar.update(entry.type, entry.bandwidth, largestType));

    const pairs = bandwidth.byWorkers;
    const workers = new Set(pairs.flatMap((pair) => [pair.source, pair.destination]));
    const asMatrix = workers.size <= MATRIX_WORKERS;
    pairsHeading.hidden = pairs.length === 0;
    matrix.node.hidden = !asMatrix || pairs.length === 0;
    if (asMatrix && pairs.length > 0) matrix.update(pairs, nameOf);
    const listed = asMatrix ? [] : [...pairs].sort((a, b) => b.bandwidth - a.bandwidth);
    const largestPair = Math.max(0, ...listed.map((pair) => pair.bandwidth));
    pairList.sync(listed, (bar, pair) => bar.update(`${nameOf(pair.source)} → ${nameOf(pair.destination)}`, pair.bandwidth, largestPair));
  };
  update(snapshot);
  return { update, dispose: () => root.remove() };
}
