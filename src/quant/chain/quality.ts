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

/** Mutable slice under construction by a chain fit (frozen later by src/cache/snapshotBuilder.ts buildSnapshots). */
export type DraftSlice = Omit<ExpirySlice, 'fit'> & { fit: { -readonly [K in keyof FitDiagnostics]: FitDiagnostics[K] } };

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
export function servedQuality(served: VolSurface, s: DraftSlice, referenceRmse: number | null): void {
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
  s.fit.warnings = warnings;
}
