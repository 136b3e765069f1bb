// Plots follow JupyterLab's theme: the Vega config is read from the --jp-* CSS variables at embed
// time, so light, dark and third-party themes all apply; a theme switch triggers a re-embed.

import type { Config } from "vega-embed";

/** A --jp-* variable's value, or `fallback` outside JupyterLab (a standalone page) where it is unset. */
function cssVariable(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

export function isDarkTheme(): boolean {
  return document.body.dataset.jpThemeLight === "false";
}

/** Identifies the theme the current config was made for. */
export function themeKey(): string {
  return document.body.dataset.jpThemeName ?? "";
}

export function vegaConfig(): Config {
  const text = cssVariable("--jp-ui-font-color1", "#1f1f1f");
  const muted = cssVariable("--jp-ui-font-color2", "#555");
  const border = cssVariable("--jp-border-color1", "#bbb");
  const grid = cssVariable("--jp-border-color2", "#e0e0e0");
  const font = cssVariable("--jp-ui-font-family", "system-ui, sans-serif");
  const label = { labelColor: muted, titleColor: text, labelFont: font, titleFont: font };
  return {
    background: "transparent",
    font,
    title: { color: text, subtitleColor: muted, font },
    axis: { ...label, domainColor: border, tickColor: border, gridColor: grid },
    legend: label,
    header: label,
    view: { stroke: grid },
  };
}

/** Starts calling `onChange` whenever JupyterLab switches theme; returns the disconnect function. */
export function watchTheme(onChange: () => void): () => void {
  const observer = new MutationObserver(onChange);
  observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"] });
  return () => observer.disconnect();
}
