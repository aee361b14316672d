/**
 * As-of answers (issue 24; docs/operations.md "History"): the `asOf` query parameter (Unix seconds, fractional
 * allowed) of every data endpoint makes the route answer from the surfaces, forward curve and funding that were
 * served at that time, read from the history store (src/history), instead of the live cache.
 *
 * {@link Markets.at} gives a route the MarketCache to read: the live one without `asOf`; with it, a cache holding
 * only what the request needs: for each, the latest PUBLISHED at or before `asOf` (src/history/reads.ts), rebuilt
 * with the calibrator's own constructors (src/kafka/rebuild.ts), on a clock standing at `asOf` (so "expiry in the
 * past" and every other rule are judged as they were then), judged stale by document time (served at `asOf` only when
 * observed at most STALE_AFTER_S before it, plus HISTORY_BUCKET_S beyond the full-resolution window: older, the service
 * answered 503 then). The answer is therefore the one the service gave then, number for number, and says which
 * surface it used (`sequence` where the answer has one, `observationTimestamp`). One difference stays: live, a
 * disconnected feed or a pair without fresh market data answers 503 even when its last surface is young; as of a
 * past time only the surface's own age counts.
 *
 * Errors: `asOf` later than the service clock: 400; no store (HISTORY_DIR=off, or it could not be opened): 404 that
 * says so; nothing served at `asOf` (before the kept range, a gap, or stale then): 404 that says which range is kept;
 * the store being rebuilt from Kafka (an API replica's start): 503.
 * Rebuilt surfaces are memoized twice (small LRUs): by key and `asOf` (repeated queries of one instant cost one
 * lookup), and by the stored surface itself (queries at different instants that the same surface served, e.g. a
 * book priced at several times within a second, cost one read of its row, fits and curve and one rebuild).
 */
import { MarketCache } from '../cache/marketCache.js';
import type { Clock } from '../domain/clock.js';
import type { Pair, Source } from '../domain/markets.js';
import type { ForwardCurveSnapshot, SurfaceSnapshot, VolatilityModel } from '../cache/snapshot.js';
import type { HistoryStore } from '../history/store.js';
import { curveAsOf, keptRange, surfaceById, surfaceIdAsOf } from '../history/reads.js';
import { forwardCurveFromMessage, surfaceFromMessage } from '../kafka/rebuild.js';
import { ApiError, badRequest } from './errors.js';

/** What a request reads: a surface of (source, pair, model), or the forward curve of (source, pair) when model is null. */
export interface Need {
  readonly source: Source;
  readonly pair: Pair;
  readonly model: VolatilityModel | null;
}

/** The history a process answers as-of queries from. */
export interface HistoryAccess {
  /** The open store, or null with the reason (HISTORY_DIR=off, or the open failed). */
  readonly store: HistoryStore | null;
  readonly reason?: string;
  /** Make sure what was published up to `asOf` is committed (the recorder flushes its pending batch when needed). */
  readonly sync?: (asOf: number) => Promise<void>;
  /**
   * How far before `asOf` a surface may have been published and still count as served then, seconds: STALE_AFTER_S
   * within the full-resolution window; beyond it, where one surface per HISTORY_BUCKET_S is kept, STALE_AFTER_S plus
   * the bucket (the answer is then the bucket's surface, which says its own observationTimestamp). Default
   * STALE_AFTER_S.
   */
  readonly lookbackS?: (asOf: number) => number;
  /** While it returns a reason (the store being rebuilt from Kafka), as-of answers are 503 with it. */
  readonly pending?: () => string | null;
}

const iso = (t: number): string => new Date(t * 1000).toISOString();
const MEMO_SIZE = 256;

/** A least-recently-used memo of promises; a promise that resolves to null or fails is forgotten (retried next time). */
class PromiseMemo<T> {
  private readonly map = new Map<string, Promise<T | null>>();
  constructor(private readonly size: number) {}

  get(key: string, make: () => Promise<T | null>): Promise<T | null> {
    let p = this.map.get(key);
    if (p) {
      this.map.delete(key);
      this.map.set(key, p);
      return p;
    }
    const made = make();
    this.map.set(key, made);
    // a miss is not kept (the instant may be committed a moment later); neither is a failure
    const forget = (): void => {
      if (this.map.get(key) === made) this.map.delete(key);
    };
    made.then((v) => (v === null ? forget() : undefined), forget);
    p = made;
    while (this.map.size > this.size) this.map.delete(this.map.keys().next().value!);
    return p;
  }
}

/** The markets routes read: live, or as of a past time. */
export class Markets {
  private readonly byInstant = new PromiseMemo<SurfaceSnapshot | ForwardCurveSnapshot>(MEMO_SIZE);
  private readonly bySurface = new PromiseMemo<SurfaceSnapshot>(MEMO_SIZE);

  /**
   * @param live the live cache
   * @param history the store (null: no as-of answers)
   */
  constructor(
    readonly live: MarketCache,
    readonly history: HistoryAccess = { store: null, reason: 'this process runs without a history store' },
  ) {}

  /** The clock rules are judged on: the live clock, or one standing at `asOf`. */
  clockAt(asOf: number | undefined): Clock {
    return asOf === undefined ? this.live.clock : { now: () => asOf };
  }

  /**
   * The store, after checking `asOf` against the service clock.
   * @throws ApiError 400 for an `asOf` later than now, 404 when there is no store
   */
  storeFor(asOf: number): HistoryStore {
    const now = this.live.clock.now();
    if (asOf > now) throw badRequest(`asOf ${iso(asOf)} is later than the service clock (${iso(now)})`, [{ path: 'asOf', message: 'Must not be in the future' }]);
    const store = this.history.store;
    if (!store) throw new ApiError(404, `no history to answer asOf from: ${this.history.reason ?? 'no store'}`);
    const pending = this.history.pending?.();
    if (pending) throw new ApiError(503, pending, undefined, { 'retry-after': '5' });
    return store;
  }

  /** A 404 naming what was not served at `asOf` and the kept range. */
  async notServed(store: HistoryStore, what: string, asOf: number, lookbackS: number): Promise<ApiError> {
    const range = await keptRange(store);
    const kept = range ? `history kept from ${iso(range.from)} to ${iso(range.to)}` : 'the history is empty';
    return new ApiError(404, `no ${what} was served at ${iso(asOf)} (none published in the ${lookbackS} s before it; ${kept})`);
  }

  /**
   * The cache to read for a request: the live one when `asOf` is undefined; else a cache holding the `needs` as
   * served at `asOf` (module docstring).
   * @throws ApiError 400 / 404 (module docstring)
   */
  async at(asOf: number | undefined, needs: readonly Need[]): Promise<MarketCache> {
    if (asOf === undefined) return this.live;
    const store = this.storeFor(asOf);
    await this.history.sync?.(asOf);
    const lookback = this.history.lookbackS?.(asOf) ?? this.live.staleAfterS;
    const cache = new MarketCache({ now: () => asOf }, lookback, this.live.expected(), { keepHistory: false });
    cache.judgeByDocumentTime(true);
    const seen = new Set<string>();
    for (const n of needs) {
      const key = `${n.source}:${n.pair.base}/${n.pair.quote}:${n.model ?? 'curve'}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (!this.live.isSourceConfigured(n.source)) continue; // the route's own rules answer "not connected"
      const snap = await this.load(store, n, asOf, lookback);
      const label = `${n.source} ${n.pair.base}/${n.pair.quote}`;
      if (!snap) throw await this.notServed(store, n.model ? `${n.model} surface of ${label}` : `forward curve of ${label}`, asOf, lookback);
      if ('model' in snap) cache.putSurface(snap);
      else cache.putForwardCurve(snap);
    }
    return cache;
  }

  private load(store: HistoryStore, n: Need, asOf: number, lookback: number): Promise<SurfaceSnapshot | ForwardCurveSnapshot | null> {
    const key = `${n.source}:${n.pair.base}/${n.pair.quote}:${n.model ?? 'curve'}`;
    const pair = `${n.pair.base}/${n.pair.quote}`;
    return this.byInstant.get(`${key}@${asOf}/${lookback}`, async () => {
      if (!n.model) {
        const m = await curveAsOf(store, { source: n.source, pair }, asOf, lookback);
        return m ? forwardCurveFromMessage(m) : null;
      }
      const ref = { source: n.source, pair, model: n.model };
      const id = await surfaceIdAsOf(store, ref, asOf, lookback);
      if (!id) return null;
      return this.bySurface.get(`${key}#${id.sequence}@${id.obs}`, async () => {
        const m = await surfaceById(store, ref, id);
        return m ? surfaceFromMessage(m) : null;
      });
    });
  }
}
