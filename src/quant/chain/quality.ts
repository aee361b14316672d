/**
 * The quality figures of served slices, measured on the SERVED surface of one model (what the API sells): RMSE and
 * largest error against the marks, the 10-delta RMSE, the reference gap, the ATM and 25-delta errors, and the quality
 * warnings of issue 11 item 3. Vol points (0.01 of implied vol) throughout. chainFit.ts fills them in after the
 * calendar pass.
 */
import { QUALITY_WARNING_PREFIX, type ExpirySlice, type FitDiagnostics } from '../../domain/chainFit.js';
import { normCdf } from '../normal.js';
import { deltaStrike } from '../smileFigures.js';
import type { VolSurface } from '../surface.js';
import type { EligibleGroup } from './expiryGroups.js';

/**
 * Mutable slice under construction by a chain fit, with the model's typed parameters `P` (opaque to the chain fit;
 * written in their stored form when the slices are served, and frozen later by src/cache/snapshotBuilder.ts
 * buildSnapshots).
 */
export type DraftSlice<P> = Omit<ExpirySlice, 'fit' | 'params'> & { params: P; fit: { -readonly [K in keyof FitDiagnostics]: FitDiagnostics[K] } };

/** Quality warnings (issue 11 item 3): served ATM error above this many vol points... */
export const WARN_ATM_VOL_PTS = 1;
/** ...or a served error above this many vol points at a quote between the 25-delta strikes. */
export const WARN_25D_VOL_PTS = 3;

/**
 * Fit of the served smile over the quotes between its own 10-delta strikes (plain forward Black call delta
 * 0.90 and 0.10, the range of the iVSummary pillars): RMSE in vol points (null without such quotes) and count.
 */
export function within10Delta(surface: VolSurface, s: Pick<ExpirySlice, 'T' | 'forward' | 'quotes'>): { rmse: number | null; quotes: number } {
  const volAt = (K: number): number => surface.impliedVol(s.T, K, s.forward);
  // the two 10-delta strikes only (not the 25-delta ones: half the root searches)
  const lo = deltaStrike(volAt, s.forward, s.T, 0.9) ?? 0;
  const hi = deltaStrike(volAt, s.forward, s.T, 0.1) ?? Number.POSITIVE_INFINITY;
  let ss = 0;
  let n = 0;
  for (const q of s.quotes) {
    if (q.strike < lo || q.strike > hi) continue;
    const e = 100 * (volAt(q.strike) - q.markIv);
    if (!Number.isFinite(e)) continue;
    ss += e * e;
    n++;
  }
  return { rmse: n > 0 ? Math.sqrt(ss / n) : null, quotes: n };
}

/** The market ATM vol: linear interpolation of the mark IVs at k = 0; null when the quotes do not straddle k = 0. */
export function marketAtm(g: EligibleGroup): number | null {
  const qs = [...g.quotes].sort((a, b) => a.k - b.k);
  for (let i = 0; i < qs.length; i++) {
    const q = qs[i]!;
    if (q.k === 0) return q.markIv;
    if (i > 0 && qs[i - 1]!.k < 0 && q.k > 0) {
      const p = qs[i - 1]!;
      return p.markIv + ((q.markIv - p.markIv) * (0 - p.k)) / (q.k - p.k);
    }
  }
  return null;
}

/**
 * Diagnostics of a slice measured on the SERVED surface (what the API sells): RMSE and max error against the
 * mark IVs, the reference gap (`referenceRmseVolPts`: the model's own unconstrained fit of the expiry;
 * `repairCostVolPts` = served RMSE minus it), the ATM error (served vol at k = 0 minus the interpolated market ATM
 * vol) and the largest error at quotes between the 25-delta strikes (mark call delta 0.25..0.75), with the quality
 * warnings of issue 11 item 3 (ATM error > {@link WARN_ATM_VOL_PTS}, 25-delta error > {@link WARN_25D_VOL_PTS}),
 * whatever the RMSE.
 */
export function servedQuality(served: VolSurface, s: DraftSlice<unknown>, referenceRmse: number | null): void {
  let ss = 0;
  let mx = 0;
  let n = 0;
  let mx25: number | null = null;
  for (const q of s.quotes) {
    const e = 100 * (served.impliedVol(s.T, q.strike, s.forward) - q.markIv);
    if (!Number.isFinite(e)) continue;
    ss += e * e;
    mx = Math.max(mx, Math.abs(e));
    n++;
    const sd = q.markIv * Math.sqrt(s.T);
    const callDelta = normCdf((-q.k + 0.5 * sd * sd) / sd);
    if (callDelta >= 0.25 && callDelta <= 0.75) mx25 = Math.max(mx25 ?? 0, Math.abs(e));
  }
  if (n > 0) {
    s.fit.rmseVolPts = Math.sqrt(ss / n);
    s.fit.maxErrorVolPts = mx;
  }
  s.fit.referenceRmseVolPts = referenceRmse;
  s.fit.repairCostVolPts = referenceRmse === null ? null : s.fit.rmseVolPts - referenceRmse;
  s.fit.maxError25DeltaVolPts = mx25;
  const atm = marketAtm(s);
  const atmErr = atm === null ? null : 100 * (served.impliedVolAtLogMoneyness(s.T, 0) - atm);
  s.fit.atmErrorVolPts = atmErr !== null && Number.isFinite(atmErr) ? atmErr : null;
  const warnings = (s.fit.warnings ?? []).filter((w) => !w.startsWith(QUALITY_WARNING_PREFIX));
  if (s.fit.atmErrorVolPts !== null && Math.abs(s.fit.atmErrorVolPts) > WARN_ATM_VOL_PTS) {
    warnings.push(`${QUALITY_WARNING_PREFIX} ATM error ${s.fit.atmErrorVolPts.toFixed(2)} vol pts (served ${(100 * served.impliedVolAtLogMoneyness(s.T, 0)).toFixed(2)} vs market ${(100 * atm!).toFixed(2)}) exceeds ${WARN_ATM_VOL_PTS}`);
  }
  if (mx25 !== null && mx25 > WARN_25D_VOL_PTS) warnings.push(`${QUALITY_WARNING_PREFIX} error ${mx25.toFixed(2)} vol pts at a quote within 25-delta exceeds ${WARN_25D_VOL_PTS}`);
  const sparseMiss = sparseQuoteMiss(served, s);
  if (sparseMiss !== null) warnings.push(sparseMiss);
  s.fit.warnings = warnings.filter((w) => !(w.startsWith(SPARSE_WARNING_PREFIX) && w !== sparseMiss));
}

/** Prefix of the warning of a sparse expiry served away from one of its quotes (issue 26). */
export const SPARSE_WARNING_PREFIX = 'sparse quotes not honoured:';
/** Largest quote count of a sparse expiry (src/quant/chain/sparse.ts SPARSE_MAX_QUOTES; repeated: no import cycle). */
const SPARSE_QUOTES = 4;
/** A sparse expiry's served IV may be this many vol points from the mark at a quoted strike (issue 11 item 2, issue 26). */
export const SPARSE_TOLERANCE_VOL_PTS = 1;

/**
 * Issue 26's rule for sparse expiries (1 to {@link SPARSE_QUOTES} quotes): at every quoted strike the SERVED IV (the
 * calendar envelope and wing repairs included) lies within max({@link SPARSE_TOLERANCE_VOL_PTS} vol pt, the quote's
 * own bid-ask IV spread) of the mark. The quotes are never moved to honour the calendar: where the served smile
 * misses one (the envelope of a longer-looking shorter expiry lifted it), this returns the warning saying so, else null.
 */
export function sparseQuoteMiss(served: VolSurface, s: Pick<DraftSlice<unknown>, 'T' | 'forward' | 'quotes'>): string | null {
  if (s.quotes.length === 0 || s.quotes.length > SPARSE_QUOTES) return null;
  let worst: { e: number; strike: number; tol: number } | null = null;
  for (const q of s.quotes) {
    const e = 100 * (served.impliedVol(s.T, q.strike, s.forward) - q.markIv);
    const spread = q.bidIv !== null && q.askIv !== null && q.askIv > q.bidIv ? 100 * (q.askIv - q.bidIv) : 0;
    const tol = Math.max(SPARSE_TOLERANCE_VOL_PTS, spread);
    if (!(Math.abs(e) <= tol) && (worst === null || Math.abs(e) - tol > Math.abs(worst.e) - worst.tol)) worst = { e, strike: q.strike, tol };
  }
  if (worst === null) return null;
  return `${SPARSE_WARNING_PREFIX} served IV ${worst.e.toFixed(2)} vol pts from the mark at strike ${worst.strike} (tolerance ${worst.tol.toFixed(2)}): the calendar against the neighbouring expiries cannot be honoured without moving the quotes`;
}

/** Prefix of the cross-model warning (issue 26). */
export const CROSS_MODEL_WARNING_PREFIX = 'model comparison:';
/** A model's served RMSE of an expiry may be at most this many times the best of the models' (issue 26). */
export const CROSS_MODEL_RATIO = 3;
/** ...measured against at least this RMSE (vol points, the half-spread floor of quoteWeights.ts): 0.05 vs 0.01 vp is no miss. */
export const CROSS_MODEL_FLOOR_VOL_PTS = 0.25;

/**
 * Issue 26: an expiry whose served RMSE against the marks (vol points) under one model exceeds
 * {@link CROSS_MODEL_RATIO} times the best model's on the same expiry (the best floored at
 * {@link CROSS_MODEL_FLOOR_VOL_PTS}) carries a warning under that model (e.g. Vanna-Volga's three pillars on an
 * 8-hour expiry). Replaces earlier warnings of this kind (slices may be carried from an earlier fit).
 * @param models every model's served slices of one chain fit (draft slices, not yet frozen: updated in place)
 */
export function crossModelWarnings(models: ReadonlyArray<{ readonly model: string; readonly slices: readonly ExpirySlice[] }>): void {
  const best = new Map<number, { rmse: number; model: string }>();
  for (const m of models) {
    for (const s of m.slices) {
      const b = best.get(s.expirationTimestamp);
      if (Number.isFinite(s.fit.rmseVolPts) && (b === undefined || s.fit.rmseVolPts < b.rmse)) best.set(s.expirationTimestamp, { rmse: s.fit.rmseVolPts, model: m.model });
    }
  }
  for (const m of models) {
    for (const s of m.slices) {
      const warnings = (s.fit.warnings ?? []).filter((w) => !w.startsWith(CROSS_MODEL_WARNING_PREFIX));
      const b = best.get(s.expirationTimestamp);
      if (b && s.fit.rmseVolPts > CROSS_MODEL_RATIO * Math.max(b.rmse, CROSS_MODEL_FLOOR_VOL_PTS)) {
        warnings.push(`${CROSS_MODEL_WARNING_PREFIX} RMSE ${s.fit.rmseVolPts.toFixed(2)} vol pts is more than ${CROSS_MODEL_RATIO} times ${b.model}'s ${b.rmse.toFixed(2)} on this expiry`);
      }
      // the chain fit's slices are its drafts until buildSnapshots freezes them
      (s as DraftSlice<unknown>).fit.warnings = warnings;
    }
  }
}
