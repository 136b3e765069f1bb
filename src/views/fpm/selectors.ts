// The panel's selectors: multi-choice filters (span tags, functions) shown as removable chips with
// a searchable checklist, and the unit choice. Built once and patched: an update never closes an
// open list or loses what was typed in its search box. Every option is set as text.
import { element } from "../dom";

/** A multi-choice filter: "Filter by function (12):" with chips for the chosen ones. */
export class MultiChoice {
  readonly node = element("div", "tsdask-fpm-filter");
  private readonly title = element("span", "tsdask-fpm-filter-title", this.node);
  private readonly chips = element("span", "tsdask-fpm-chips", this.node);
  private readonly menu = element("details", "tsdask-fpm-menu", this.node);
  private readonly toggle = element("summary", "tsdask-fpm-menu-toggle", this.menu);
  private readonly list = element("div", "tsdask-fpm-menu-list", this.menu);
  private readonly search = element("input", "tsdask-fpm-menu-search", this.list);
  private readonly items = element("div", "tsdask-fpm-menu-items", this.list);
  private options: readonly string[] = [];
  private chosen: readonly string[] = [];

  constructor(
    private readonly label: string,
    private readonly placeholder: string,
    private readonly onChange: (chosen: string[]) => void,
  ) {
    this.node.dataset.filter = label;
    this.search.type = "search";
    this.search.placeholder = "Search";
    this.search.addEventListener("input", () => this.renderItems());
    this.toggle.textContent = "Choose";
    // Close the list on a click elsewhere, as a dropdown does.
    document.addEventListener("click", this.closeOnOutsideClick);
  }

  render(options: readonly string[], chosen: readonly string[]): void {
    this.options = options;
    this.chosen = chosen;
    this.title.textContent = `${this.label} (${options.length}):`;
    this.chips.replaceChildren(
      ...(chosen.length === 0
        ? [element("span", "tsdask-fpm-chips-empty")]
        : chosen.map((option) => {
            const chip = element("span", "tsdask-fpm-chip");
            const text = element("span", "tsdask-fpm-chip-text", chip);
            text.textContent = option;
            const remove = element("button", "tsdask-fpm-chip-remove", chip);
            remove.type = "button";
            remove.textContent = "×";
            remove.title = `Remove ${option}`;
            remove.addEventListener("click", () => this.onChange(this.chosen.filter((item) => item !== option)));
            return chip;
          })),
    );
    const empty = this.chips.querySelector(".tsdask-fpm-chips-empty");
    if (empty !== null) empty.textContent = this.placeholder;
    this.toggle.hidden = options.length === 0;
    this.renderItems();
  }

  dispose(): void {
    document.removeEventListener("click", this.closeOnOutsideClick);
    this.node.remove();
  }

  private renderItems(): void {
    const needle = this.search.value.trim().toLowerCase();
    const chosen = new Set(this.chosen);
    this.items.replaceChildren(
      ...this.options
        .filter((option) => needle === "" || option.toLowerCase().includes(needle))
        .map((option) => {
          const item = element("label", "tsdask-fpm-menu-item");
          const box = element("input", "", item);
          box.type = "checkbox";
          box.checked = chosen.has(option);
          box.value = option;
          box.addEventListener("change", () =>
            this.onChange(box.checked ? [...this.chosen, option] : this.chosen.filter((other) => other !== option)),
          );
          item.append(document.createTextNode(option));
          return item;
        }),
    );
  }

  private readonly closeOnOutsideClick = (event: MouseEvent): void => {
    // The event's path, not its target: ticking a box redraws the list, detaching the target.
    if (this.menu.open && !event.composedPath().includes(this.menu)) this.menu.open = false;
  };
}

/** The unit: one of the units seen ("seconds", "bytes", "count", or the user's). */
export class UnitChoice {
  readonly node = element("label", "tsdask-fpm-filter tsdask-fpm-unit");
  private readonly select: HTMLSelectElement;

  constructor(onChange: (unit: string) => void) {
    const title = element("span", "tsdask-fpm-filter-title", this.node);
    title.textContent = "Unit:";
    this.select = element("select", "tsdask-fpm-unit-select", this.node);
    this.select.addEventListener("change", () => onChange(this.select.value));
  }

  render(units: readonly string[], unit: string): void {
    const current = [...this.select.options].map((option) => option.value);
    if (current.length !== units.length || current.some((value, i) => value !== units[i])) {
      this.select.replaceChildren(
        ...units.map((value) => {
          const option = document.createElement("option");
          option.value = value;
          option.textContent = value;
          return option;
        }),
      );
    }
    this.select.value = unit;
  }
}
