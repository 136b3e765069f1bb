// Driving a JupyterLab page from the browser tests: open a notebook, wait for its kernel, run
// cells, find them, read colours. Works through the app object --LabApp.expose_app_in_browser puts
// on window, and the DOM as a user sees it.
import type { Locator, Page } from "playwright-core";

// The browser globals the page functions use. They are declared here rather than through the DOM
// lib, because the test build also compiles the Node library, whose types the DOM lib changes.
export interface PageElement {
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  closest(selector: string): PageElement | null;
  contains(other: PageElement | null): boolean;
  readonly textContent: string | null;
}
declare global {
  const document: {
    readonly body: { readonly dataset: Readonly<Record<string, string | undefined>> };
    querySelector(selector: string): PageElement | null;
    querySelectorAll(selector: string): ArrayLike<PageElement>;
    getElementById(id: string): PageElement | null;
    elementFromPoint(x: number, y: number): PageElement | null;
  };
  const window: LabWindow;
  function getComputedStyle(element: PageElement): Readonly<Record<"color" | "backgroundColor" | "fill", string>>;
}

/** What the page exposes with --LabApp.expose_app_in_browser (only the parts used here). */
export interface LabWindow {
  jupyterapp: {
    started: Promise<void>;
    restored: Promise<void>;
    commands: { execute(id: string, args?: object): Promise<unknown> };
    shell: { currentWidget: NotebookPanelLike | null };
  };
  __xss?: unknown;
}
interface NotebookPanelLike {
  context: { path: string; ready: Promise<void> };
  sessionContext: { ready: Promise<void>; session: { kernel: { status: string } | null } | null };
  content: { activeCellIndex: number; model: { cells: { get(i: number): { trusted: boolean } } } };
}

/** Opens JupyterLab and waits until its layout is restored. */
export async function openLab(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/lab?token=${token}`);
  await page.waitForFunction(() => window.jupyterapp !== undefined, undefined, { timeout: 60_000 });
  await page.evaluate(() => window.jupyterapp.restored);
}

export async function openNotebook(page: Page, path: string): Promise<void> {
  // Not awaited in the page: a notebook JupyterLab cannot open would hang the command, not fail it.
  await page.evaluate((p) => void window.jupyterapp.commands.execute("docmanager:open", { path: p }), path);
  await page.waitForFunction((p) => window.jupyterapp.shell.currentWidget?.context?.path === p, path, { timeout: 60_000 });
  await page.evaluate(() => window.jupyterapp.shell.currentWidget?.context.ready);
}

/**
 * Waits for the current notebook's kernel to report idle. The deadline is generous: beside another
 * test file on 2 cores, a kernel finishing the quick start's cells once took longer than 60 s.
 */
export async function waitForIdleKernel(page: Page): Promise<void> {
  await page.evaluate(() => window.jupyterapp.shell.currentWidget?.sessionContext.ready);
  await page.waitForFunction(
    () => window.jupyterapp.shell.currentWidget?.sessionContext.session?.kernel?.status === "idle",
    undefined,
    { timeout: 180_000 },
  );
}

/** Starts running one cell and returns at once, so the test can watch its outputs change. */
export async function startCell(page: Page, index: number): Promise<void> {
  await page.evaluate((i) => {
    const app = window.jupyterapp;
    const panel = app.shell.currentWidget;
    if (panel === null) throw new Error("no notebook is open");
    panel.content.activeCellIndex = i;
    void app.commands.execute("notebook:run-cell");
  }, index);
}

/** The `index`-th cell (markdown cells count) of the notebook in front. */
export function cell(page: Page, index: number): Locator {
  return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").nth(index);
}

/** Relative luminance of a CSS rgb() colour, 0 (black) to 1 (white). */
export function luminance(rgb: string): number {
  const [r = 0, g = 0, b = 0] = (rgb.match(/[\d.]+/g) ?? []).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

export const color = (locator: Locator, property: "color" | "backgroundColor" | "fill"): Promise<string> =>
  locator.evaluate((el, prop) => getComputedStyle(el)[prop], property);

/** Switches JupyterLab's theme and waits until the page says it is light or dark. */
export async function switchTheme(page: Page, theme: "JupyterLab Dark" | "JupyterLab Light"): Promise<void> {
  await page.evaluate(async (name) => void (await window.jupyterapp.commands.execute("apputils:change-theme", { theme: name })), theme);
  const light = theme === "JupyterLab Light" ? "true" : "false";
  await page.waitForFunction((value) => document.body.dataset.jpThemeLight === value, light, { timeout: 30_000 });
}
