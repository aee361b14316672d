/**
 * The in-memory cache between streams/ and the API: latest surface per (source, pair, model),
 * latest forward curve per (source, pair), funding history, and feed/pair freshness.
 *
 * Writers replace whole immutable snapshots; readers take one snapshot reference per request.
 * Freshness: a (source, pair) is `stale` when its feed is disconnected or its newest market data is
 * older than `staleAfterS` on the service clock (the replay clock in replay). A disconnect never
 * erases a value; it only makes the API say 503 with the reason and since when (decisions.md).
 *
 * Two additions for Kafka API replicas (docs/events.md "API replicas"):
 * - a *hold* ({@link MarketCache.setHold}): a process-wide reason not to answer at all yet (a replica that has not
 *   read its topics up to the end offsets it saw at start; a sharded calibrator that does not know its pairs yet);
 *   every `unavailable()` answers it and /ready reports it;
 * - *document freshness* ({@link MarketCache.judgeByDocumentTime}): staleness judged per document kind, a surface
 *   by its own (source, pair, model) `observationTimestamp`, a forward curve by its own, instead of by the newest
 *   market data of the pair (a replica sees documents, not market data: a fresh forward curve must not make an old
 *   surface look fresh).
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

/**
 * Seconds after its settlement by which a funding point is expected on a replica: the Deribit adapter fetches a
 * just-settled hour and retries 5 times 60 s apart (adapters/deribit/feed.ts), OKX and Bybit publish at settlement;
 * 15 min covers those retries and the publish path.
 */
export const FUNDING_GRACE_S = 900;

/** A process-wide reason to answer nothing yet (see {@link MarketCache.setHold}). */
export interface Hold {
  /** Short state for /ready, e.g. `catching-up`. */
  readonly status: string;
  /** Human sentence for /ready and every 503, e.g. `catching up with Kafka: 2 of 9 partitions behind ...`. */
  readonly message: string;
}

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
  private hold: (() => Hold | null) | null = null;
  private byDocumentTime = false;

  /**
   * @param clock the service clock (wall clock, or the replay clock)
   * @param staleAfterS data older than this is stale (STALE_AFTER_S)
   * @param expectedPairs the configured (source, pair)s; /ready waits for all of them
   * @param options `keepHistory: false` for a cache that answers one past instant (src/api/asOf.ts): surfaces put
   *   there are not summarized into {@link MarketCache.history}
   */
  constructor(
    readonly clock: Clock,
    readonly staleAfterS: number,
    private expectedPairs: ReadonlyArray<{ source: Source; pair: Pair }> = [],
    private readonly options: { readonly keepHistory?: boolean } = {},
  ) {}

  /**
   * Hold every answer while `check` returns a reason (null = serve normally); `null` removes the hold.
   * The reason's message is what /ready and every 503 say (e.g. "catching up with Kafka: ...").
   */
  setHold(check: (() => Hold | null) | null): void {
    this.hold = check;
  }

  /** The current hold, or null. */
  held(): Hold | null {
    return this.hold?.() ?? null;
  }

  /** Judge staleness per document kind (surface per model, forward curve) by its observationTimestamp (replicas). */
  judgeByDocumentTime(on: boolean): void {
    this.byDocumentTime = on;
  }

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
    if (this.options.keepHistory !== false) this.history.record(s);
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
    const held = this.held();
    if (held) return { reason: 'warming-up', message: held.message };
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
    const now = this.clock.now();
    if (this.byDocumentTime) {
      const observed = hasData.observationTimestamp;
      if (now - observed > this.staleAfterS) {
        const kind = model ? `${model} surface` : 'forward curve';
        return {
          reason: 'stale',
          sinceS: observed,
          message:
            `market data for ${label} is stale: ${kind} observed at ${new Date(observed * 1000).toISOString()}, ` +
            `${Math.round(now - observed)} s ago (limit ${this.staleAfterS} s)`,
        };
      }
      return null;
    }
    const last = this.lastDataAt(source, pair);
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

  /**
   * Why a funding-rate query of (source, instrumentId) up to `endS` (Unix s) cannot be answered now, or null:
   * the hold (a replica still catching up), or - when judging by document time (replicas) - a gap: the next point
   * after the newest one held (newest + the instrument's interval) should have arrived `FUNDING_GRACE_S` after it
   * settled, and the query's range reaches it. A query that ends before the gap is complete and answered.
   * Unknown instruments are left to the caller (404 / not connected).
   */
  fundingUnavailable(source: Source, instrumentId: string, endS: number): Unavailable | null {
    const held = this.held();
    if (held) return { reason: 'warming-up', message: held.message };
    if (!this.byDocumentTime) return null;
    const info = this.funding.instruments(source).find((i) => i.instrumentId === instrumentId);
    if (!info || info.lastTimestamp === null) return null;
    const next = info.lastTimestamp + info.intervalHours * 3600;
    const now = this.clock.now();
    if (endS >= next && now > next + FUNDING_GRACE_S) {
      return {
        reason: 'stale',
        sinceS: info.lastTimestamp,
        message:
          `funding rates of ${source} ${instrumentId} are stale: newest point settled at ${new Date(info.lastTimestamp * 1000).toISOString()}, ` +
          `the next (every ${info.intervalHours} h) is ${Math.round(now - next)} s overdue (grace ${FUNDING_GRACE_S} s)`,
      };
    }
    return null;
  }

  /** The expected (source, pair)s that have no calibrated surface of `model` yet. */
  missing(model: VolatilityModel = 'SVI'): Array<{ source: Source; pair: Pair }> {
    return this.expectedPairs.filter((p) => !this.getSurface(p.source, p.pair, model));
  }
}
