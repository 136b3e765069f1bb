// Styles of the views that come without the extension's stylesheet (standalone pages, reports):
// each view adds its own CSS to the document once.

export function addStyle(id: string, css: string): void {
  if (document.getElementById(id) !== null) return;
  const style = document.createElement("style");
  style.id = id;
  style.textContent = css;
  document.head.append(style);
}
