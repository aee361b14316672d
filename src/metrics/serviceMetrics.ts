/**
 * Prometheus metrics of one running service (GET /metrics), on a prom-client Registry of its own so that
 * several services in one process (the tests) never share a series.
 *
 * Where each number comes from:
 * - feeds: `MarketFeed.stats()` (src/domain/feeds.ts FeedStats), read at scrape time. The cumulative counters
 *   (messages, reconnects, drops by kind) are turned into Prometheus counters by adding the increase since the
 *   previous scrape; `volsurf_feed_messages_per_second` is the rate over the last ~10 s ({@link FeedRates});
 * - calibration: every surface written to the cache (`MarketCache.updates$`, all models, also surfaces a
 *   Kafka replica receives) observes `calibrationMs` in the duration histogram. Arbitrage repairs and
 *   rejections come from the snapshot's cumulative `arbitrage.counts` (src/quant/chain/chainFit.ts, issue 4:
 *   constrained refits and calendar-envelope repairs; rejected fits that kept the previous slice or dropped the
 *   expiry) when the snapshot carries them; without them (older calibrators, hand-built snapshots) a repair is
 *   a slice whose fit `method` says a penalty was applied and no rejection is counted. Published violations are
 *   slices with `butterflyFree: false`. {@link ServiceMetrics.observeCalibration} (streams/pipeline.ts
 *   `onCalibrated`) counts the expiries a calibration left out, by reason;
 * - the cache at scrape time: per-expiry fit RMSE and max error (vol points), snapshot age on the service
 *   clock, sequence numbers, data age and staleness per (source, pair);
 * - REST: a fastify onResponse hook ({@link ServiceMetrics.observeHttp}, src/api/plugins/metrics.ts);
 * - Kafka: `KafkaPublisher.stats()` (queue depth per kind, sent, failures, conflated) and the publish
 *   latencies of the records acknowledged since the previous scrape (`latencies()`, cache update -> broker ack);
 * - process: prom-client's default Node.js metrics (CPU, memory, event loop lag, GC).
 * The series are registered per concern, in this order: feeds (./feedSeries.ts), calibration (./calibrationSeries.ts),
 * the cache (./cacheSeries.ts), REST (./httpSeries.ts), Kafka (./kafkaSeries.ts), history store (./historySeries.ts).
 * Units follow the Prometheus naming guide: seconds, `_total` for counters.
 * Source: https://prometheus.io/docs/practices/naming/ and prom-client's README (Registry, collect()).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Subscription } from 'rxjs';
import type { MarketFeed } from '../domain/feeds.js';
import type { MarketCache } from '../cache/marketCache.js';
import type { Clock } from '../domain/clock.js';
import type { CalibrationResult } from '../cache/snapshotBuilder.js';
import { FeedRates } from './feedRates.js';
import { CumulativeCounts } from './cumulativeCounts.js';
import { registerFeedSeries, registerPairFreshnessSeries } from './feedSeries.js';
import { CalibrationSeries } from './calibrationSeries.js';
import { CacheSeries } from './cacheSeries.js';
import { HttpSeries } from './httpSeries.js';
import { registerKafkaPublisherSeries, type PublisherLike } from './kafkaSeries.js';
import { registerHistorySeries, type HistoryStatsLike } from './historySeries.js';

export { isRepairedFit, skipReasonLabel } from './calibrationSeries.js';
export { expiryLabel } from './cacheSeries.js';
export { UNMATCHED_ROUTE } from './httpSeries.js';
export type { PublisherLike } from './kafkaSeries.js';
export type { HistoryStatsLike } from './historySeries.js';

/** Inputs of {@link ServiceMetrics}. */
export interface ServiceMetricsOptions {
  /** The history recorder's counters, or null without a store; absent: no volsurf_history_* series. */
  readonly history?: () => HistoryStatsLike | null;
  readonly cache: MarketCache;
  /** The service's feeds (read at scrape time; may grow after construction). */
  readonly feeds: () => readonly MarketFeed[];
  /**
   * The Kafka publisher, or null when the service does not publish now. Absent: the volsurf_kafka_* publisher
   * series are not declared at all (an API replica, which never publishes).
   */
  readonly publisher?: () => PublisherLike | null;
  /** Service clock (snapshot ages); defaults to the cache's. */
  readonly clock?: Clock;
  /** Wall clock in Unix seconds (feed last-message ages); default Date.now()/1000. */
  readonly wallNowS?: () => number;
  /** Collect prom-client's default process metrics (default true). */
  readonly defaultMetrics?: boolean;
  /** Shared per-source message-rate tracker (the dashboard uses the same one). */
  readonly feedRates?: FeedRates;
  /** Further registries exposed after this one (an API replica's own series, src/kafka/metrics.ts). */
  readonly registries?: () => readonly Registry[];
  /**
   * The calibration pool's counters (streams/calibrationPool.ts PoolStats), read at scrape time. Absent: the
   * volsurf_calibration_yields_total series is not declared (an API replica fits nothing).
   */
  readonly calibrationPool?: () => { readonly yielded: number };
}

/** Per-instance Prometheus metrics; see the module comment for the series and their sources. */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly calibration: CalibrationSeries;
  private readonly cacheSeries: CacheSeries;
  private readonly http: HttpSeries;
  private readonly subscription: Subscription;
  readonly feedRates: FeedRates;

  constructor(private readonly opts: ServiceMetricsOptions) {
    const { cache } = opts;
    const clock = opts.clock ?? cache.clock;
    const wallNowS = opts.wallNowS ?? (() => Date.now() / 1000);
    this.feedRates = opts.feedRates ?? new FeedRates();
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    const counts = new CumulativeCounts();
    registerFeedSeries(this.registry, { feeds: opts.feeds, cache, clock, wallNowS, feedRates: this.feedRates, counts });
    registerPairFreshnessSeries(this.registry, { cache, clock });
    this.calibration = new CalibrationSeries(this.registry, counts, opts.calibrationPool);
    this.cacheSeries = new CacheSeries(this.registry, cache, clock);
    this.http = new HttpSeries(this.registry);
    // Only in a process that can publish (ROLE all/calibrator): an API replica has its own series (src/kafka/metrics.ts).
    if (opts.publisher) registerKafkaPublisherSeries(this.registry, opts.publisher, counts);
    if (opts.history) registerHistorySeries(this.registry, opts.history, counts);
    this.subscription = cache.updates$.subscribe((u) => {
      this.cacheSeries.observeUpdate(u.type);
      if (u.type === 'surface') this.calibration.observeSurface(u.snapshot);
    });
  }

  /** Record one REST response: route pattern (or {@link UNMATCHED_ROUTE}), method, status, seconds. */
  observeHttp(method: string, route: string | undefined, statusCode: number, seconds: number): void {
    this.http.observe(method, route, statusCode, seconds);
  }

  /** Record a request refused by the security plugin (its `onReject` hook): `unauthorized`, `rate-limited`, `overloaded`. */
  observeRejection(reason: string): void {
    this.http.observeRejection(reason);
  }

  /** Record one chain calibration (streams/pipeline.ts onCalibrated): expiries left out, by reason. */
  observeCalibration(r: CalibrationResult): void {
    this.calibration.observeCalibration(r);
  }

  /** Prometheus text exposition of every series (this registry, then each of `opts.registries`). */
  async metrics(): Promise<string> {
    const parts = [await this.registry.metrics()];
    for (const r of this.opts.registries?.() ?? []) parts.push(await r.metrics());
    return parts.filter((p) => p.length > 0).join('\n');
  }

  /** Content-Type of {@link metrics}. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stop listening to the cache. */
  close(): void {
    this.subscription.unsubscribe();
  }
}
