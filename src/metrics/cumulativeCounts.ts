/**
 * Cumulative values (a feed's messages, a publisher's sent records, the history recorder's rows) turned into
 * Prometheus counters: at each scrape a counter is given the increase since the previous one.
 */
import { Counter, type Registry } from 'prom-client';

/** The cumulative values already added to each counter, by series key (one key per series, over all the groups). */
export class CumulativeCounts {
  private readonly seen = new Map<string, number>();

  /** Add to `counter` the increase of a cumulative value since the last scrape (a decrease restarts the count). */
  add(counter: Counter<string>, key: string, labels: Record<string, string>, cumulative: number): void {
    const prev = this.seen.get(key);
    const inc = prev === undefined || cumulative < prev ? cumulative : cumulative - prev;
    this.seen.set(key, cumulative);
    counter.inc(labels, inc);
  }
}

/** The name, help text and series key of a {@link cumulativeCounter}. */
export interface CumulativeCounterSpec {
  readonly name: string;
  readonly help: string;
  /** The key of its series in the {@link CumulativeCounts}. */
  readonly key: string;
}

/**
 * Registers a counter without labels that follows one cumulative value, read at scrape time: it is given the
 * increase since the previous scrape, nothing while `read` gives null.
 */
export function cumulativeCounter(registry: Registry, counts: CumulativeCounts, spec: CumulativeCounterSpec, read: () => number | null): void {
  new Counter({
    name: spec.name,
    help: spec.help,
    registers: [registry],
    collect() {
      const n = read();
      if (n !== null) counts.add(this, spec.key, {}, n);
    },
  });
}
