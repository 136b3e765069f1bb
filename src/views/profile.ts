// The statistical profile view: an icicle of Dask's profile tree (click a frame to zoom into it,
// breadcrumbs or its root to zoom out) over a timeline of activity (drag to select a time window,
// click to clear), with a task-prefix selector. A pure function of the data and the selection:
// `mountProfile(container, data, state)` gives `{ update(data), state, dispose() }`, so the
// notebook renderer, standalone pages, the performance report and dashboard panels share it.
// Every string from the data (function names, files, source lines, prefixes) is set as text.

import type { ProfilePayload, ProfileViewData } from "../protocol";
import { formatTime } from "../protocol/format";
import {
  type IcicleCell,
  type ProfileWindow,
  frameColor,
  icicleLayout,
  profileOf,
  profilePrefixes,
  profileTimeline,
  shortFilename,
  subtreeAt,
  unpackProfile,
} from "../protocol/profile";
import type { ProfileNode } from "../protocol/records";
import { addStyle } from "./style";

export interface ProfileViewState {
  /** The task prefix shown; undefined: all. */
  readonly prefix?: string;
  /** The time window shown (epoch seconds); undefined: the whole run. */
  readonly start?: number;
  readonly stop?: number;
  /** The frame zoomed into: identifiers from the root's children down. */
  readonly focus?: readonly string[];
}

export interface MountedProfile {
  /** Shows new data (a live panel's next snapshot), keeping the selection where it still applies. */
  update(data: ProfileViewData): void;
  readonly state: ProfileViewState;
  readonly element: HTMLElement;
  dispose(): void;
}

const SVG = "http://www.w3.org/2000/svg";
const ROW = 20;
const TIMELINE_HEIGHT = 90;
const FALLBACK_WIDTH = 900;
/** Approximate width of a label character at the view's 11 px font. */
const CHAR_PX = 6.6;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

function html<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

/** A label that fits `px` pixels, cut with an ellipsis; "" when not even a few letters fit. */
function fit(text: string, px: number): string {
  const chars = Math.floor((px - 6) / CHAR_PX);
  if (chars < 3) return "";
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}

export function mountProfile(container: HTMLElement, initial: ProfileViewData, initialState: ProfileViewState = {}): MountedProfile {
  let data = initial;
  let windows: ProfileWindow[] = unpackProfile(data.profile);
  let state: ProfileViewState = { prefix: initialState.prefix ?? data.prefix, start: initialState.start ?? data.start, stop: initialState.stop ?? data.stop, focus: initialState.focus };

  const root = html("div", "tsdask-profile");
  const bar = html("div", "tsdask-profile-bar");
  const title = html("strong", "tsdask-profile-title");
  const prefixLabel = html("label", "tsdask-profile-prefix", "Task prefix ");
  const select = document.createElement("select");
  prefixLabel.append(select);
  const resetZoom = html("button", "tsdask-profile-reset", "Reset zoom");
  resetZoom.type = "button";
  const wholeRun = html("button", "tsdask-profile-all-time", "Whole run");
  wholeRun.type = "button";
  const summary = html("span", "tsdask-profile-summary");
  bar.append(title, prefixLabel, resetZoom, wholeRun, summary);
  const crumbs = html("div", "tsdask-profile-crumbs");
  const icicle = svg("svg", { class: "tsdask-icicle", role: "img" });
  const legend = html("div", "tsdask-profile-legend");
  const detail = html("div", "tsdask-profile-detail", "Hover a frame for its details; click to zoom in.");
  const timelineTitle = html("div", "tsdask-profile-timeline-title", "Activity over time (drag to select a window, click to clear)");
  const timeline = svg("svg", { class: "tsdask-profile-timeline", height: TIMELINE_HEIGHT });
  root.append(bar, crumbs, icicle, legend, detail, timelineTitle, timeline);
  container.append(root);

  let cells: IcicleCell[] = [];
  /**
   * The frame each drawn mark shows: a click or a hover reads it from the mark itself, which ties
   * the mark to its frame rather than to a position in whatever array the last draw made.
   */
  const cellOfMark = new WeakMap<Element, IcicleCell>();
  /** Samples in the current selection: what hover percentages are of. */
  let selectionTotal = 0;
  let disposed = false;

  const width = (): number => Math.max(200, root.clientWidth || container.clientWidth || FALLBACK_WIDTH);

  function setState(next: ProfileViewState): void {
    state = next;
    draw();
  }

  function currentTree(): ProfileNode {
    return profileOf(windows, data.kind, { prefix: state.prefix, start: state.start, stop: state.stop });
  }

  function draw(): void {
    if (disposed) return;
    title.textContent = data.title;
    drawSelect();
    const tree = currentTree();
    selectionTotal = tree.count;
    let focus = state.focus ?? [];
    let focused = subtreeAt(tree, focus);
    if (focused === undefined || focused.count === 0) {
      focus = [];
      focused = tree;
    }
    drawCrumbs(tree, focus);
    drawIcicle(focused, focus, tree.count);
    drawTimeline();
    const interval = data.profile.interval;
    const range = state.start === undefined ? "whole run" : `${formatClock(state.start)}–${formatClock(state.stop ?? state.start)}`;
    summary.textContent = `${tree.count} samples ≈ ${formatTime(tree.count * interval)} of thread time · ${range}`;
    resetZoom.disabled = focus.length === 0;
    wholeRun.disabled = state.start === undefined;
  }

  function drawSelect(): void {
    const prefixes = data.kind === "compute" ? profilePrefixes(windows) : [];
    const total = prefixes.reduce((sum, p) => sum + p.count, 0);
    const options = [{ value: "", text: "All" }, ...prefixes.map((p) => ({ value: p.prefix, text: `${p.prefix} (${total > 0 ? Math.round((100 * p.count) / total) : 0}%)` }))];
    if (state.prefix !== undefined && !prefixes.some((p) => p.prefix === state.prefix)) options.push({ value: state.prefix, text: `${state.prefix} (0%)` });
    select.replaceChildren(
      ...options.map(({ value, text }) => {
        const option = document.createElement("option");
        option.value = value;
        option.textContent = text;
        return option;
      }),
    );
    select.value = state.prefix ?? "";
    prefixLabel.hidden = data.kind !== "compute";
  }

  function drawCrumbs(tree: ProfileNode, focus: readonly string[]): void {
    const items: HTMLElement[] = [];
    const addCrumb = (text: string, path: readonly string[], current: boolean): void => {
      const crumb = html(current ? "span" : "button", current ? "tsdask-crumb tsdask-crumb-current" : "tsdask-crumb", text);
      if (!current) {
        (crumb as HTMLButtonElement).type = "button";
        crumb.addEventListener("click", () => setState({ ...state, focus: path }));
      }
      if (items.length > 0) items.push(html("span", "tsdask-crumb-sep", "›"));
      items.push(crumb);
    };
    addCrumb("all", [], focus.length === 0);
    let node: ProfileNode | undefined = tree;
    focus.forEach((identifier, i) => {
      node = node?.children[identifier];
      addCrumb(node?.description.name ?? identifier, focus.slice(0, i + 1), i === focus.length - 1);
    });
    crumbs.replaceChildren(...items);
  }

  function drawIcicle(tree: ProfileNode, focus: readonly string[], total: number): void {
    const w = width();
    cells = icicleLayout(tree, { minWidth: 1 / w });
    const depth = cells.reduce((most, cell) => Math.max(most, cell.depth), 0) + 1;
    icicle.setAttribute("width", String(w));
    icicle.setAttribute("height", String(Math.max(ROW, depth * ROW)));
    icicle.setAttribute("viewBox", `0 0 ${w} ${Math.max(ROW, depth * ROW)}`);
    const interval = data.profile.interval;
    const marks: SVGElement[] = [];
    if (cells.length === 0) {
      const empty = svg("text", { x: 8, y: 14, class: "tsdask-icicle-empty" });
      empty.textContent = "No samples in this selection";
      marks.push(empty);
    }
    cells.forEach((cell) => {
      const x = cell.x0 * w;
      const cellWidth = Math.max(0.5, (cell.x1 - cell.x0) * w);
      const isRoot = cell.depth === 0;
      const { name, filename } = cell.node.description;
      const group = svg("g", { class: "tsdask-icicle-cell" });
      cellOfMark.set(group, cell);
      const rect = svg("rect", {
        x,
        y: cell.depth * ROW,
        width: cellWidth,
        height: ROW - 1,
        fill: isRoot ? "#dcdcdc" : frameColor(filename),
      });
      const tip = svg("title", {});
      tip.textContent = describe(cell.node, isRoot && focus.length === 0, interval, total);
      rect.append(tip);
      group.append(rect);
      const label = fit(isRoot ? (focus.length === 0 ? "all" : name) : name, cellWidth);
      if (label !== "") {
        const text = svg("text", { x: x + 3, y: cell.depth * ROW + 14 });
        text.textContent = label;
        group.append(text);
      }
      marks.push(group);
    });
    icicle.replaceChildren(...marks);
    drawLegend();
  }

  /** The colours' files, widest first: which code the time went to at a glance. */
  function drawLegend(): void {
    const widths = new Map<string, number>();
    for (const cell of cells) {
      if (cell.depth === 0) continue;
      const file = cell.node.description.filename;
      widths.set(file, (widths.get(file) ?? 0) + (cell.x1 - cell.x0));
    }
    const files = [...widths].sort((a, b) => b[1] - a[1]).slice(0, 8);
    legend.replaceChildren(
      ...files.map(([file]) => {
        const item = html("span", "tsdask-profile-legend-item");
        const swatch = html("span", "tsdask-profile-swatch");
        swatch.style.background = frameColor(file);
        item.title = file;
        item.append(swatch, document.createTextNode(file === "" ? "(runtime)" : shortFilename(file)));
        return item;
      }),
    );
  }

  function drawTimeline(): void {
    const w = width();
    timeline.setAttribute("width", String(w));
    const points = profileTimeline(windows, { kind: data.kind });
    const marks: SVGElement[] = [];
    if (points.length === 0) {
      timeline.replaceChildren();
      return;
    }
    const first = points[0].time;
    const cycle = windows.reduce((shortest, window) => Math.min(shortest, window.stop - window.time), Infinity);
    const last = points[points.length - 1].time + cycle;
    const span = Math.max(last - first, 1e-9);
    const value = (point: (typeof points)[number]): number => (state.prefix === undefined || data.kind !== "compute" ? point.count : (point.byPrefix[state.prefix] ?? 0));
    const peak = Math.max(1, ...points.map(value));
    const plotHeight = TIMELINE_HEIGHT - 18;
    const xOf = (time: number): number => ((time - first) / span) * w;
    for (const point of points) {
      const h = (value(point) / peak) * (plotHeight - 4);
      const bar = svg("rect", { class: "tsdask-timeline-bar", x: xOf(point.time), y: plotHeight - h, width: Math.max(1, xOf(point.time + cycle) - xOf(point.time) - 1), height: h });
      const tip = svg("title", {});
      tip.textContent = `${formatClock(point.time)}: ${value(point)} samples`;
      bar.append(tip);
      marks.push(bar);
    }
    marks.push(svg("line", { x1: 0, x2: w, y1: plotHeight, y2: plotHeight, class: "tsdask-timeline-axis" }));
    const ticks = Math.min(6, Math.max(1, Math.floor(w / 140)));
    for (let i = 0; i <= ticks; i++) {
      const t = (span * i) / ticks;
      const label = svg("text", { x: Math.min(w - 4, Math.max(2, (t / span) * w)), y: TIMELINE_HEIGHT - 4, "text-anchor": i === 0 ? "start" : i === ticks ? "end" : "middle", class: "tsdask-timeline-tick" });
      label.textContent = `${formatSeconds(t)}`;
      marks.push(label);
    }
    if (state.start !== undefined) {
      const x0 = Math.max(0, xOf(state.start));
      const x1 = Math.min(w, xOf(state.stop ?? state.start));
      marks.push(svg("rect", { class: "tsdask-timeline-selection", x: x0, y: 0, width: Math.max(1, x1 - x0), height: plotHeight }));
    }
    timeline.replaceChildren(...marks);
    timeline.dataset.first = String(first);
    timeline.dataset.span = String(span);
  }

  // ---- Interaction ----------------------------------------------------------------------------

  select.addEventListener("change", () => setState({ ...state, prefix: select.value === "" ? undefined : select.value, focus: state.focus }));
  resetZoom.addEventListener("click", () => setState({ ...state, focus: [] }));
  wholeRun.addEventListener("click", () => setState({ ...state, start: undefined, stop: undefined }));

  const cellAt = (target: EventTarget | null): IcicleCell | undefined => {
    const group = (target as Element | null)?.closest?.(".tsdask-icicle-cell");
    return group === null || group === undefined ? undefined : cellOfMark.get(group);
  };
  icicle.addEventListener("click", (event) => {
    const cell = cellAt(event.target);
    if (cell === undefined) return;
    const focus = state.focus ?? [];
    // The shown root zooms out one level; any other frame becomes the shown root.
    setState({ ...state, focus: cell.depth === 0 ? focus.slice(0, -1) : [...focus, ...cell.path] });
  });
  icicle.addEventListener("mousemove", (event) => {
    const cell = cellAt(event.target);
    if (cell !== undefined) detail.textContent = describe(cell.node, cell.depth === 0 && (state.focus ?? []).length === 0, data.profile.interval, selectionTotal);
  });

  let dragFrom: number | undefined;
  const timeAt = (event: MouseEvent): number => {
    const box = timeline.getBoundingClientRect();
    const first = Number(timeline.dataset.first);
    const span = Number(timeline.dataset.span);
    return first + (Math.min(Math.max(event.clientX - box.left, 0), box.width) / Math.max(box.width, 1)) * span;
  };
  timeline.addEventListener("mousedown", (event) => {
    dragFrom = timeAt(event);
    event.preventDefault();
  });
  const onMouseUp = (event: MouseEvent): void => {
    if (dragFrom === undefined) return;
    const to = timeAt(event);
    const [start, stop] = dragFrom < to ? [dragFrom, to] : [to, dragFrom];
    dragFrom = undefined;
    const span = Number(timeline.dataset.span);
    // A click (no real drag) clears the window.
    if (stop - start < span / 200) setState({ ...state, start: undefined, stop: undefined });
    else setState({ ...state, start, stop });
  };
  window.addEventListener("mouseup", onMouseUp);

  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => draw()) : undefined;
  resize?.observe(root);

  addStyle("tsdask-profile-style", STYLE);
  draw();

  return {
    update(next: ProfileViewData): void {
      data = next;
      windows = unpackProfile(next.profile);
      draw();
    },
    get state(): ProfileViewState {
      return state;
    },
    element: root,
    dispose(): void {
      disposed = true;
      resize?.disconnect();
      window.removeEventListener("mouseup", onMouseUp);
      root.remove();
    },
  };
}

const STYLE = `
.tsdask-profile { font: 12px var(--jp-ui-font-family, sans-serif); color: var(--jp-ui-font-color1, #222); }
.tsdask-profile-bar { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-bottom: 4px; }
.tsdask-profile-summary { color: var(--jp-ui-font-color2, #666); }
.tsdask-profile-crumbs { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; min-height: 20px; }
.tsdask-crumb { font: inherit; border: none; background: none; padding: 0; color: var(--jp-brand-color1, #1a6fb5); cursor: pointer; }
.tsdask-crumb-current { color: inherit; cursor: default; font-weight: 600; }
.tsdask-icicle { display: block; cursor: pointer; }
.tsdask-icicle text { font-size: 11px; fill: #111; pointer-events: none; }
.tsdask-icicle rect { stroke: var(--jp-layout-color0, #fff); stroke-width: 0.5; }
.tsdask-icicle-cell:hover rect { stroke: #000; stroke-width: 1.5; }
.tsdask-profile-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin-top: 4px; color: var(--jp-ui-font-color2, #555); }
.tsdask-profile-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: baseline; }
.tsdask-profile-detail { min-height: 1.4em; margin: 4px 0; color: var(--jp-ui-font-color2, #555); white-space: pre-wrap; overflow-wrap: anywhere; }
.tsdask-profile-timeline-title { margin-top: 6px; color: var(--jp-ui-font-color2, #555); }
.tsdask-profile-timeline { display: block; cursor: crosshair; user-select: none; }
.tsdask-timeline-bar { fill: #4c78a8; }
.tsdask-timeline-axis { stroke: var(--jp-border-color1, #999); }
.tsdask-timeline-tick { font-size: 10px; fill: var(--jp-ui-font-color2, #666); }
.tsdask-timeline-selection { fill: rgba(255, 165, 0, 0.25); stroke: orange; }
`;


/** The hover text of a frame: name, where, the line, time and share. */
function describe(node: ProfileNode, isWholeRoot: boolean, interval: number, total: number): string {
  const time = formatTime(node.count * interval);
  const share = total > 0 ? `${((100 * node.count) / total).toFixed(1)}% of the selection` : "";
  if (isWholeRoot) return `All samples: ${node.count} (${time})`;
  const { name, filename, line_number, line } = node.description;
  const where = filename === "" ? "" : ` — ${shortFilename(filename)}:${line_number}`;
  return `${name}${where}${line === "" ? "" : ` — ${line}`} — ${time}, ${node.count} samples${share === "" ? "" : `, ${share}`}`;
}

function formatClock(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toLocaleTimeString();
}

function formatSeconds(seconds: number): string {
  return seconds < 10 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds)} s`;
}

/** The profile in a notebook output: one mounted view, updated with each payload. */
export class ProfileView {
  readonly node = document.createElement("div");
  private mounted: MountedProfile | undefined;

  constructor() {
    this.node.className = "tsdask-profile-output";
  }

  render(payload: ProfilePayload): void {
    if (this.mounted === undefined) this.mounted = mountProfile(this.node, payload.data);
    else this.mounted.update(payload.data);
  }

  dispose(): void {
    this.mounted?.dispose();
    this.mounted = undefined;
    this.node.remove();
  }
}
