// The scheduler's queue of root tasks waiting for room on a worker: a binary min-heap of task
// slots ordered by their priority (a typed array the state owns), so a million queued tasks cost
// eight bytes each and every push or pop is O(log n). (Hand-written: a heap over numbers keyed by
// an external array is a dozen lines, where a library would box every entry.)

export class SlotHeap {
  private heap = new Int32Array(64);
  private count = 0;

  constructor(private readonly priorityOf: (slot: number) => number) {}

  get size(): number {
    return this.count;
  }

  push(slot: number): void {
    if (this.count === this.heap.length) {
      const grown = new Int32Array(this.heap.length * 2);
      grown.set(this.heap);
      this.heap = grown;
    }
    const heap = this.heap;
    const priority = this.priorityOf(slot);
    let at = this.count++;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.priorityOf(heap[parent]) <= priority) break;
      heap[at] = heap[parent];
      at = parent;
    }
    heap[at] = slot;
  }

  /** The slot with the lowest priority, without removing it; -1 when empty. */
  peek(): number {
    return this.count === 0 ? -1 : this.heap[0];
  }

  /** Removes and returns the slot with the lowest priority; -1 when empty. */
  pop(): number {
    if (this.count === 0) return -1;
    const heap = this.heap;
    const top = heap[0];
    const last = heap[--this.count];
    const priority = this.priorityOf(last);
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= this.count) break;
      if (child + 1 < this.count && this.priorityOf(heap[child + 1]) < this.priorityOf(heap[child])) child++;
      if (this.priorityOf(heap[child]) >= priority) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = last;
    return top;
  }

  clear(): void {
    this.count = 0;
  }
}
