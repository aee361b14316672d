import type { Logger } from '../../src/domain/logger.js';

/** What the drop counter needs of a logger. */
export type DropLogger = Pick<Logger, 'warn'>;

/**
 * Counts dropped exchange messages by kind and logs each kind once (the contract: "a malformed
 * exchange message is counted, logged once per kind, and dropped, never a crash").
 */

export class DropCounter {
  private readonly counts = new Map<string, number>();
  constructor(
    private readonly source: string,
    private readonly logger?: DropLogger,
  ) {}

  /** Count one dropped message of `kind`; the first of each kind is logged with its detail. */
  drop(kind: string, detail: string): void {
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    if (n === 1) this.logger?.warn({ source: this.source, kind, detail: detail.slice(0, 300) }, 'dropped exchange message (logged once per kind)');
  }

  /** Total dropped of all kinds. */
  total(): number {
    let t = 0;
    for (const v of this.counts.values()) t += v;
    return t;
  }

  /** Snapshot of the counts by kind. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }
}
