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

/**
 * A parent's children kept by key, for lists redrawn from each snapshot: a row is made once,
 * patched in place, moved only when the order changes and removed when its item is gone, so
 * hover, selection and scroll survive updates. The parent holds these rows only.
 */
export class KeyedRows<T, R extends { readonly node: Element }> {
  private readonly rows = new Map<string, R>();

  constructor(
    private readonly parent: Element,
    private readonly key: (item: T) => string,
    private readonly make: () => R,
  ) {}

  sync(items: readonly T[], update: (row: R, item: T) => void): void {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const key = this.key(item);
      seen.add(key);
      let row = this.rows.get(key);
      if (row === undefined) this.rows.set(key, (row = this.make()));
      update(row, item);
      if (this.parent.children[index] !== row.node) this.parent.insertBefore(row.node, this.parent.children[index] ?? null);
    });
    for (const [key, row] of this.rows) {
      if (!seen.has(key)) {
        row.node.remove();
        this.rows.delete(key);
      }
    }
  }
}
