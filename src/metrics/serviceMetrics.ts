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
 * Units follow the Prometheus naming guide: seconds, `_total` for counters.
 * Source: https://prometheus.io/docs/practices/naming/ and prom-client's README (Registry, collect()).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Subscription } from 'rxjs';
import type { FeedStats, MarketFeed } from '../domain/feeds.js';
import type { MarketCache } from '../cache/marketCache.js';
import { QUALITY_WARNING_PREFIX, type SurfaceSnapshot } from '../cache/snapshot.js';
import type { Clock } from '../domain/clock.js';
import { pairLabel } from '../domain/markets.js';
import type { KindCounts, PublisherStats } from '../kafka/publisher.js';
import type { CalibrationResult } from '../cache/snapshotBuilder.js';
import { FeedRates } from './feedRates.js';

/** What the metrics read from a Kafka publisher (src/kafka/publisher.ts KafkaPublisher). */
export interface PublisherLike {
  stats(): PublisherStats;
  /** Publish latencies in ms of the last acknowledged records, oldest first. */
  latencies(): number[];
}

/** Inputs of {@link ServiceMetrics}. */
/** What the metrics read of the history recorder (src/history/recorder.ts RecorderStats), at scrape time. */
export interface HistoryStatsLike {
  readonly surfaces: number;
  readonly fits: number;
  readonly curves: number;
  readonly ivSummary: number;
  readonly funding: number;
  readonly failedBatches: number;
  readonly droppedRows: number;
  /** Milliseconds the last flush took (its commit included). */
  readonly lastFlushMs: number;
}

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

/** Route label of requests that matched no route (404s): one series, whatever the URL. */
export const UNMATCHED_ROUTE = '<unmatched>';

/** Calibration duration buckets, seconds (a fit takes ~5 ms to ~2 s). */
const CALIBRATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** REST latency buckets, seconds. */
const HTTP_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Kafka publish latency buckets (cache update -> broker ack), seconds. */
const KAFKA_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** `2026-12-25` of an expiry (Unix seconds, UTC): the expiry label of per-expiry series. */
export function expiryLabel(expirationTimestamp: number): string {
  return new Date(expirationTimestamp * 1000).toISOString().slice(0, 10);
}

/**
 * A short, bounded label for why calibration left an expiry out (src/quant/chain/chainFit.ts `skipped[].reason`):
 * `fit-failed` (the model fit was rejected), `near-expiry`, `no-quotes`, or `other`.
 */
export function skipReasonLabel(reason: string): string {
  if (reason.startsWith('fit failed')) return 'fit-failed';
  if (reason.includes('within the hour')) return 'near-expiry';
  if (reason.includes('no usable')) return 'no-quotes';
  return 'other';
}

/** True when a slice's fit `method` text says an arbitrage (butterfly/calendar density) penalty repaired it. */
export function isRepairedFit(method: string): boolean {
  return /penalty/i.test(method) && !/penalty failed/i.test(method);
}

/**
 * The optional no-arbitrage status a snapshot may carry (src/cache/snapshot.ts SurfaceArbitrage, issue 4),
 * read structurally so that snapshots without it stay valid.
 */
interface ArbitrageCountsLike {
  readonly constrainedRefits?: number;
  readonly calendarRepaired?: number;
  readonly keptPrevious?: number;
  readonly dropped?: number;
  readonly rejected?: number;
}

/** Per-instance Prometheus metrics; see the module comment for the series and their sources. */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  private readonly calibrationDuration: Histogram<'source' | 'pair' | 'model'>;
  private readonly calibrations: Counter<'source' | 'pair' | 'kind'>;
  private readonly sliceFits: Counter<'source' | 'pair' | 'model' | 'outcome'>;
  private readonly repairs: Counter<'source' | 'pair' | 'model' | 'kind'>;
  private readonly rejections: Counter<'source' | 'pair' | 'model' | 'outcome'>;
  private readonly violations: Counter<'source' | 'pair' | 'model'>;
  private readonly qualityWarned: Gauge<'source' | 'pair' | 'model'>;
  private readonly qualityWarnings: Counter<'source' | 'pair' | 'model' | 'kind'>;
  private readonly skipped: Counter<'source' | 'pair' | 'reason'>;
  private readonly cacheUpdates: Counter<'type'>;
  private readonly rejected: Counter<'reason'>;
  private kafkaLatency: Histogram<string> | null = null;
  private readonly subscription: Subscription;
  /** Cumulative values already added to each counter, by series key. */
  private readonly seen = new Map<string, number>();
  readonly feedRates: FeedRates;
  private readonly clock: Clock;
  private readonly wallNowS: () => number;

  constructor(private readonly opts: ServiceMetricsOptions) {
    const registers = [this.registry];
    const { cache } = opts;
    this.clock = opts.clock ?? cache.clock;
    this.wallNowS = opts.wallNowS ?? (() => Date.now() / 1000);
    this.feedRates = opts.feedRates ?? new FeedRates();
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    const self = this;
    const feeds = (): FeedStats[] => opts.feeds().map((f) => f.stats());

    // ------------------------------------------------------------------ feeds
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
        for (const s of feeds()) self.addIncrease(this, `msg:${s.source}`, { source: s.source }, s.messages);
      },
    });
    new Gauge({
      name: 'volsurf_feed_messages_per_second',
      help: 'Exchange messages received per second over the last ~10 s (wall clock)',
      labelNames: ['source'],
      registers,
      collect() {
        for (const s of feeds()) {
          const r = self.feedRates.rate(s.source, s.messages, self.wallNowS());
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
        for (const s of feeds()) self.addIncrease(this, `rc:${s.source}`, { source: s.source }, s.reconnects);
      },
    });
    new Counter({
      name: 'volsurf_feed_dropped_messages_total',
      help: 'Exchange messages dropped (malformed, unknown channel, ...), by kind',
      labelNames: ['source', 'kind'],
      registers,
      collect() {
        for (const s of feeds()) {
          for (const [kind, n] of Object.entries(s.dropped)) self.addIncrease(this, `drop:${s.source}:${kind}`, { source: s.source, kind }, n);
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
        const now = self.wallNowS();
        for (const s of feeds()) if (s.lastMessageAt !== null) this.set({ source: s.source }, Math.max(0, now - s.lastMessageAt));
      },
    });
    new Gauge({
      name: 'volsurf_pair_data_age_seconds',
      help: 'Seconds since the newest market data of the (source, pair) on the service clock',
      labelNames: ['source', 'pair'],
      registers,
      collect() {
        this.reset();
        const now = self.clock.now();
        for (const p of cache.expected()) {
          const last = cache.lastDataAt(p.source, p.pair);
          if (last !== undefined) this.set({ source: p.source, pair: pairLabel(p.pair) }, Math.max(0, now - last));
        }
      },
    });
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

    // ------------------------------------------------------------------ calibration
    this.calibrationDuration = new Histogram({
      name: 'volsurf_calibration_duration_seconds',
      help: 'Wall-clock duration of one surface calibration, per (source, pair, model)',
      labelNames: ['source', 'pair', 'model'],
      buckets: CALIBRATION_BUCKETS,
      registers,
    });
    this.calibrations = new Counter({
      name: 'volsurf_calibrations_total',
      help: 'Chain recalibrations published, per (source, pair) and kind: regular (throttled, every changed expiry) or urgent (a mark moved by at least CALIBRATION_URGENT_VOL_PTS: only those expiries, at once)',
      labelNames: ['source', 'pair', 'kind'],
      registers,
    });
    this.sliceFits = new Counter({
      name: 'volsurf_slice_fits_total',
      help: 'Expiry slices per (source, pair, model) handled by the chain fits, by outcome: refitted (the model calibration ran), confirmed (a refit would move the served smile by less than the tracking tolerance, max(0.05 vol pt, 10 % of the half-spread): the last fit carried, no refit), deferred (an urgent partial fit left it for the next regular one); the refits of wing repairs under the next expiry are not counted',
      labelNames: ['source', 'pair', 'model', 'outcome'],
      registers,
    });
    const poolStats = opts.calibrationPool;
    if (poolStats) {
      new Counter({
        name: 'volsurf_calibration_yields_total',
        help: 'Regular incremental chain fits that yielded their calibration worker at a slice boundary to an urgent or reconnect fit queued behind them (asked again at once; the slices they refitted are kept)',
        registers,
        collect() {
          self.addIncrease(this, 'yields', {}, poolStats().yielded);
        },
      });
    }
    this.repairs = new Counter({
      name: 'volsurf_arbitrage_repairs_total',
      help: 'Expiry fits whose arbitrage was repaired before publication: kind constrained-refit (butterfly/calendar penalty refit) or calendar-envelope',
      labelNames: ['source', 'pair', 'model', 'kind'],
      registers,
    });
    this.rejections = new Counter({
      name: 'volsurf_arbitrage_rejections_total',
      help: 'Expiry fits rejected for arbitrage no refit removed: outcome kept-previous (the last good slice served) or dropped (expiry left out)',
      labelNames: ['source', 'pair', 'model', 'outcome'],
      registers,
    });
    this.violations = new Counter({
      name: 'volsurf_arbitrage_violations_total',
      help: 'Expiry fits published with a remaining butterfly violation (butterflyFree false, reported, not hidden)',
      labelNames: ['source', 'pair', 'model'],
      registers,
    });
    this.qualityWarned = new Gauge({
      name: 'volsurf_fit_quality_warned_expiries',
      help: 'Expiries of the newest surface whose served fit carries a quality warning (ATM error > 1 vol pt or an error > 3 vol pts within 25-delta, issue 11), whatever their RMSE',
      labelNames: ['source', 'pair', 'model'],
      registers,
    });
    this.qualityWarnings = new Counter({
      name: 'volsurf_fit_quality_warnings_total',
      help: 'Quality warnings of published expiry fits, by kind (atm: ATM error > 1 vol pt; delta25: error > 3 vol pts at a quote within 25-delta)',
      labelNames: ['source', 'pair', 'model', 'kind'],
      registers,
    });
    this.skipped = new Counter({
      name: 'volsurf_calibration_rejected_expiries_total',
      help: 'Expiries left out of a calibration, by reason (fit-failed = the fit was rejected; near-expiry; no-quotes)',
      labelNames: ['source', 'pair', 'reason'],
      registers,
    });
    this.cacheUpdates = new Counter({
      name: 'volsurf_cache_updates_total',
      help: 'Writes to the market cache, by type (surface, forwardCurve, funding)',
      labelNames: ['type'],
      registers,
    });
    const surfaceLabels = (s: SurfaceSnapshot) => ({ source: s.source, pair: pairLabel(s.pair), model: s.model });
    new Gauge({
      name: 'volsurf_fit_rmse_vol_points',
      help: 'RMSE of the fitted smile against the mark IVs of one expiry, vol points (0.01), of the cached surface',
      labelNames: ['source', 'pair', 'model', 'expiry'],
      registers,
      collect() {
        this.reset();
        for (const s of cache.allSurfaces()) for (const sl of s.slices) this.set({ ...surfaceLabels(s), expiry: expiryLabel(sl.expirationTimestamp) }, sl.fit.rmseVolPts);
      },
    });
    new Gauge({
      name: 'volsurf_fit_max_error_vol_points',
      help: 'Largest absolute error of the fitted smile against the mark IVs of one expiry, vol points',
      labelNames: ['source', 'pair', 'model', 'expiry'],
      registers,
      collect() {
        this.reset();
        for (const s of cache.allSurfaces()) for (const sl of s.slices) this.set({ ...surfaceLabels(s), expiry: expiryLabel(sl.expirationTimestamp) }, sl.fit.maxErrorVolPts);
      },
    });
    new Gauge({
      name: 'volsurf_surface_expiries',
      help: 'Expiries in the cached surface',
      labelNames: ['source', 'pair', 'model'],
      registers,
      collect() {
        this.reset();
        for (const s of cache.allSurfaces()) this.set(surfaceLabels(s), s.slices.length);
      },
    });
    new Gauge({
      name: 'volsurf_surface_sequence',
      help: 'Sequence number of the cached surface (increments with every recalibration)',
      labelNames: ['source', 'pair', 'model'],
      registers,
      collect() {
        this.reset();
        for (const s of cache.allSurfaces()) this.set(surfaceLabels(s), s.sequence);
      },
    });
    new Gauge({
      name: 'volsurf_snapshot_age_seconds',
      help: 'Age of the cached surface: service-clock now minus its observationTimestamp, seconds',
      labelNames: ['source', 'pair', 'model'],
      registers,
      collect() {
        this.reset();
        const now = self.clock.now();
        for (const s of cache.allSurfaces()) this.set(surfaceLabels(s), Math.max(0, now - s.observationTimestamp));
      },
    });
    new Gauge({
      name: 'volsurf_forward_curve_age_seconds',
      help: 'Age of the cached forward curve: service-clock now minus its observationTimestamp, seconds',
      labelNames: ['source', 'pair'],
      registers,
      collect() {
        this.reset();
        const now = self.clock.now();
        for (const p of cache.expected()) {
          const c = cache.getForwardCurve(p.source, p.pair);
          if (c) this.set({ source: p.source, pair: pairLabel(p.pair) }, Math.max(0, now - c.observationTimestamp));
        }
      },
    });

    // ------------------------------------------------------------------ REST
    this.httpDuration = new Histogram({
      name: 'volsurf_http_request_duration_seconds',
      help: `REST latency from request to response sent, per route pattern, method and status (${UNMATCHED_ROUTE}: no route)`,
      labelNames: ['method', 'route', 'status_code'],
      buckets: HTTP_BUCKETS,
      registers,
    });

    this.rejected = new Counter({
      name: 'volsurf_http_rejected_total',
      help: 'Requests refused by the protection layer (src/api/plugins/security.ts): unauthorized (401), rate-limited (429), overloaded (503)',
      labelNames: ['reason'],
      registers,
    });

    // ------------------------------------------------------------------ Kafka (publisher)
    // Only in a process that can publish (ROLE all/calibrator): an API replica has its own series (src/kafka/metrics.ts).
    if (opts.publisher) {
      const publisherStats = (): PublisherStats | null => opts.publisher?.()?.stats() ?? null;
      new Gauge({
        name: 'volsurf_kafka_connected',
        help: 'Whether the Kafka producer is connected with its topics ensured (absent when not publishing)',
        registers,
        collect() {
          this.reset();
          const s = publisherStats();
          if (s) this.set(s.connected ? 1 : 0);
        },
      });
      new Gauge({
        name: 'volsurf_kafka_queue_depth',
        help: 'Records waiting for a Kafka ack (in-flight batch included), by kind',
        labelNames: ['kind'],
        registers,
        collect() {
          this.reset();
          const s = publisherStats();
          if (s) for (const [kind, n] of Object.entries(s.pending as KindCounts)) this.set({ kind }, n);
        },
      });
      new Counter({
        name: 'volsurf_kafka_sent_total',
        help: 'Records acknowledged by the Kafka broker, by kind',
        labelNames: ['kind'],
        registers,
        collect() {
          const s = publisherStats();
          if (s) for (const [kind, n] of Object.entries(s.sent as KindCounts)) self.addIncrease(this, `ksent:${kind}`, { kind }, n);
        },
      });
      new Counter({
        name: 'volsurf_kafka_failures_total',
        help: 'Failed Kafka produce attempts (each retried)',
        registers,
        collect() {
          const s = publisherStats();
          if (s) self.addIncrease(this, 'kfail', {}, s.failures);
        },
      });
      new Counter({
        name: 'volsurf_kafka_conflated_total',
        help: 'Surface/curve updates replaced by a newer one of the same key before they were sent',
        registers,
        collect() {
          const s = publisherStats();
          if (s) self.addIncrease(this, 'kconf', {}, s.conflated);
        },
      });
      this.kafkaLatency = new Histogram({
        name: 'volsurf_kafka_publish_latency_seconds',
        help: 'Kafka publish latency: cache update to broker acknowledgement, per record',
        buckets: KAFKA_BUCKETS,
        registers,
        collect() {
          self.collectKafkaLatencies();
        },
      });
    }

    // ------------------------------------------------------------------ history store (src/history)
    if (opts.history) {
      const historyStats = (): HistoryStatsLike | null => opts.history?.() ?? null;
      new Counter({
        name: 'volsurf_history_rows_total',
        help: 'Rows the history store was given to write, by table (surfaces, fits, curves, iv_summary, funding)',
        labelNames: ['table'],
        registers,
        collect() {
          const s = historyStats();
          if (!s) return;
          const by = { surfaces: s.surfaces, fits: s.fits, curves: s.curves, iv_summary: s.ivSummary, funding: s.funding };
          for (const [table, n] of Object.entries(by)) self.addIncrease(this, `hrows:${table}`, { table }, n);
        },
      });
      new Counter({
        name: 'volsurf_history_failed_writes_total',
        help: 'History store writes that failed (their rows are kept and written again with the next flush)',
        registers,
        collect() {
          const s = historyStats();
          if (s) self.addIncrease(this, 'hfail', {}, s.failedBatches);
        },
      });
      new Counter({
        name: 'volsurf_history_dropped_rows_total',
        help: 'Rows dropped because the history store stayed unwritable past 2 million pending rows',
        registers,
        collect() {
          const s = historyStats();
          if (s) self.addIncrease(this, 'hdrop', {}, s.droppedRows);
        },
      });
      new Gauge({
        name: 'volsurf_history_last_flush_seconds',
        help: 'Duration of the last history write (one transaction per HISTORY_FLUSH_MS)',
        registers,
        collect() {
          this.reset();
          const s = historyStats();
          if (s) this.set(s.lastFlushMs / 1000);
        },
      });
    }

    this.subscription = cache.updates$.subscribe((u) => {
      this.cacheUpdates.inc({ type: u.type });
      if (u.type === 'surface') this.observeSurface(u.snapshot);
    });
  }

  /** Record one REST response: route pattern (or {@link UNMATCHED_ROUTE}), method, status, seconds. */
  observeHttp(method: string, route: string | undefined, statusCode: number, seconds: number): void {
    this.httpDuration.observe({ method, route: route ?? UNMATCHED_ROUTE, status_code: String(statusCode) }, seconds);
  }

  /** Record a request refused by the security plugin (its `onReject` hook): `unauthorized`, `rate-limited`, `overloaded`. */
  observeRejection(reason: string): void {
    this.rejected.inc({ reason });
  }

  /** Record one chain calibration (streams/pipeline.ts onCalibrated): expiries left out, by reason. */
  observeCalibration(r: CalibrationResult): void {
    const pair = pairLabel(r.pair);
    this.calibrations.inc({ source: r.source, pair, kind: r.partial ? 'urgent' : 'regular' });
    for (const [model, w] of Object.entries(r.sliceWork ?? {})) {
      if (!w) continue;
      this.sliceFits.inc({ source: r.source, pair, model, outcome: 'refitted' }, w.refitted);
      this.sliceFits.inc({ source: r.source, pair, model, outcome: 'confirmed' }, w.confirmed);
      this.sliceFits.inc({ source: r.source, pair, model, outcome: 'deferred' }, w.deferred);
    }
    for (const sk of r.skipped) this.skipped.inc({ source: r.source, pair, reason: skipReasonLabel(sk.reason) });
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

  private observeSurface(s: SurfaceSnapshot): void {
    const labels = { source: s.source, pair: pairLabel(s.pair), model: s.model };
    const key = `${labels.source}:${labels.pair}:${labels.model}`;
    this.calibrationDuration.observe(labels, s.calibrationMs / 1000);
    let violating = 0;
    for (const sl of s.slices) if (!sl.fit.butterflyFree) violating++;
    // inc(0) creates the series, so a scrape shows 0 rather than nothing
    this.violations.inc(labels, violating);
    let warned = 0;
    let atm = 0;
    let d25 = 0;
    for (const sl of s.slices) {
      const q = (sl.fit.warnings ?? []).filter((w) => w.startsWith(QUALITY_WARNING_PREFIX));
      if (q.length > 0) warned++;
      for (const w of q) {
        if (w.includes('ATM error')) atm++;
        else d25++;
      }
    }
    this.qualityWarned.set(labels, warned);
    this.qualityWarnings.inc({ ...labels, kind: 'atm' }, atm);
    this.qualityWarnings.inc({ ...labels, kind: 'delta25' }, d25);
    const counts = (s as SurfaceSnapshot & { arbitrage?: { counts?: ArbitrageCountsLike } }).arbitrage?.counts;
    if (counts) {
      // cumulative counts of the calibrator: add their increase
      this.addIncrease(this.repairs, `rep:${key}:refit`, { ...labels, kind: 'constrained-refit' }, counts.constrainedRefits ?? 0);
      this.addIncrease(this.repairs, `rep:${key}:cal`, { ...labels, kind: 'calendar-envelope' }, counts.calendarRepaired ?? 0);
      this.addIncrease(this.rejections, `rej:${key}:kept`, { ...labels, outcome: 'kept-previous' }, counts.keptPrevious ?? 0);
      this.addIncrease(this.rejections, `rej:${key}:drop`, { ...labels, outcome: 'dropped' }, counts.dropped ?? 0);
    } else {
      let repaired = 0;
      for (const sl of s.slices) if (isRepairedFit(sl.fit.method)) repaired++;
      this.repairs.inc({ ...labels, kind: 'constrained-refit' }, repaired);
      this.rejections.inc({ ...labels, outcome: 'kept-previous' }, 0);
      this.rejections.inc({ ...labels, outcome: 'dropped' }, 0);
    }
  }

  /** Add to `counter` the increase of a cumulative value since the last scrape (a decrease restarts the count). */
  private addIncrease(counter: Counter<string>, key: string, labels: Record<string, string>, cumulative: number): void {
    const prev = this.seen.get(key);
    const inc = prev === undefined || cumulative < prev ? cumulative : cumulative - prev;
    this.seen.set(key, cumulative);
    counter.inc(labels, inc);
  }

  /** Observe the latencies of the records acknowledged since the last scrape (the publisher keeps the last 10 000). */
  private collectKafkaLatencies(): void {
    const p = this.opts.publisher?.();
    if (!p) return;
    const s = p.stats();
    const acked = s.sent.surfaces + s.sent.forwardCurves + s.sent.funding + s.sent.history;
    const prev = this.seen.get('kacked') ?? 0;
    this.seen.set('kacked', acked);
    const fresh = acked - prev;
    if (fresh <= 0) return;
    const lat = p.latencies();
    for (const ms of lat.slice(Math.max(0, lat.length - fresh))) this.kafkaLatency?.observe(ms / 1000);
  }
}
