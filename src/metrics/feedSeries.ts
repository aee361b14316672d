/**
 * The feed and pair-freshness series of {@link ServiceMetrics} (src/metrics/serviceMetrics.ts): each exchange
 * feed's `stats()` (src/domain/feeds.ts FeedStats) and the cache's data age and staleness per (source, pair), read
 * at scrape time.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { FeedStats, MarketFeed } from '../domain/feeds.js';
import type { MarketCache } from '../cache/marketCache.js';
import type { Clock } from '../domain/clock.js';
import { pairLabel, type SourcePair } from '../domain/markets.js';
import type { CumulativeCounts } from './cumulativeCounts.js';
import type { FeedRates } from './feedRates.js';

/** What the feed series read. */
export interface FeedSeriesInputs {
  /** The service's feeds (read at scrape time; may grow after construction). */
  readonly feeds: () => readonly MarketFeed[];
  readonly cache: MarketCache;
  /** Service clock (pair data ages). */
  readonly clock: Clock;
  /** Wall clock in Unix seconds (feed last-message ages, message rates). */
  readonly wallNowS: () => number;
  readonly feedRates: FeedRates;
  readonly counts: CumulativeCounts;
}

/** Registers the per-feed series: connected, messages (total and per second), reconnects, drops, last-message age. */
export function registerFeedSeries(registry: Registry, inputs: FeedSeriesInputs): void {
  const registers = [registry];
  const { feedRates, wallNowS, counts } = inputs;
  const feeds = (): FeedStats[] => inputs.feeds().map((f) => f.stats());
  new Gauge({
    name: 'volsurf_feed_connected',
    help: 'Whether the exchange feed is connected (1) or not (0)',
    labelNames: ['source'],
    registers,
    collect() {
      for (const s of feeds()) this.set({ source: s.source }, s.connected ? 1 : 0);
    },
  });
  new Counter({
    name: 'volsurf_feed_messages_total',
    help: 'Raw exchange messages received, per exchange (rate() gives messages/s)',
    labelNames: ['source'],
    registers,
    collect() {
      for (const s of feeds()) counts.add(this, `msg:${s.source}`, { source: s.source }, s.messages);
    },
  });
  new Gauge({
    name: 'volsurf_feed_messages_per_second',
    help: 'Exchange messages received per second over the last ~10 s (wall clock)',
    labelNames: ['source'],
    registers,
    collect() {
      for (const s of feeds()) {
        const r = feedRates.rate(s.source, s.messages, wallNowS());
        if (r !== null) this.set({ source: s.source }, r);
      }
    },
  });
  new Counter({
    name: 'volsurf_feed_reconnects_total',
    help: 'Completed reconnects of the exchange connection',
    labelNames: ['source'],
    registers,
    collect() {
      for (const s of feeds()) counts.add(this, `rc:${s.source}`, { source: s.source }, s.reconnects);
    },
  });
  new Counter({
    name: 'volsurf_feed_dropped_messages_total',
    help: 'Exchange messages dropped (malformed, unknown channel, ...), by kind',
    labelNames: ['source', 'kind'],
    registers,
    collect() {
      for (const s of feeds()) {
        for (const [kind, n] of Object.entries(s.dropped)) counts.add(this, `drop:${s.source}:${kind}`, { source: s.source, kind }, n);
      }
    },
  });
  new Gauge({
    name: 'volsurf_feed_last_message_age_seconds',
    help: 'Seconds since the last message of the exchange feed (wall clock); absent before the first message',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      const now = wallNowS();
      for (const s of feeds()) if (s.lastMessageAt !== null) this.set({ source: s.source }, Math.max(0, now - s.lastMessageAt));
    },
  });
}

/** Registers the per-(source, pair) freshness series: the newest data's age on the service clock, and the 503-stale flag. */
export function registerPairFreshnessSeries(registry: Registry, inputs: Pick<FeedSeriesInputs, 'cache' | 'clock'>): void {
  const registers = [registry];
  const { cache, clock } = inputs;
  const dataAge = { name: 'volsurf_pair_data_age_seconds', help: 'Seconds since the newest market data of the (source, pair) on the service clock' };
  registerPairAgeGauge(registry, { cache, clock }, dataAge, (p) => cache.lastDataAt(p.source, p.pair));
  new Gauge({
    name: 'volsurf_pair_stale',
    help: 'Whether the API answers 503 stale for the (source, pair): feed disconnected or data older than STALE_AFTER_S',
    labelNames: ['source', 'pair'],
    registers,
    collect() {
      this.reset();
      for (const p of cache.expected()) {
        const u = cache.unavailable(p.source, p.pair, null);
        this.set({ source: p.source, pair: pairLabel(p.pair) }, u?.reason === 'stale' ? 1 : 0);
      }
    },
  });
}

/**
 * Registers a gauge of an age per followed (source, pair): service-clock now minus the time `at` gives, never below 0;
 * no series for a pair where `at` gives undefined.
 */
export function registerPairAgeGauge(
  registry: Registry,
  inputs: Pick<FeedSeriesInputs, 'cache' | 'clock'>,
  spec: { readonly name: string; readonly help: string },
  at: (p: SourcePair) => number | undefined,
): void {
  const { cache, clock } = inputs;
  new Gauge({
    name: spec.name,
    help: spec.help,
    labelNames: ['source', 'pair'],
    registers: [registry],
    collect() {
      this.reset();
      const now = clock.now();
      for (const p of cache.expected()) {
        const t = at(p);
        if (t !== undefined) this.set({ source: p.source, pair: pairLabel(p.pair) }, Math.max(0, now - t));
      }
    },
  });
}
