// A small DOM helper the views share.

/** A new element of `tag` with `className`, appended to `parent` when given. */
export function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, parent?: Element): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent?.append(node);
  return node;
}
