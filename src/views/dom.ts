// Building view DOM: elements with a class, text set only through textContent (keys and labels
// from kernels are untrusted and never parsed as HTML).

export function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, parent?: Element): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent?.append(node);
  return node;
}

/** An element showing `content` as plain text. */
export function textElement<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, content: string, parent?: Element): HTMLElementTagNameMap[K] {
  const node = element(tag, className, parent);
  node.textContent = content;
  return node;
}
