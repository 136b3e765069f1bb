// A manual clock for unit tests of throttled senders: timers fire only when the test advances time.
import type { Clock } from "../../src/kernel/display/live";

export class FakeClock implements Clock {
  time = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;
  now(): number {
    return this.time;
  }
  setTimer(ms: number, fn: () => void): () => void {
    const id = this.nextId++;
    this.timers.push({ at: this.time + ms, fn, id });
    return () => {
      this.timers = this.timers.filter((timer) => timer.id !== id);
    };
  }
  nextTurn(): Promise<void> {
    return new Promise((resolve) => setImmediate(resolve));
  }
  get pendingTimers(): number {
    return this.timers.length;
  }
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((timer) => timer.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.time = due.at;
      due.fn();
    }
    this.time = end;
  }
}

