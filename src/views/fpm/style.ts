// The panel's stylesheet, added to the page once by the view itself: the same panel runs in
// JupyterLab (where --jp-* variables theme it) and in standalone pages (the fallbacks apply).

const CSS = `
.tsdask-fpm { color: var(--jp-ui-font-color1, #1f1f1f); font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 12px; }
.tsdask-fpm-controls { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: flex-start; margin-bottom: 6px; }
.tsdask-fpm-filter { display: flex; flex-wrap: wrap; align-items: center; gap: 4px; position: relative; }
.tsdask-fpm-filter-title { color: var(--jp-ui-font-color2, #555); }
.tsdask-fpm-chips { display: inline-flex; flex-wrap: wrap; gap: 4px; max-width: 420px; }
.tsdask-fpm-chips-empty { color: var(--jp-ui-font-color3, #888); font-style: italic; }
.tsdask-fpm-chip { display: inline-flex; align-items: center; gap: 2px; padding: 1px 2px 1px 7px; border-radius: 10px;
  background: var(--jp-layout-color2, #eee); border: 1px solid var(--jp-border-color2, #ddd); max-width: 260px; }
.tsdask-fpm-chip-text { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.tsdask-fpm-chip-remove { border: none; background: none; cursor: pointer; color: inherit; font-size: 13px; line-height: 1; padding: 0 4px; }
.tsdask-fpm-menu > summary { cursor: pointer; list-style: none; padding: 1px 8px; border: 1px solid var(--jp-border-color1, #bbb);
  border-radius: 3px; background: var(--jp-layout-color1, #fff); }
.tsdask-fpm-menu > summary::after { content: " ▾"; }
.tsdask-fpm-menu > summary::-webkit-details-marker { display: none; }
.tsdask-fpm-menu-list { position: absolute; z-index: 10; margin-top: 2px; padding: 6px; min-width: 220px; max-height: 280px; overflow: auto;
  background: var(--jp-layout-color1, #fff); border: 1px solid var(--jp-border-color1, #bbb); border-radius: 3px; box-shadow: 0 2px 8px rgba(0,0,0,.18); }
.tsdask-fpm-menu-search { width: 100%; box-sizing: border-box; margin-bottom: 4px; }
.tsdask-fpm-menu-item { display: flex; gap: 6px; align-items: center; padding: 2px 0; white-space: nowrap; cursor: pointer; }
.tsdask-fpm-unit-select { font: inherit; }
.tsdask-fpm-summary { color: var(--jp-ui-font-color2, #555); margin: 2px 0 8px; }
`;

const STYLE_ID = "tsdask-fpm-style";

export function addStylesheet(): void {
  if (document.getElementById(STYLE_ID) !== null) return;
  const style = document.createElement("style");
  style.id = STYLE_ID;
  style.textContent = CSS;
  document.head.append(style);
}
