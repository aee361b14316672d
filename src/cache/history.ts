/**
 * The iVSummary figures of a calibrated surface, and a bounded in-memory 24 h history of them per
 * (source, pair, model), for the 24 h changes (`diff*` fields of GET iVSummary, interface-spec section 8).
 *
 * Summary of one snapshot ({@link summarizeSurface}): per listed (fitted) expiry, on the slice itself
 * (T = the slice's T, F = the expiry's forward), and per constant maturity 1W, 2W, 1M, 2M, 3M, 6M, 9M
 * (days of CONST_MAT_DAYS: 7, 14, 30, 61, 91, 183, 274; T = days/365, F from the forward curve, the smile from
 * the surface's interpolation in total variance), the figures of src/quant/smileFigures.ts: forward ATM vol,
 * 25/10-delta risk reversals and butterflies with the plain forward Black delta.
 *
 * History ({@link SurfaceHistory}): downsampled to at most one summary per `bucketS` (default 300 s) of
 * observation time per key (the first snapshot seen in each bucket), kept for `retentionS` (default 25 h) behind
 * the key's newest point, so memory is bounded: about 300 points of some 20 entries per key, keys bounded by the
 * pair table times the three models (and `maxKeys`). It is filled from three places: the cache's surface updates
 * (live calibrations, or a Kafka replica's documents), the Kafka `surface-history` topic at start-up
 * (src/kafka/history.ts `restoreSurfaceHistory` -> {@link SurfaceHistory.record}), and, in simulated mode,
 * the seeding from the simulator's own 24 h history (adapters/simulator/history.ts).
 *
 * 24 h change ({@link withDiffs}): current figure minus the figure of the history point NEAREST to
 * observationTimestamp - 24 h, provided it lies within {@link DIFF_TOLERANCE_S} (30 min) of that instant; listed
 * expiries are matched by expirationTimestamp (an expiry listed less than 24 h ago has no change), constant
 * maturities by label. Without such a point (a service up for less than 24 h without restored or seeded
 * history) every diff is null.
 */
import { CONST_MAT_DAYS } from '../quant/forwardCurve.js';
import { smileFigures } from '../quant/smileFigures.js';
import type { Pair, Source } from '../domain/markets.js';
import { surfaceKey, type ForwardCurveView, type IvSummary, type IvSummaryEntry, type SurfaceSnapshot, type SurfaceView, type VolatilityModel } from './snapshot.js';
import { SECONDS_PER_YEAR } from '../domain/time.js';

/** Constant maturities of the volatility summary (interface-spec "constMat (volatility summary)"). */
export const IV_SUMMARY_CONST_MATS = ['1W', '2W', '1M', '2M', '3M', '6M', '9M'] as const;
export type IvSummaryConstMat = (typeof IV_SUMMARY_CONST_MATS)[number];

/** The 24 h horizon of the diff fields, seconds. */
export const DIFF_HORIZON_S = 86400;
/** Largest distance between observationTimestamp - 24 h and the history point used, seconds. */
export const DIFF_TOLERANCE_S = 1800;

const SMALLEST_T = 1 / SECONDS_PER_YEAR;

export type { IvSummary, IvSummaryEntry };

const memo = new WeakMap<SurfaceSnapshot, IvSummary>();

/**
 * The iVSummary figures of a surface given by its parts (module docstring): the listed slices (expiry, T,
 * forward), the surface and forward curve, the observation time. Pure and deterministic.
 */
export function summarizeParts(
  observationTimestamp: number,
  slices: ReadonlyArray<{ readonly expirationTimestamp: number; readonly T: number; readonly forward: number }>,
  surface: SurfaceView,
  forwardCurve: ForwardCurveView,
): IvSummary {
  const obs = observationTimestamp;
  const listed = slices.map((s): IvSummaryEntry => {
    const T = Math.max(s.T, SMALLEST_T);
    return Object.freeze({ expirationTimestamp: s.expirationTimestamp, ...smileFigures((K) => surface.impliedVol(T, K, s.forward), s.forward, T) });
  });
  const constMat = IV_SUMMARY_CONST_MATS.map((label): IvSummaryEntry => {
    const days = CONST_MAT_DAYS[label];
    const T = days / 365;
    const F = forwardCurve.forward(T);
    return Object.freeze({ expirationTimestamp: obs + days * 86400, constMat: label, ...smileFigures((K) => surface.impliedVol(T, K, F), F, T) });
  });
  return Object.freeze({
    observationTimestamp: obs,
    listed: Object.freeze([...listed].sort((a, b) => a.expirationTimestamp - b.expirationTimestamp)),
    constMat: Object.freeze(constMat),
  });
}

/**
 * The iVSummary figures of a snapshot, computed by {@link summarizeParts} on first use and memoized per snapshot
 * object (snapshots are immutable). Computed where they are read (GET iVSummary, the dashboard, the 24 h history's
 * one point per bucket), not by the calibration worker for every recalibration: about 1 ms per BTC snapshot, which
 * was 15 % of an urgent refit and 6 % of the worker's time on the simulated default, for figures mostly never read.
 */
export function summarizeSurface(snap: SurfaceSnapshot): IvSummary {
  const hit = memo.get(snap);
  if (hit) return hit;
  const out = summarizeParts(snap.observationTimestamp, snap.slices, snap.surface, snap.forwardCurve);
  memo.set(snap, out);
  return out;
}

/** One entry with its 24 h changes (null when there is no reference point or no figure to compare). */
export interface IvSummaryEntryWithDiffs extends IvSummaryEntry {
  readonly diffAtmVol: number | null;
  readonly diffDelta10Skew: number | null;
  readonly diffDelta25Skew: number | null;
  readonly diffDelta10Bfly: number | null;
  readonly diffDelta25Bfly: number | null;
}

function diff(now: number | null, then: number | null | undefined): number | null {
  return now === null || then === null || then === undefined ? null : now - then;
}

function entryWithDiffs(e: IvSummaryEntry, past: IvSummaryEntry | undefined): IvSummaryEntryWithDiffs {
  return {
    ...e,
    diffAtmVol: diff(e.atmVol, past?.atmVol),
    diffDelta10Skew: diff(e.delta10Skew, past?.delta10Skew),
    diffDelta25Skew: diff(e.delta25Skew, past?.delta25Skew),
    diffDelta10Bfly: diff(e.delta10Bfly, past?.delta10Bfly),
    diffDelta25Bfly: diff(e.delta25Bfly, past?.delta25Bfly),
  };
}

/**
 * The current summary with the changes against `past` (the point nearest to 24 h ago, or null): listed entries
 * matched by expirationTimestamp, constant maturities by label; absolute differences current - past.
 */
export function withDiffs(current: IvSummary, past: IvSummary | null): { listed: IvSummaryEntryWithDiffs[]; constMat: IvSummaryEntryWithDiffs[] } {
  const pastListed = new Map((past?.listed ?? []).map((e) => [e.expirationTimestamp, e]));
  const pastConst = new Map((past?.constMat ?? []).map((e) => [e.constMat, e]));
  return {
    listed: current.listed.map((e) => entryWithDiffs(e, pastListed.get(e.expirationTimestamp))),
    constMat: current.constMat.map((e) => entryWithDiffs(e, pastConst.get(e.constMat))),
  };
}

/** Options of {@link SurfaceHistory}. */
export interface SurfaceHistoryOptions {
  /** Downsampling bucket, seconds of observation time: at most one point per bucket per key. Default 300. */
  readonly bucketS?: number;
  /** Points older than this many seconds behind the key's newest point are dropped. Default 25 h. */
  readonly retentionS?: number;
  /** At most this many keys (source, pair, model); points of further keys are ignored. Default 64. */
  readonly maxKeys?: number;
}

/**
 * Bounded, downsampled history of iVSummary figures per (source, pair, model) (module docstring). Points may
 * arrive in any order (live, restored from Kafka, seeded); each key's points are kept sorted by observation
 * time.
 */
export class SurfaceHistory {
  /** The downsampling bucket, seconds (one point per bucket per key: the first seen). */
  readonly bucketS: number;
  private readonly retentionS: number;
  private readonly maxKeys: number;
  private readonly byKey = new Map<string, IvSummary[]>();

  constructor(opts: SurfaceHistoryOptions = {}) {
    this.bucketS = opts.bucketS ?? 300;
    this.retentionS = opts.retentionS ?? 25 * 3600;
    this.maxKeys = opts.maxKeys ?? 64;
  }

  /**
   * Record a snapshot: its summary is computed and kept when no point of that key is held for its bucket.
   * @returns true when a point was added
   */
  record(snap: SurfaceSnapshot): boolean {
    if (snap.slices.length === 0) return false;
    const key = surfaceKey(snap.source, snap.pair, snap.model);
    if (!this.accepts(key, snap.observationTimestamp)) return false;
    return this.insert(key, summarizeSurface(snap));
  }

  /** Record an already computed summary (tests, tools). @returns true when a point was added */
  recordSummary(source: Source, pair: Pair, model: VolatilityModel, summary: IvSummary): boolean {
    const key = surfaceKey(source, pair, model);
    if (!this.accepts(key, summary.observationTimestamp)) return false;
    return this.insert(key, summary);
  }

  /**
   * The point nearest to `targetS` (Unix s) of the key, if within `toleranceS`; ties go to the earlier point.
   */
  nearest(source: Source, pair: Pair, model: VolatilityModel, targetS: number, toleranceS = DIFF_TOLERANCE_S): IvSummary | null {
    const pts = this.byKey.get(surfaceKey(source, pair, model));
    if (!pts || pts.length === 0) return null;
    const i = lowerBound(pts, targetS); // first point with obs >= target
    let best: IvSummary | null = null;
    for (const j of [i - 1, i]) {
      const p = pts[j];
      if (!p) continue;
      if (best === null || Math.abs(p.observationTimestamp - targetS) < Math.abs(best.observationTimestamp - targetS)) best = p;
    }
    return best && Math.abs(best.observationTimestamp - targetS) <= toleranceS ? best : null;
  }

  /** The reference point of the 24 h changes of a summary observed at `observationTimestamp`. */
  dayAgo(source: Source, pair: Pair, model: VolatilityModel, observationTimestamp: number): IvSummary | null {
    return this.nearest(source, pair, model, observationTimestamp - DIFF_HORIZON_S);
  }

  /** The points of a key, oldest first (a copy). */
  points(source: Source, pair: Pair, model: VolatilityModel): IvSummary[] {
    return [...(this.byKey.get(surfaceKey(source, pair, model)) ?? [])];
  }

  /** Total points held, all keys. */
  size(): number {
    let n = 0;
    for (const p of this.byKey.values()) n += p.length;
    return n;
  }

  private accepts(key: string, obs: number): boolean {
    if (!Number.isFinite(obs)) return false;
    const pts = this.byKey.get(key);
    if (!pts) return this.byKey.size < this.maxKeys;
    const newest = pts[pts.length - 1]!.observationTimestamp;
    if (obs < newest - this.retentionS) return false;
    const b = Math.floor(obs / this.bucketS);
    const i = lowerBound(pts, b * this.bucketS);
    const p = pts[i];
    return !(p && Math.floor(p.observationTimestamp / this.bucketS) === b);
  }

  private insert(key: string, s: IvSummary): boolean {
    let pts = this.byKey.get(key);
    if (!pts) {
      if (this.byKey.size >= this.maxKeys) return false;
      this.byKey.set(key, (pts = []));
    }
    pts.splice(lowerBound(pts, s.observationTimestamp), 0, s);
    const cutoff = pts[pts.length - 1]!.observationTimestamp - this.retentionS;
    let drop = 0;
    while (drop < pts.length && pts[drop]!.observationTimestamp < cutoff) drop++;
    if (drop > 0) pts.splice(0, drop);
    return true;
  }
}

/** Index of the first point with observationTimestamp >= t. */
function lowerBound(pts: readonly IvSummary[], t: number): number {
  let lo = 0;
  let hi = pts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (pts[mid]!.observationTimestamp < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

