/**
 * The in-memory cache between streams/ and the API: latest surface per (source, pair, model),
 * latest forward curve per (source, pair), funding history, and feed/pair freshness.
 *
 * Writers replace whole immutable snapshots; readers take one snapshot reference per request.
 * Freshness: a (source, pair) is `stale` when its feed is disconnected or its newest market data is
 * older than `staleAfterS` on the service clock (the replay clock in replay). A disconnect never
 * erases a value; it only makes the API say 503 with the reason and since when (decisions.md).
 */
import { Subject } from 'rxjs';
import type { Clock } from '../domain/clock.js';
import { pairKey, type Pair, type Source } from '../domain/markets.js';
import { FundingStore, type FundingPoint } from './fundingStore.js';
import type { FundingRate } from '../domain/events.js';
import { surfaceKey, type ForwardCurveSnapshot, type SurfaceSnapshot, type VolatilityModel } from './snapshot.js';
import { SurfaceHistory } from './history.js';

/** A cache update, for publishers and the live dashboard. */
export type CacheUpdate =
  | { readonly type: 'surface'; readonly snapshot: SurfaceSnapshot }
  | { readonly type: 'forwardCurve'; readonly snapshot: ForwardCurveSnapshot }
  | { readonly type: 'funding'; readonly point: FundingRate };

/** Why a (source, pair) cannot be served now. */
export type Unavailable =
  | { readonly reason: 'not-connected'; readonly message: string }
  | { readonly reason: 'warming-up'; readonly message: string }
  | { readonly reason: 'stale'; readonly message: string; readonly sinceS: number };

interface FeedState {
  connected: boolean;
  /** Service-clock seconds of the last connect/disconnect. */
  since: number;
}

export class MarketCache {
  private readonly surfaces = new Map<string, SurfaceSnapshot>();
  private readonly curves = new Map<string, ForwardCurveSnapshot>();
  private readonly lastData = new Map<string, number>();
  private readonly feeds = new Map<Source, FeedState>();
  readonly funding = new FundingStore();
  /** 24 h of iVSummary figures of every surface put here (the iVSummary route's 24 h changes; Kafka restore and the
   * simulated history write older points into it too). */
  readonly history = new SurfaceHistory();
  /** Every write, in order. */
  readonly updates$ = new Subject<CacheUpdate>();

  /**
   * @param clock the service clock (wall clock, or the replay clock)
   * @param staleAfterS data older than this is stale (STALE_AFTER_S)
   * @param expectedPairs the configured (source, pair)s; /ready waits for all of them
   */
  constructor(
    readonly clock: Clock,
    readonly staleAfterS: number,
    private expectedPairs: ReadonlyArray<{ source: Source; pair: Pair }> = [],
  ) {}

  /** Replace the set of (source, pair)s that readiness waits for. */
  setExpectedPairs(pairs: ReadonlyArray<{ source: Source; pair: Pair }>): void {
    this.expectedPairs = pairs;
  }

  /** The configured (source, pair)s. */
  expected(): ReadonlyArray<{ source: Source; pair: Pair }> {
    return this.expectedPairs;
  }

  /** Whether `source` is configured at all (some pair expected). */
  isSourceConfigured(source: Source): boolean {
    return this.expectedPairs.some((p) => p.source === source);
  }

  putSurface(s: SurfaceSnapshot): void {
    this.surfaces.set(surfaceKey(s.source, s.pair, s.model), s);
    this.history.record(s);
    this.updates$.next({ type: 'surface', snapshot: s });
  }

  getSurface(source: Source, pair: Pair, model: VolatilityModel): SurfaceSnapshot | undefined {
    return this.surfaces.get(surfaceKey(source, pair, model));
  }

  /** Every surface held, in insertion order. */
  allSurfaces(): SurfaceSnapshot[] {
    return [...this.surfaces.values()];
  }

  putForwardCurve(c: ForwardCurveSnapshot): void {
    this.curves.set(pairKey(c.source, c.pair), c);
    this.updates$.next({ type: 'forwardCurve', snapshot: c });
  }

  getForwardCurve(source: Source, pair: Pair): ForwardCurveSnapshot | undefined {
    return this.curves.get(pairKey(source, pair));
  }

  /** Add a funding point; emits an update only for a point not held before. */
  addFunding(p: FundingRate): boolean {
    const isNew = this.funding.add(p);
    if (isNew) this.updates$.next({ type: 'funding', point: p });
    return isNew;
  }

  /** Funding points in [startS, endS], newest first, at most `limit`. */
  fundingRange(source: Source, instrumentId: string, startS: number, endS: number, limit: number): FundingPoint[] {
    return this.funding.range(source, instrumentId, startS, endS, limit);
  }

  /** Record that market data of (source, pair) arrived, at service-clock seconds `atS`. */
  touch(source: Source, pair: Pair, atS: number): void {
    const key = pairKey(source, pair);
    const prev = this.lastData.get(key);
    if (prev === undefined || atS > prev) this.lastData.set(key, atS);
  }

  /** Service-clock seconds of the newest market data of (source, pair); undefined before any. */
  lastDataAt(source: Source, pair: Pair): number | undefined {
    return this.lastData.get(pairKey(source, pair));
  }

  /** Record a feed's connection state. */
  setFeedConnected(source: Source, connected: boolean): void {
    const prev = this.feeds.get(source);
    if (prev && prev.connected === connected) return;
    this.feeds.set(source, { connected, since: this.clock.now() });
  }

  /** Connection state of a feed; undefined when it never reported. */
  feedState(source: Source): Readonly<FeedState> | undefined {
    return this.feeds.get(source);
  }

  /**
   * Why (source, pair) cannot be served now, or null when it can: not connected (source not
   * configured), warming up (no calibrated surface of `model` yet), or stale (feed disconnected,
   * or newest data older than staleAfterS).
   */
  unavailable(source: Source, pair: Pair, model: VolatilityModel | null): Unavailable | null {
    const label = `${source} ${pair.base}/${pair.quote}`;
    if (!this.isSourceConfigured(source)) {
      return { reason: 'not-connected', message: `source ${source} is not connected in this deployment` };
    }
    const hasData = model ? this.getSurface(source, pair, model) : this.getForwardCurve(source, pair);
    if (!hasData) {
      return { reason: 'warming-up', message: `no calibrated market data yet for ${label}${model ? ` (${model})` : ''}: warming up` };
    }
    const feed = this.feeds.get(source);
    if (feed && !feed.connected) {
      return {
        reason: 'stale',
        sinceS: feed.since,
        message: `market data for ${label} is stale: ${source} feed disconnected since ${new Date(feed.since * 1000).toISOString()}`,
      };
    }
    const last = this.lastDataAt(source, pair);
    const now = this.clock.now();
    if (last === undefined || now - last > this.staleAfterS) {
      const since = last ?? 0;
      return {
        reason: 'stale',
        sinceS: since,
        message: `market data for ${label} is stale: no update since ${new Date(since * 1000).toISOString()} (limit ${this.staleAfterS} s)`,
      };
    }
    return null;
  }

  /** The expected (source, pair)s that have no calibrated surface of `model` yet. */
  missing(model: VolatilityModel = 'SVI'): Array<{ source: Source; pair: Pair }> {
    return this.expectedPairs.filter((p) => !this.getSurface(p.source, p.pair, model));
  }
}
