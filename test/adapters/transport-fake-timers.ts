/**
 * Manual timers for transport/feed tests: time moves only when the test calls advance(), so
 * backoff delays and the silence watchdog are checked without any wall-clock assertion.
 */
import type { TransportTimers } from '../../adapters/shared/transport.js';

interface Entry {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

export class FakeTimers implements TransportTimers {
  private t = 1_700_000_000_000;
  private seq = 0;
  private queue: Entry[] = [];

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.queue.push({ id, at: this.t + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.queue = this.queue.filter((e) => e.id !== handle);
  }

  now(): number {
    return this.t;
  }

  /** Number of timers waiting. */
  get pending(): number {
    return this.queue.length;
  }

  /** Move time forward by `ms`, running every timer that falls due, in time order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.queue.filter((e) => e.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.queue = this.queue.filter((e) => e !== due);
      this.t = Math.max(this.t, due.at);
      due.fn();
    }
    this.t = end;
  }
}
