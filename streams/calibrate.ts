/**
 * One recalibration of a (source, pair) chain: per listed expiry a raw-SVI fit to the
 * out-of-the-money mark IVs, the surface across expiries in total variance, and the forward curve.
 * Pure apart from measuring its own duration; deterministic for a given chain view (no warm start
 * from earlier fits, so a replay gives identical snapshots).
 *
 * Rules (docs/conventions.md):
 * - T = (expiry - observationTimestamp) / (365 * 86400); expiries closer than
 *   {@link MIN_EXPIRY_SECONDS} are left out of the fit (they roll off before they expire);
 * - the expiry's forward is the exchange's own (Deribit `underlying_price`) from the newest option
 *   quote of that expiry; futures supply forwards of expiries without options;
 * - quotes used: one per strike, the out-of-the-money side (put below the forward, call at or
 *   above it), mark IV within (0.01, 5); bid/ask IVs passed for spread weighting;
 * - expiries are fitted in increasing T, each kept above the previous one in total variance
 *   (calendar floor) and sparse ones shaped by the last full fit (calibrateSviSurface,
 *   Gatheral-Jacquier 2014 sec. 5).
 */
import { performance } from 'node:perf_hooks';
import type { FutureQuote, OptionQuote } from '../src/domain/events.js';
import type {
  ExpirySlice,
  ForwardCurveSnapshot,
  ForwardPoint,
  SmileQuote,
  SurfaceSnapshot,
} from '../src/cache/snapshot.js';
import { calibrateSviSurface } from '../src/quant/sviCalibration.js';
import type { SviParams } from '../src/quant/svi.js';
import { VolSurface } from '../src/quant/surface.js';
import { ForwardCurve } from '../src/quant/forwardCurve.js';
import type { ChainView } from './chainState.js';

/** Seconds in an ACT/365 year. */
const YEAR_S = 365 * 86400;
/** Expiries closer than this (1 hour) are not fitted. */
export const MIN_EXPIRY_SECONDS = 3600;
/** Mark IVs outside this range are not quotes (Deribit prints 0 or absurd values on dead strikes). */
const MIN_IV = 0.01;
const MAX_IV = 5;

/**
 * Plain (structured-clone and JSON safe) result of fitting one chain: what a calibration worker
 * sends back and what {@link buildSnapshots} turns into immutable cache snapshots.
 */
export interface ChainFit {
  readonly source: ChainView['source'];
  readonly pair: ChainView['pair'];
  readonly observationTimestamp: number;
  /** Null when the chain has no spot yet (then nothing is built). */
  readonly spot: number | null;
  /** Listed forward points, sorted by T. */
  readonly points: readonly ForwardPoint[];
  /** Fitted expiries, sorted by T (may be empty). */
  readonly slices: readonly ExpirySlice[];
  /** Expiries skipped and why. */
  readonly skipped: ReadonlyArray<{ expirationTimestamp: number; reason: string }>;
  /** Wall-clock milliseconds of the fit. */
  readonly calibrationMs: number;
  /** Version of the chain state the fit was made from ({@link ChainView.version}). */
  readonly version: number;
}

/** Outcome of one chain calibration, as the cache takes it. */
export interface CalibrationResult {
  readonly source: ChainView['source'];
  readonly pair: ChainView['pair'];
  /** Null when no expiry could be fitted (no quotes, no spot). */
  readonly surface: SurfaceSnapshot | null;
  /** Null when the chain has no spot yet. */
  readonly forwardCurve: ForwardCurveSnapshot | null;
  /** Expiries skipped and why. */
  readonly skipped: ReadonlyArray<{ expirationTimestamp: number; reason: string }>;
  readonly calibrationMs: number;
  /** Version of the chain state calibrated. */
  readonly version: number;
}

interface ExpiryGroup {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: SmileQuote[];
}

/** Group the chain's options by expiry with the expiry's forward, OTM quotes only. */
export function groupByExpiry(options: readonly OptionQuote[], observationTimestamp: number): ExpiryGroup[] {
  const byExpiry = new Map<number, OptionQuote[]>();
  for (const q of options) {
    let arr = byExpiry.get(q.expirationTimestamp);
    if (!arr) byExpiry.set(q.expirationTimestamp, (arr = []));
    arr.push(q);
  }
  const groups: ExpiryGroup[] = [];
  for (const [expirationTimestamp, qs] of byExpiry) {
    // Forward of the expiry: the newest quote's underlying price (ties: the larger instrument name, for determinism).
    let newest = qs[0]!;
    for (const q of qs) {
      if (q.timestamp > newest.timestamp || (q.timestamp === newest.timestamp && q.instrument > newest.instrument)) newest = q;
    }
    const forward = newest.forward;
    const T = (expirationTimestamp - observationTimestamp) / YEAR_S;
    // One quote per strike: the OTM side; the other side if the OTM one has no usable IV.
    const byStrike = new Map<number, { C?: OptionQuote; P?: OptionQuote }>();
    for (const q of qs) {
      let s = byStrike.get(q.strike);
      if (!s) byStrike.set(q.strike, (s = {}));
      s[q.optionType] = q;
    }
    const usable = (q: OptionQuote | undefined): q is OptionQuote => !!q && q.markIv > MIN_IV && q.markIv < MAX_IV;
    const quotes: SmileQuote[] = [];
    for (const strike of [...byStrike.keys()].sort((a, b) => a - b)) {
      const s = byStrike.get(strike)!;
      const otm = strike < forward ? s.P : s.C;
      const itm = strike < forward ? s.C : s.P;
      const q = usable(otm) ? otm : usable(itm) ? itm : undefined;
      if (!q) continue;
      quotes.push({
        instrument: q.instrument,
        strike,
        optionType: q.optionType,
        k: Math.log(strike / forward),
        markIv: q.markIv,
        bidIv: q.bidIv,
        askIv: q.askIv,
      });
    }
    groups.push({ expirationTimestamp, T, forward, quotes });
  }
  return groups.sort((a, b) => a.expirationTimestamp - b.expirationTimestamp);
}

/** Listed forward points: option underlyings per expiry, futures for expiries without options. */
export function forwardPoints(groups: readonly ExpiryGroup[], futures: readonly FutureQuote[], observationTimestamp: number): ForwardPoint[] {
  const points = new Map<number, ForwardPoint>();
  for (const g of groups) {
    if (g.T > 0) points.set(g.expirationTimestamp, { expirationTimestamp: g.expirationTimestamp, T: g.T, forward: g.forward, origin: 'option-underlying' });
  }
  for (const f of futures) {
    if (f.perpetual || f.expirationTimestamp === null) continue;
    const T = (f.expirationTimestamp - observationTimestamp) / YEAR_S;
    if (T <= 0 || points.has(f.expirationTimestamp)) continue;
    points.set(f.expirationTimestamp, { expirationTimestamp: f.expirationTimestamp, T, forward: f.markPrice, origin: 'future' });
  }
  return [...points.values()].sort((a, b) => a.T - b.T);
}

/**
 * Fit one chain view: per expiry raw SVI, plus the listed forward points. Pure and deterministic
 * for a given view (apart from the measured durations); runs in the calibration worker.
 */
export function fitChain(view: ChainView): ChainFit {
  const t0 = performance.now();
  const obs = view.observationTimestamp;
  const skipped: Array<{ expirationTimestamp: number; reason: string }> = [];
  const spot = view.spot;
  if (spot === null || !Number.isFinite(obs)) {
    return { source: view.source, pair: view.pair, observationTimestamp: obs, spot: null, points: [], slices: [], skipped, calibrationMs: performance.now() - t0, version: view.version };
  }
  const groups = groupByExpiry(view.options, obs);
  const points = forwardPoints(groups, view.futures, obs);

  const eligible = groups.filter((g) => {
    if (g.T * YEAR_S < MIN_EXPIRY_SECONDS) {
      skipped.push({ expirationTimestamp: g.expirationTimestamp, reason: 'expires within the hour' });
      return false;
    }
    if (g.quotes.length === 0) {
      skipped.push({ expirationTimestamp: g.expirationTimestamp, reason: 'no usable mark IV' });
      return false;
    }
    return true;
  });
  const fitStart = performance.now();
  const surfaceFit = calibrateSviSurface(
    eligible.map((g) => ({
      expirationTimestamp: g.expirationTimestamp,
      T: g.T,
      forward: g.forward,
      quotes: g.quotes.map((q) => ({ k: q.k, iv: q.markIv, bidIv: q.bidIv, askIv: q.askIv })),
    })),
  );
  const fitMs = performance.now() - fitStart;
  for (const sk of surfaceFit.skipped) skipped.push({ expirationTimestamp: sk.expirationTimestamp, reason: `fit failed: ${sk.reason}` });
  const byExpiry = new Map(eligible.map((g) => [g.expirationTimestamp, g]));
  const slices: ExpirySlice[] = surfaceFit.fits.map((fit) => ({
    expirationTimestamp: fit.expirationTimestamp,
    T: fit.T,
    forward: fit.forward,
    params: { ...fit.params },
    fit: {
      rmseVolPts: fit.rmseVolPts,
      maxErrorVolPts: fit.maxErrorVolPts,
      quotesUsed: fit.quotesUsed,
      butterflyFree: fit.butterflyFree,
      method: fit.method,
      calibrationMs: fitMs,
    },
    quotes: byExpiry.get(fit.expirationTimestamp)!.quotes,
  }));
  slices.sort((a, b) => a.T - b.T);
  return { source: view.source, pair: view.pair, observationTimestamp: obs, spot, points, slices, skipped, calibrationMs: performance.now() - t0, version: view.version };
}

/**
 * Immutable cache snapshots from a fit: the VolSurface over the fitted slices and the
 * ForwardCurve over the listed points (cheap: no fitting).
 * @param fit a {@link ChainFit} (from {@link fitChain}, a worker, or a Kafka document)
 * @param sequence the snapshot sequence number to stamp
 */
export function buildSnapshots(fit: ChainFit, sequence: number): CalibrationResult {
  const { source, pair, spot, observationTimestamp: obs } = fit;
  if (spot === null) {
    return { source, pair, surface: null, forwardCurve: null, skipped: fit.skipped, calibrationMs: fit.calibrationMs, version: fit.version };
  }
  const points = Object.freeze(fit.points.map((p) => Object.freeze({ ...p })));
  const curve = new ForwardCurve(spot, points);
  const forwardCurve: ForwardCurveSnapshot = Object.freeze({ source, pair, observationTimestamp: obs, spot, points, curve, sequence });
  const slices = Object.freeze(
    fit.slices.map((s) =>
      Object.freeze({ ...s, params: Object.freeze({ ...s.params }), fit: Object.freeze({ ...s.fit }), quotes: Object.freeze(s.quotes.map((q) => Object.freeze({ ...q }))) }),
    ),
  );
  const surface: SurfaceSnapshot | null =
    slices.length === 0
      ? null
      : Object.freeze({
          source,
          pair,
          model: 'SVI' as const,
          observationTimestamp: obs,
          spot,
          slices,
          surface: new VolSurface(slices.map((s) => ({ expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, params: s.params as unknown as SviParams }))),
          forwardCurve: curve,
          calibrationMs: fit.calibrationMs,
          sequence,
        });
  return { source, pair, surface, forwardCurve, skipped: fit.skipped, calibrationMs: fit.calibrationMs, version: fit.version };
}

/** Fit and build in one step, on the calling thread. */
export function calibrateChain(view: ChainView, sequence: number): CalibrationResult {
  return buildSnapshots(fitChain(view), sequence);
}
