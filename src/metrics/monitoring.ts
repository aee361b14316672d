/**
 * The monitoring side of one running service: Prometheus metrics (ServiceMetrics), the per-feed message
 * rates shared by /metrics and the dashboard, the feed-status panel, and the start-up log lines. Created by
 * src/service.ts before the feeds start; handed to buildApp (src/api/app.ts), which serves /metrics and the
 * dashboard from it (src/api/plugins/monitoring.ts).
 */
import type { Observable } from 'rxjs';
import type { Registry } from 'prom-client';
import type { FeedStats, MarketFeed } from '../domain/feeds.js';
import type { MarketCache } from '../cache/marketCache.js';
import type { Clock } from '../domain/clock.js';
import type { MarketEvent } from '../domain/events.js';
import type { CalibrationResult } from '../cache/snapshotBuilder.js';
import { feedPanel, type FeedPanel, type MarketMode } from '../dashboard/state.js';
import { FeedRates } from './feedRates.js';
import { ServiceMetrics, type HistoryStatsLike, type PublisherLike } from './serviceMetrics.js';
import { attachStartupLog, logFeedsStarting, type StartupLog, type StartupLogger } from './startupLog.js';

/** Inputs of {@link Monitoring}. */
export interface MonitoringOptions {
  readonly cache: MarketCache;
  /** The service's feeds (the array may be filled after construction). */
  readonly feeds: readonly MarketFeed[];
  /** The Kafka publisher, when the service can publish (absent: no publisher series at all). */
  readonly publisher?: () => PublisherLike | null;
  /** Further prom-client registries exposed on /metrics (an API replica's own series). */
  readonly registries?: () => readonly Registry[];
  readonly clock?: Clock;
  /** Start-up log lines (connecting, instruments loaded, funding history, first surface per pair); none without a logger. */
  readonly logger?: StartupLogger;
  /** The merged market events (for the start-up log). */
  readonly events$?: Observable<MarketEvent>;
  /** Collect the Node.js process metrics (default true). */
  readonly defaultMetrics?: boolean;
  /** Wall clock, Unix seconds (tests). */
  readonly wallNowS?: () => number;
  /** How the service gets its data (the dashboard's status badge); default live. */
  readonly market?: () => MarketMode;
  /** The calibration pool's counters (ServiceMetricsOptions.calibrationPool); absent on an API replica. */
  readonly calibrationPool?: () => { readonly yielded: number };
  /** The history recorder's counters (ServiceMetricsOptions.history); absent: no history series. */
  readonly history?: () => HistoryStatsLike | null;
}

export class Monitoring {
  readonly metrics: ServiceMetrics;
  readonly feedRates = new FeedRates();
  readonly cache: MarketCache;
  private readonly startup: StartupLog | null;
  private readonly wallNowS: () => number;

  constructor(private readonly opts: MonitoringOptions) {
    this.cache = opts.cache;
    this.wallNowS = opts.wallNowS ?? (() => Date.now() / 1000);
    this.metrics = new ServiceMetrics({
      cache: opts.cache,
      feeds: () => opts.feeds,
      feedRates: this.feedRates,
      wallNowS: this.wallNowS,
      ...(opts.publisher ? { publisher: opts.publisher } : {}),
      ...(opts.registries ? { registries: opts.registries } : {}),
      ...(opts.calibrationPool ? { calibrationPool: opts.calibrationPool } : {}),
      ...(opts.history ? { history: opts.history } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.defaultMetrics !== undefined ? { defaultMetrics: opts.defaultMetrics } : {}),
    });
    this.startup = opts.logger && opts.events$ ? attachStartupLog(opts.events$, opts.logger, 500, opts.cache.updates$) : null;
  }

  /** Current stats of every feed. */
  feedStats(): FeedStats[] {
    return this.opts.feeds.map((f) => f.stats());
  }

  /** The dashboard's feed-status panel now. */
  feedPanel(): FeedPanel[] {
    return feedPanel(this.cache, this.feedStats(), this.feedRates, this.wallNowS());
  }

  /** How the service gets its data now (live, simulated, replay, replica). */
  market(): MarketMode {
    return this.opts.market?.() ?? { mode: 'live' };
  }

  /** Wall-clock Unix seconds now. */
  now(): number {
    return this.wallNowS();
  }

  /** Log the feeds about to start (call right before `feed.start()`). */
  feedsStarting(): void {
    if (this.opts.logger) logFeedsStarting(this.opts.logger, this.opts.feeds.map((f) => f.source), this.cache.expected());
  }

  /** streams/pipeline.ts onCalibrated: metrics of one chain calibration. */
  observeCalibration(r: CalibrationResult): void {
    this.metrics.observeCalibration(r);
  }

  /** Stop listening to the cache and the events. */
  close(): void {
    this.metrics.close();
    this.startup?.close();
  }
}
