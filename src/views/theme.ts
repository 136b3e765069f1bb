// Plots follow JupyterLab's theme: the Vega config is read from the --jp-* CSS variables at embed
// time, so light, dark and third-party themes all apply; a theme switch triggers a re-embed.

import type { Config } from "vega-embed";

function cssVariable(name: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim();
}

export function isDarkTheme(): boolean {
  return document.body.dataset.jpThemeLight === "false";
}

/** Identifies the theme the current config was made for. */
export function themeKey(): string {
  return document.body.dataset.jpThemeName ?? "";
}

export function vegaConfig(): Config {
  const text = cssVariable("--jp-ui-font-color1");
  const muted = cssVariable("--jp-ui-font-color2");
  const border = cssVariable("--jp-border-color1");
  const grid = cssVariable("--jp-border-color2");
  const font = cssVariable("--jp-ui-font-family");
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
