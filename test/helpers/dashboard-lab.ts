// Driving the tsdask dashboard in a real JupyterLab page: the sidebar's items, the panels, notebooks
// by path, running their cells, a hand-like drag, and the dock's layout as tab bars and boxes.
import assert from "node:assert/strict";
import type { Locator, Page } from "playwright-core";
import * as lab from "./lab-page";

/** The parts of JupyterLab's app object these tests use (through --LabApp.expose_app_in_browser). */
export interface App {
  shell: {
    widgets(area: string): Iterable<ShellWidget>;
    activateById(id: string): void;
    currentWidget: ShellWidget | null;
  };
  commands: { execute(id: string, args?: object): Promise<unknown> };
}
export interface ShellWidget {
  id: string;
  title: { label: string };
  context?: { path: string; save(): Promise<void> };
  sessionContext?: { ready: Promise<void>; session: { kernel: { status: string } | null } | null };
  content?: { activeCellIndex: number; model: { cells: { get(i: number): { executionCount: number | null } } } };
  close(): void;
}

/** One tab bar of the main area: its tabs' labels in order, and its box rounded to 10 px. */
export interface TabBarPlace {
  tabs: string[];
  x: number;
  y: number;
  width: number;
  height: number;
}

export class DashboardLab {
  constructor(readonly page: Page) {}

  sidebarItem(kind: string): Locator {
    return this.page.locator(`.tsdask-sidebar-item[data-kind="${kind}"]`);
  }

  /** A dashboard panel by kind; `pinned`: the one pinned to that notebook, else the one following the active notebook. */
  panel(kind: string, pinned?: string): Locator {
    const panels = this.page.locator(`.tsdask-dashboard[id^="tsdask-${kind}-"]`);
    const pin = (text: string): Locator => this.page.locator(".tsdask-dashboard-status", { hasText: text });
    return pinned === undefined ? panels.filter({ hasNot: pin("Pinned to") }) : panels.filter({ has: pin(`Pinned to ${pinned}`) });
  }

  notebookPanel(path: string): Locator {
    return this.page.locator(`.jp-NotebookPanel[data-tsdask-test-path="${path}"]`);
  }

  async openSidebar(): Promise<void> {
    await this.page.locator('.jp-SideBar .lm-TabBar-tab[data-id="tsdask-sidebar"]').click();
    await this.page.locator(".tsdask-sidebar").waitFor();
  }

  async waitForApp(): Promise<void> {
    await this.page.waitForFunction(() => window.jupyterapp !== undefined, undefined, { timeout: 60_000 });
    await this.page.evaluate(() => window.jupyterapp.restored);
  }

  /** Opens (or brings forward) a notebook, waits for its kernel, and tags its panel for locators. */
  async openNotebook(path: string): Promise<void> {
    const page = this.page;
    await page.evaluate((p) => void window.jupyterapp.commands.execute("docmanager:open", { path: p }), path);
    await page.waitForFunction((p) => window.jupyterapp.shell.currentWidget?.context?.path === p, path, { timeout: 60_000 });
    await lab.waitForIdleKernel(page);
    await page.evaluate((p) => {
      const app = window.jupyterapp as unknown as App;
      for (const widget of app.shell.widgets("main")) {
        if (widget.context?.path === p) document.getElementById(widget.id)?.setAttribute("data-tsdask-test-path", p);
      }
    }, path);
  }

  /** Runs cell `index` of notebook `path` (made current first) and returns at once. */
  async startCell(path: string, index: number): Promise<void> {
    await this.openNotebook(path);
    await lab.startCell(this.page, index);
  }

  async cellDone(path: string, index: number, timeout = 90_000): Promise<void> {
    await this.page.waitForFunction(
      ([p, i]) => {
        const app = window.jupyterapp as unknown as App;
        for (const widget of app.shell.widgets("main")) {
          if (widget.context?.path === p) return widget.content!.model.cells.get(i as number).executionCount !== null && widget.sessionContext?.session?.kernel?.status === "idle";
        }
        return false;
      },
      [path, index] as const,
      { timeout },
    );
  }

  /** Runs a cell to its end. */
  async runCell(path: string, index: number, timeout?: number): Promise<void> {
    await this.startCell(path, index);
    await this.cellDone(path, index, timeout);
  }

  /** Saves and closes the notebook at `path`. */
  async closeNotebook(path: string): Promise<void> {
    await this.page.evaluate(async (p) => {
      const app = window.jupyterapp as unknown as App;
      for (const widget of app.shell.widgets("main")) {
        if (widget.context?.path === p) {
          await widget.context.save();
          widget.close();
        }
      }
    }, path);
  }

  /** Drags from the centre of `from` to a point of `to` given as fractions of its box, in small steps as a hand would. */
  async drag(from: Locator, to: Locator, fx: number, fy: number): Promise<void> {
    const page = this.page;
    const start = (await from.boundingBox())!;
    const target = (await to.boundingBox())!;
    const [x0, y0] = [start.x + start.width / 2, start.y + start.height / 2];
    await page.mouse.move(x0, y0);
    await page.mouse.down();
    await page.mouse.move(x0 + 12, y0 + 4, { steps: 4 });
    await page.mouse.move(target.x + target.width * fx, target.y + target.height * fy, { steps: 25 });
    await page.waitForTimeout(150);
    await page.mouse.up();
  }

  /** The main area as tab bars and their places, left to right then top to bottom. */
  async dockLayout(): Promise<TabBarPlace[]> {
    const bars = this.page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar");
    const layout: TabBarPlace[] = [];
    for (let i = 0; i < (await bars.count()); i++) {
      const bar = bars.nth(i);
      const box = (await bar.boundingBox())!;
      const round = (n: number): number => Math.round(n / 10) * 10;
      layout.push({ tabs: await bar.locator(".lm-TabBar-tabLabel").allTextContents(), x: round(box.x), y: round(box.y), width: round(box.width), height: round(box.height) });
    }
    return layout.sort((a, b) => a.x - b.x || a.y - b.y);
  }

  /** The live bar of computation `label` in a Progress panel. */
  computation(progress: Locator, label: string): Locator {
    return progress.locator(".tsdask-dashboard-computation").filter({ has: this.page.locator(".tsdask-dashboard-computation-label", { hasText: label }) });
  }

  /** Watches a running computation in a Progress panel until it finishes; returns the percentages seen. */
  async watchUntilFinished(bar: Locator): Promise<number[]> {
    // Attached is enough: a panel behind another tab updates all the same.
    await bar.waitFor({ state: "attached", timeout: 60_000 });
    await bar.evaluate((el) => el.setAttribute("data-test-first-render", "yes"));
    const seen: number[] = [];
    const deadline = Date.now() + 60_000;
    while ((await bar.getAttribute("data-state")) !== "finished") {
      assert.ok(Date.now() < deadline, `the computation did not finish on the panel; seen: ${seen.join(", ")}`);
      seen.push(Number(await bar.locator("[role=progressbar]").getAttribute("aria-valuenow")));
      await this.page.waitForTimeout(60);
    }
    assert.equal(await bar.getAttribute("data-test-first-render"), "yes", "the panel rebuilt the bar instead of patching it");
    return seen;
  }

  /** Asserts `panel` sits right of `notebook`, side by side, the same height, both readable. */
  async assertBeside(notebook: Locator, panel: Locator): Promise<void> {
    const [nb, box] = [(await notebook.boundingBox())!, (await panel.boundingBox())!];
    assert.ok(box.x >= nb.x + nb.width - 2, `the panel (x ${box.x}) is right of the notebook (ends at ${nb.x + nb.width})`);
    assert.ok(Math.abs(box.y - nb.y) < 40 && Math.abs(box.height - nb.height) < 40, "side by side, the same height");
    assert.ok(nb.width > 300 && box.width > 300, `both visible: notebook ${nb.width}px, panel ${box.width}px`);
  }
}
