// A horizontal memory bar: managed / unmanaged (old, recent) / spilled segments against a scale
// (a memory limit), with a text label. Segments are patched by width, never rebuilt.
import { element } from "../dom";

export type MemoryPart = "managed" | "unmanaged" | "unmanaged-recent" | "spilled";

export const MEMORY_PART_LABELS: Readonly<Record<MemoryPart, string>> = {
  managed: "managed",
  unmanaged: "unmanaged",
  "unmanaged-recent": "unmanaged (recent)",
  spilled: "spilled to disk",
};

export class MemoryBar {
  readonly node = element("div", "tsdask-memory-bar");
  private readonly track = element("div", "tsdask-memory-track", this.node);
  private readonly label = element("span", "tsdask-memory-label", this.node);
  private readonly segments = new Map<MemoryPart, HTMLElement>();

  /** `stacked`: the label under the bar, for narrow cells and long labels. */
  constructor(layout: "inline" | "stacked" = "inline") {
    this.node.dataset.layout = layout;
  }

  /** `scale`: the bytes the full width stands for (a limit); 0 or less: the parts' own total. */
  update(parts: readonly { part: MemoryPart; bytes: number }[], scale: number, label: string): void {
    const total = parts.reduce((sum, { bytes }) => sum + Math.max(0, bytes), 0);
    const full = Math.max(scale > 0 ? scale : total, total, 1);
    for (const { part, bytes } of parts) {
      let segment = this.segments.get(part);
      if (segment === undefined) {
        segment = element("span", `tsdask-memory-segment tsdask-memory-${part}`, this.track);
        segment.title = MEMORY_PART_LABELS[part];
        this.segments.set(part, segment);
      }
      segment.style.width = `${(100 * Math.max(0, bytes)) / full}%`;
    }
    this.node.dataset.over = String(scale > 0 && total > scale);
    if (this.label.textContent !== label) this.label.textContent = label;
  }
}
