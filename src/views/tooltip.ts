// Tooltip contents for Vega marks. vega-tooltip writes its HTML with innerHTML and by default only
// escapes "&" and "<", and turns an `image` field into an <img> that fetches a URL. Task keys are
// untrusted text, so this formatter escapes every value fully and never emits markup from data.

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

function show(value: unknown): string {
  if (typeof value === "object" && value !== null) return escapeHtml(JSON.stringify(value));
  return escapeHtml(value);
}

/** A tooltip value is a scalar, or an object of field → value shown as a table (title on top). */
export function tooltipHtml(value: unknown): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return show(value);
  const { title, ...fields } = value as Record<string, unknown>;
  const heading = title === undefined ? "" : `<h2>${show(title)}</h2>`;
  const rows = Object.entries(fields)
    .filter(([, field]) => field !== undefined)
    .map(([key, field]) => `<tr><td class="key">${escapeHtml(key)}</td><td class="value">${show(field)}</td></tr>`)
    .join("");
  return `${heading}<table>${rows}</table>`;
}
