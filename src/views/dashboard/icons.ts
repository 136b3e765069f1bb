// The dashboard's icons: 16×16 SVG, shapes in class "jp-icon3" so JupyterLab recolours them with
// its theme (the fill is the light theme's fallback, used by the standalone page).

const svg = (shapes: string): string =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><g class="jp-icon3" fill="#616161">${shapes}</g></svg>`;

export const ICONS = {
  /** The sidebar tab: three tasks and their dependencies. */
  tsdask: svg(
    '<circle cx="3.5" cy="3.5" r="2.2"/><circle cx="12.5" cy="3.5" r="2.2"/><circle cx="8" cy="12.5" r="2.2"/>' +
      '<path d="M4.6 5.4 7 10.6l1.3-.6-2.4-5.2zM11.4 5.4 9 10.6l-1.3-.6 2.4-5.2z"/>',
  ),
  fpm: svg('<rect x="1" y="2" width="14" height="2.6" rx=".5"/><rect x="1" y="6.7" width="9" height="2.6" rx=".5"/><rect x="1" y="11.4" width="5" height="2.6" rx=".5"/>'),
  taskStream: svg(
    '<rect x="1" y="2" width="6" height="2.4"/><rect x="8" y="2" width="7" height="2.4"/><rect x="2.5" y="6.8" width="8" height="2.4"/>' +
      '<rect x="11.5" y="6.8" width="3.5" height="2.4"/><rect x="1" y="11.6" width="4" height="2.4"/><rect x="6" y="11.6" width="6" height="2.4"/>',
  ),
  progress: svg('<path d="M1 5.5h14v5H1zm1 1v3h7.5v-3z" fill-rule="evenodd"/>'),
  workers: svg('<rect x="2" y="1.5" width="12" height="3.5" rx=".6"/><rect x="2" y="6.25" width="12" height="3.5" rx=".6"/><rect x="2" y="11" width="12" height="3.5" rx=".6"/>'),
  memory: svg(
    '<path d="M3 3h10v10H3zm1.5 1.5v7h7v-7z" fill-rule="evenodd"/><rect x="5.5" y="5.5" width="5" height="5"/>' +
      '<path d="M5 0.5h1.2V3H5zm2.4 0h1.2V3H7.4zm2.4 0H11V3H9.8zM5 13h1.2v2.5H5zm2.4 0h1.2v2.5H7.4zm2.4 0H11v2.5H9.8z"/>',
  ),
  bandwidth: svg('<path d="M1 5h10V2.5L15 6l-4 3.5V7H1zM15 11H5v2.5L1 10l4-3.5V9h10z"/>'),
  profile: svg('<rect x="1" y="12" width="14" height="2.5"/><rect x="1" y="8.75" width="9" height="2.5"/><rect x="10.5" y="8.75" width="4.5" height="2.5"/><rect x="1" y="5.5" width="6" height="2.5"/><rect x="2" y="2.25" width="3" height="2.5"/>'),
  memorySampler: svg('<path d="M1 14.5h14V13H2.5V1.5H1z"/><path d="m3.2 10.8 3-4 2.6 2.2 3.4-5.4 1.3.8-4.3 6.7-2.6-2.2-2.2 3z"/>'),
} as const;
