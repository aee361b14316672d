/**
 * One recalibration of a (source, pair) chain: per listed expiry an SVI, a SABR and a Vanna-Volga fit to
 * the out-of-the-money mark IVs, the no-arbitrage checks and repairs, each model's surface across expiries in
 * total variance, and the forward curve. Runs in the calibration worker (fitChain / ChainFitter) and builds the
 * immutable cache snapshots on the main thread (buildSnapshots). Each model's fit of one expiry is its module's in
 * src/quant/models (SmileModel.fit, through MODEL_REGISTRY); this file is the pipeline around it. Deterministic for
 * a given sequence of chain views. Memory per (source, pair) ({@link FitMemory}): the last good slice per expiry
 * (used when a new fit is rejected), the repair/rejection counts, and each expiry's last fit with the inputs it was
 * fitted to.
 *
 * Incremental refits (issue 12 item 1): a view that is not `full` (ChainView.full === false) refits only the
 * expiries whose inputs changed since their last fit (forward, or any quote's strike, mark, bid or ask IV; for an
 * SVI slice of fewer than 7 quotes also the shape prior it borrows) or whose T moved by more than 0.1 % since
 * (SABR 0.05 %, Vanna-Volga 0.001 %: REUSE_MAX_T_CHANGE), each warm-started from its previous parameters (SVI:
 * `warm`, the outer search from them alone; SABR: `warm`, its LM from them alone). An unchanged expiry reuses its
 * last fit carried to the new T (carryForwardParams: the implied vol at each log-moneyness is kept). The sparse
 * expiries, the wing/calendar repairs and every served-surface figure are then redone as on a full pass, from those
 * per-expiry fits. Full views (start, reconnect, roll-off, the periodic safety net of streams/pipeline.ts) fit
 * every expiry cold. docs/architecture.md "Recalibration" has the table. An urgent partial view (ChainView.refitOnly,
 * streams/pipeline.ts: a mark moved by at least CALIBRATION_URGENT_VOL_PTS) refits only its listed expiries; every
 * other expiry keeps its last fit carried to the new forward and T ("deferred"), and is refitted by the next
 * regular view.
 *
 * Rules (docs/conventions.md "Volatility surfaces: SVI, SABR, Vanna-Volga"):
 * - T = (expiry - observationTimestamp) / (365 * 86400); expiries closer than
 *   {@link MIN_EXPIRY_SECONDS} are left out of the fit (they roll off before they expire);
 * - the expiry's forward is the exchange's own (Deribit `underlying_price`) from the newest option
 *   quote of that expiry; futures supply forwards of expiries without options;
 * - quotes used: one per strike, the out-of-the-money side (put below the forward, call at or
 *   above it), mark IV within (0.01, 5); bid/ask IVs passed for spread weighting;
 * - every model fits the expiries in increasing T; a sparse expiry takes its shape from the last full fit
 *   of a shorter expiry (SVI `prior`, SABR `prior`); SVI slices are also kept above the previous served
 *   slice (calendar floor, Gatheral-Jacquier 2014 sec. 5, as calibrateSviSurface does);
 * - butterfly: SVI g(k) >= 0 (Gatheral-Jacquier 2014 eq. (2.1)), SABR and Vanna-Volga the density check on a
 *   strike grid (src/quant/smileArbitrage.ts). A violating fit is repaired by a constrained refit (SVI and
 *   SABR penalty rounds inside their calibrations; Vanna-Volga: the 25-delta pillar vols shrunk towards the
 *   ATM vol by the largest factor lambda in [0, 1] that passes, lambda = 0 being flat) or, if that fails,
 *   rejected: the last good slice of that expiry stays (carried to the new observation, carryForwardParams),
 *   or the expiry is left out when there is none;
 * - calendar: total variance non-decreasing in T at fixed k, checked on {@link CALENDAR_GRID}; a slice below
 *   the earlier served one is served as the envelope max(w_i, W_{i-1}) (src/quant/chain/modelSurface.ts), and the
 *   served surface is verified with VolSurface.calendarArbitrageFree.
 */
import { performance } from 'node:perf_hooks';
import type { FutureQuote, OptionQuote } from '../src/domain/events.js';
import {
  QUALITY_WARNING_PREFIX,
  VOLATILITY_MODELS,
  type ArbitrageCounts,
  type ExpirySlice,
  type FitDiagnostics,
  type ForwardPoint,
  type SmileQuote,
  type SurfaceArbitrage,
  type VolatilityModel,
} from '../src/cache/snapshot.js';
import {
  CALENDAR_GRID,
  CALENDAR_GRID_TEXT,
  buildModelSurface,
  carryForwardParams,
  rawCalendarCheck,
  sliceTotalVariance,
} from '../src/quant/chain/modelSurface.js';
import { MODEL_REGISTRY, type FitContext, type SliceFit, type SliceFitOptions } from '../src/quant/models/index.js';
import { deltaStrike } from '../src/quant/smileFigures.js';
import { normCdf } from '../src/quant/normal.js';
import type { VolSurface } from '../src/quant/surface.js';
import { mayYield, type ChainView } from './chainState.js';
import { buildSnapshots, type CalibrationResult, type ChainFit, type ModelFit } from '../src/cache/snapshotBuilder.js';

export { buildSnapshots, type CalibrationResult, type ChainFit, type ModelFit };

/** Seconds in an ACT/365 year. */
const YEAR_S = 365 * 86400;
/** Expiries closer than this (1 hour) are not fitted. */
export const MIN_EXPIRY_SECONDS = 3600;
/** Mark IVs outside this range are not quotes (Deribit prints 0 or absurd values on dead strikes). */
const MIN_IV = 0.01;
const MAX_IV = 5;

/** Options of a chain fit: those of a slice fit (SABR's beta). */
export type ChainFitOptions = SliceFitOptions;




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


// ---------------------------------------------------------------------------------------------
// Memory between recalibrations: last good slice per expiry, and the counts

interface GoodSlice {
  readonly slice: ExpirySlice;
  /** Observation time of the chain it was fitted to. */
  readonly fittedAt: number;
}

interface MutableCounts {
  fits: number;
  constrainedRefits: number;
  calendarRepaired: number;
  rejected: number;
  keptPrevious: number;
  dropped: number;
}

/**
 * The last calendar-ceiling wing repair of one expiry (fitModel's wing repair), keyed by the own fits it was made
 * from: the identity ({@link FittedExpiry.id}) of the repaired slice's fit and of the next expiry's served slice.
 * `params` at `T` and `forward` (carried to a later observation with carryForwardParams); `failed` when that
 * repair did not give an arbitrage-free slice under the ceiling.
 */
type WingRepair =
  | { readonly key: string; readonly failed: true }
  | {
      readonly key: string;
      readonly failed: false;
      readonly params: ExpirySlice['params'];
      readonly T: number;
      readonly forward: number;
      /** The refit's own method text, minimum density and warnings. */
      readonly method: string;
      readonly minDensity: number | null | undefined;
      readonly warnings: readonly string[];
    };

function zeroCounts(): MutableCounts {
  return { fits: 0, constrainedRefits: 0, calendarRepaired: 0, rejected: 0, keptPrevious: 0, dropped: 0 };
}

/**
 * What one (source, pair) keeps between recalibrations, per model: the last good (served, not kept) slice of
 * each expiry, for the rejection rule, and the cumulative repair/rejection counts. Plain data; a
 * {@link ChainFitter} (one per calibration worker) holds one per (source, pair).
 */
export class FitMemory {
  readonly lastGood = new Map<VolatilityModel, Map<number, GoodSlice>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  readonly counts = new Map<VolatilityModel, MutableCounts>(VOLATILITY_MODELS.map((m) => [m, zeroCounts()]));
  /** Per model and expiry: the last own fit (pass 1) with the inputs it was fitted to (incremental refits). */
  readonly fitted = new Map<VolatilityModel, Map<number, FittedExpiry>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  /**
   * Per model and expiry: the last wing repair under the next expiry's calendar ceiling and the fits it was made from.
   * A later pass in which both fits are the same (reused or deferred, not refitted) serves that repair carried to its
   * T instead of refitting it (a warm SVI ceiling refit is 2 to 3 ms: it was 40 % of an urgent partial refit on the
   * real 878-option chain), after checking the ceiling again on the current grid.
   */
  readonly wingRepairs = new Map<VolatilityModel, Map<number, WingRepair>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  /** Next {@link FittedExpiry.id}. */
  nextFitId = 1;
  /**
   * True while a view that is not `full` is fitted (set by {@link fitChain}): unchanged expiries reuse their last
   * fit and changed ones refit warm. False: every expiry is fitted cold.
   */
  incremental = false;
  /**
   * The expiries an urgent partial view may refit (ChainView.refitOnly, set by {@link fitChain}); null for a regular
   * view. Every other expiry with an earlier fit keeps it, carried to the new forward and T, even when its inputs
   * changed ("deferred": its fit memory keeps the old inputs, so the next regular view refits it).
   */
  refitOnly: ReadonlySet<number> | null = null;
  /**
   * Set by {@link fitChain} on a view that may yield (chainState.ts mayYield: regular incremental, or the periodic safety
   * net's full view) when the caller can preempt it: asked
   * before each slice refit after the first of the chain; true stops the chain fit there with {@link FitYielded}.
   * Null: the fit runs to its end.
   */
  shouldYield: (() => boolean) | null = null;
  /** Slices refitted (not reused, not deferred) by the chain fit in progress, every model. */
  chainRefits = 0;
  /**
   * Per model, expiries refitted, reused and deferred by the last {@link fitModel}, and its calendar-ceiling wing
   * repairs refitted and reused ({@link wingRepairs}) (diagnostics, tests, the benchmark).
   */
  readonly lastPass = new Map<VolatilityModel, { refitted: number; reused: number; warm: number; deferred: number; ceilingRefitted: number; ceilingReused: number }>();

  /** Forget the slices of expiries at or before `nowS`. */
  prune(nowS: number): void {
    for (const byExpiry of [...this.lastGood.values(), ...this.fitted.values(), ...this.wingRepairs.values()]) {
      for (const e of [...byExpiry.keys()]) if (e <= nowS) byExpiry.delete(e);
    }
  }
}

/** An expiry's last own fit and what it was fitted to (see {@link FitMemory.fitted}). */
interface FittedExpiry {
  /** Unique per memory: the identity of this fit (a refit gets a new one). */
  readonly id: number;
  /** {@link inputSignature} of the group fitted. */
  readonly signature: string;
  /** Identity of the shape prior used ('' when the fit does not depend on one). */
  readonly priorKey: string;
  readonly attempt: SliceFit;
  readonly T: number;
  readonly forward: number;
  /** Observation time of the fit, Unix s. */
  readonly fittedAt: number;
}

const signatures = new WeakMap<EligibleGroup, string>();
/**
 * The inputs of an expiry's fit as one string: forward and every quote's strike, mark, bid and ask IV (exact
 * numbers). Equal signatures mean a refit would see the same data (T aside). Memoized per group object.
 */
function inputSignature(g: EligibleGroup): string {
  let sig = signatures.get(g);
  if (sig === undefined) {
    const parts: string[] = [String(g.forward)];
    for (const q of g.quotes) parts.push(`${q.strike}:${q.markIv}:${q.bidIv}:${q.askIv}`);
    sig = parts.join('|');
    signatures.set(g, sig);
  }
  return sig;
}

/** One expiry's input to the model fits (a SliceInput of src/quant/models whose quotes are the served SmileQuotes). */
export interface EligibleGroup {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: readonly SmileQuote[];
}

/**
 * Fit of the served smile over the quotes between its own 10-delta strikes (plain forward Black call delta
 * 0.90 and 0.10, the range of the iVSummary pillars): RMSE in vol points (null without such quotes) and count.
 */
function within10Delta(surface: VolSurface, s: Pick<ExpirySlice, 'T' | 'forward' | 'quotes'>): { rmse: number | null; quotes: number } {
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

/** Mutable slice under construction (frozen later by buildSnapshots). */
type DraftSlice = Omit<ExpirySlice, 'fit'> & { fit: { -readonly [K in keyof FitDiagnostics]: FitDiagnostics[K] } };

/** Fits one expiry with one model (the default is {@link fitExpiry}; tests inject others). */
export type ExpiryFitter = (model: VolatilityModel, g: EligibleGroup, st: FitContext, options: ChainFitOptions) => SliceFit;

/**
 * The model's calibration of one expiry, through the registry (src/quant/models: SVI, SABR, Vanna-Volga each fit a
 * slice behind SmileModel.fit).
 * @throws whatever the calibration throws (no valid quote); fitModel turns it into a rejection
 */
export function fitExpiry(model: VolatilityModel, g: EligibleGroup, st: FitContext, options: ChainFitOptions): SliceFit {
  return MODEL_REGISTRY[model].fit(g, st, options);
}

/**
 * An unchanged expiry's last fit is reused only while its T has moved by at most this fraction since; beyond it the
 * expiry is refitted warm. The carry keeps the implied vol at each log-moneyness. For SVI (fitted in IV space) that
 * is a refit of unchanged marks to within 0.01 vp while T moves by 0.1 % (7 s on a 2-hour expiry, 14 min on a 10-day
 * one). SABR's Hagan T-term and Vanna-Volga's delta pillars and wing strikes move with T (measured on the real
 * chains: SABR 0.011 vp after 0.09 %; a 10-minute carry moved the Vanna-Volga far wings by 7 vol points on a 2-hour
 * expiry, 0.05 on a 9-day one, and 0.0103 after 0.0046 % on a 15-day one: its smile depends on T at fixed pillars,
 * Castagna-Mercurio 2007 eq. (13)), hence 0.05 % and 0.001 % (1 s on a 1-day expiry) for them
 * (test/streams/incremental.test.ts: within 0.01 vp of a cold fit at every quote and for |k| <= 1).
 */
export const REUSE_MAX_T_CHANGE: Readonly<Record<VolatilityModel, number>> = { SVI: 1e-3, SABR: 5e-4, VANNA_VOLGA: 1e-5 };


/** Expiries with at most this many quotes are sparse: shape from the neighbouring expiries, level from the quotes. */
export const SPARSE_MAX_QUOTES = 4;
/**
 * Expiries closer than this (2 days, in years) never lend their shape to other expiries (sparse neighbours, SVI
 * prior): the first expiry of a chain (hours to expiry) is the noisiest slice and must not seed the others.
 */
export const SHAPE_SOURCE_MIN_T = 2 / 365;
/** Quality warnings (issue 11 item 3): served ATM error above this many vol points... */
export const WARN_ATM_VOL_PTS = 1;
/** ...or a served error above this many vol points at a quote between the 25-delta strikes. */
export const WARN_25D_VOL_PTS = 3;
export { QUALITY_WARNING_PREFIX };

/** The market ATM vol: linear interpolation of the mark IVs at k = 0; null when the quotes do not straddle k = 0. */
function marketAtm(g: EligibleGroup): number | null {
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
 * The level-and-tilt target of a sparse expiry (1 to 4 quotes): the shape is the neighbours' served total variance
 * interpolated LINEARLY IN T at fixed k, w_s(k) = w_lo(k) + (T - T_lo)/(T_hi - T_lo) (w_hi(k) - w_lo(k)) (both
 * neighbours; the calendar-consistent interpolation of Gatheral-Jacquier 2014 sec. 5.1), or, beyond the last (or
 * before the first) shape source, the one neighbour's smile in standardized moneyness k/sqrt(T) (the same smile per
 * ATM standard deviation: w(k) = (T/T_n) w_n(k sqrt(T_n/T)), skew scaling as 1/sqrt(T), as in the SSVI power-law
 * parametrization of Gatheral-Jacquier 2014 sec. 4); the level comes from the quotes:
 * w(k) = lambda w_s(k) + mu k, (lambda, mu) the weighted least squares of the quotes' total variances (weights
 * 1/(2 iv T), IV-error scale; one quote: mu = 0). mu is clamped so that both wings still grow outward and stay
 * within Lee's slope 2 (then lambda is refitted alone). Returns null when no shape source exists.
 */
export function sparseTarget(
  g: EligibleGroup,
  lo: { T: number; w: (k: number) => number } | null,
  hi: { T: number; w: (k: number) => number } | null,
): { w: (k: number) => number; lambda: number; mu: number; how: string } | null {
  if (!lo && !hi) return null;
  const T = g.T;
  let shape: (k: number) => number;
  let how: string;
  if (lo && hi) {
    const th = (T - lo.T) / (hi.T - lo.T);
    shape = (k) => lo.w(k) + th * (hi.w(k) - lo.w(k));
    how = `shape interpolated linearly in T between the expiries of T = ${lo.T.toFixed(4)} and ${hi.T.toFixed(4)} y in total variance`;
  } else {
    const n = (lo ?? hi)!;
    const c = Math.sqrt(n.T / T);
    shape = (k) => (n.w(k * c) * T) / n.T;
    how = `shape of the ${lo ? 'shorter' : 'longer'} neighbour (T = ${n.T.toFixed(4)} y) in k/sqrt(T), w(k) = (T/T_n) w_n(k sqrt(T_n/T))`;
  }
  const qs = g.quotes.filter((q) => Number.isFinite(shape(q.k)) && shape(q.k) > 0);
  if (qs.length === 0) return null;
  const fitLambda = (mu: number): number => {
    let num = 0;
    let den = 0;
    for (const q of qs) {
      const wt = 1 / (2 * q.markIv * T) ** 2;
      const s0 = shape(q.k);
      num += wt * s0 * (q.markIv * q.markIv * T - mu * q.k);
      den += wt * s0 * s0;
    }
    return num / den;
  };
  let lambda = fitLambda(0);
  let mu = 0;
  const kSpan = Math.max(...qs.map((q) => q.k)) - Math.min(...qs.map((q) => q.k));
  if (qs.length >= 2 && kSpan > 0) {
    // 2x2 weighted normal equations in (lambda, mu).
    let a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
    for (const q of qs) {
      const wt = 1 / (2 * q.markIv * T) ** 2;
      const s0 = shape(q.k);
      const y = q.markIv * q.markIv * T;
      a11 += wt * s0 * s0;
      a12 += wt * s0 * q.k;
      a22 += wt * q.k * q.k;
      b1 += wt * s0 * y;
      b2 += wt * q.k * y;
    }
    const det = a11 * a22 - a12 * a12;
    if (Math.abs(det) > 1e-14 * a11 * a22) {
      lambda = (b1 * a22 - b2 * a12) / det;
      mu = (a11 * b2 - a12 * b1) / det;
    }
    // Wing slopes of the shape far out (finite differences at +-6 ATM standard deviations).
    const s = Math.sqrt(Math.max(shape(0), 1e-12));
    const slope = (k: number): number => (shape(k + 1e-4) - shape(k - 1e-4)) / 2e-4;
    const sL = slope(-6 * s);
    const sR = slope(6 * s);
    const ok = (l: number, m: number): boolean => l > 0 && l * sL + m <= 0 && l * sR + m >= 0 && Math.abs(l * sL + m) <= 2 && Math.abs(l * sR + m) <= 2;
    if (!Number.isFinite(mu) || !ok(lambda, mu)) {
      mu = 0;
      lambda = fitLambda(0);
    }
  }
  if (!(lambda > 0) || !Number.isFinite(lambda)) return null;
  const l = lambda;
  const m = mu;
  return { w: (k) => l * shape(k) + m * k, lambda, mu, how };
}

/**
 * Fit one model over the eligible expiries, apply the rejection rule, the calendar envelope and the verification;
 * updates `memory` (last good slices, counts). `fit` fits one expiry (default {@link fitExpiry}; tests inject
 * failing fits to exercise the rejection rule).
 * - Pass 1, expiries with more than {@link SPARSE_MAX_QUOTES} quotes, in increasing T: each fitted on its own (no
 *   calendar floor); the last full fit of an expiry of at least {@link SHAPE_SOURCE_MIN_T} is the sparse-mode prior.
 * - Pass 2, sparse expiries: the model is fitted to 41 points of {@link sparseTarget} (shape from both served
 *   neighbours in total variance, level from the quotes) over the quotes and +-4 ATM standard deviations; status
 *   `sparse`, `method` says how. Without any neighbour the model's own sparse mode is used (default shape).
 * - Calendar: the envelope W_i = max(w_i, W_{i-1}) where the raw slice dips below the previous served one.
 * - Then, on the SERVED surface: RMSE and max error against the marks, the reference gap
 *   (referenceRmseVolPts, repairCostVolPts), the ATM and 25-delta errors and the quality warnings.
 */
export function fitModel(
  model: VolatilityModel,
  groups: readonly EligibleGroup[],
  obs: number,
  memory: FitMemory,
  options: ChainFitOptions = {},
  fit: ExpiryFitter = fitExpiry,
): ModelFit {
  const t0 = performance.now();
  const counts = memory.counts.get(model)!;
  const lastGood = memory.lastGood.get(model)!;
  const st: FitContext = { lastFull: undefined, lastFullT: undefined };
  const byExpiry = new Map<number, DraftSlice>();
  const skipped: Array<{ expirationTimestamp: number; reason: string }> = [];
  const reference = new Map<number, number | null>();

  /**
   * Serve an attempt, or apply the rejection rule; returns the served draft slice (or null: left out). `reusedFrom`:
   * the attempt is an earlier fit carried to this observation (no fit ran), fitted at that time.
   */
  const settle = (g: EligibleGroup, run: () => SliceFit, sparseHow: string | null, reusedFrom: number | null = null): DraftSlice | null => {
    const ts = performance.now();
    let attempt: SliceFit | null = null;
    let failure: string | null = null;
    try {
      attempt = run();
    } catch (err) {
      failure = `fit failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (reusedFrom === null) counts.fits++;
    if (attempt && !attempt.butterflyFree) failure = `butterfly arbitrage left after the constrained refit (${attempt.warnings.find((w) => w.startsWith('butterfly')) ?? 'check failed'})`;
    const base = { expirationTimestamp: g.expirationTimestamp, T: g.T, forward: g.forward, quotes: g.quotes };
    if (attempt && failure === null) {
      if (attempt.repaired) counts.constrainedRefits++;
      const slice: DraftSlice = {
        ...base,
        params: attempt.params,
        fit: {
          rmseVolPts: attempt.rmseVolPts,
          maxErrorVolPts: attempt.maxErrorVolPts,
          quotesUsed: sparseHow === null ? attempt.quotesUsed : g.quotes.length,
          butterflyFree: true,
          method: sparseHow === null ? attempt.method : `sparse (${g.quotes.length} quote${g.quotes.length > 1 ? 's' : ''}): ${sparseHow}; model fitted to 41 points of that smile and the quotes (weight 5): ${attempt.method}`,
          calibrationMs: performance.now() - ts,
          status: sparseHow !== null ? 'sparse' : attempt.repaired ? 'repaired' : 'fitted',
          constrainedRefit: attempt.repaired,
          calendarFree: true,
          calendarRepaired: false,
          arbitrageCheck: MODEL_REGISTRY[model].arbitrageCheck,
          minDensity: attempt.minDensity,
          fittedAt: reusedFrom ?? obs,
          atmErrorVolPts: attempt.atmErrorVolPts,
          warnings: attempt.warnings.filter((w) => !w.startsWith('ATM check')),
        },
      };
      reference.set(g.expirationTimestamp, sparseHow === null ? (attempt.unconstrainedRmseVolPts ?? null) : null);
      lastGood.set(g.expirationTimestamp, { slice: { ...slice, fit: { ...slice.fit } }, fittedAt: reusedFrom ?? obs });
      if (sparseHow === null && attempt.full && g.T >= SHAPE_SOURCE_MIN_T) {
        st.lastFull = attempt.params;
        st.lastFullT = g.T;
        st.lastFullKey = `${g.expirationTimestamp}:${inputSignature(g)}`;
      }
      return slice;
    }
    // Rejected: the last good slice of this expiry stays, carried to this observation.
    counts.rejected++;
    const prev = lastGood.get(g.expirationTimestamp);
    if (!prev) {
      counts.dropped++;
      skipped.push({ expirationTimestamp: g.expirationTimestamp, reason: `${failure}; no earlier good fit of this expiry` });
      return null;
    }
    counts.keptPrevious++;
    const params = carryForwardParams(model, prev.slice.params, prev.slice.T, g.T, prev.slice.forward, g.forward);
    reference.set(g.expirationTimestamp, null);
    return {
      ...base,
      params,
      fit: {
        ...prev.slice.fit,
        quotesUsed: g.quotes.length,
        butterflyFree: true,
        calibrationMs: performance.now() - ts,
        status: 'kept-previous',
        calendarFree: true,
        calendarRepaired: false,
        fittedAt: prev.fittedAt,
        rejectedReason: failure ?? 'rejected',
      },
    };
  };

  // Pass 1: expiries with enough quotes for a fit of their own. Incremental: an expiry whose inputs are those of
  // its last fit reuses it (carried to this T); a changed one refits warm from it (module docstring).
  const fitted = memory.fitted.get(model)!;
  const wingRepairs = memory.wingRepairs.get(model)!;
  const pass = { refitted: 0, reused: 0, warm: 0, deferred: 0, ceilingRefitted: 0, ceilingReused: 0 };
  /** Per expiry, the identity of the own fit its served slice comes from (wing repair memo); absent: none. */
  const identity = new Map<number, string>();
  for (const g of groups) {
    if (g.quotes.length <= SPARSE_MAX_QUOTES) continue;
    const signature = inputSignature(g);
    // a slice fitted in a sparse mode of its model (SVI under 7 quotes) borrows its shape from the last full fit
    const priorKey = MODEL_REGISTRY[model].borrowsShape(g) ? (st.lastFullKey ?? 'none') : '';
    const prev = memory.incremental ? fitted.get(g.expirationTimestamp) : undefined;
    const deferred = memory.refitOnly !== null && !memory.refitOnly.has(g.expirationTimestamp);
    const unchanged = prev !== undefined && prev.signature === signature && prev.priorKey === priorKey && Math.abs(g.T / prev.T - 1) <= REUSE_MAX_T_CHANGE[model];
    let slice: DraftSlice | null;
    if (prev && (unchanged || deferred)) {
      if (unchanged) pass.reused++;
      else pass.deferred++;
      const carried: SliceFit = { ...prev.attempt, params: carryForwardParams(model, prev.attempt.params, prev.T, g.T, prev.forward, g.forward) };
      slice = settle(g, () => carried, null, prev.fittedAt);
      if (slice && slice.fit.status !== 'kept-previous') identity.set(g.expirationTimestamp, String(prev.id));
    } else {
      // preemption at a slice boundary (streams/calibrationPool.ts): the slices refitted so far stay in `fitted`
      if (memory.shouldYield !== null && memory.chainRefits > 0 && memory.shouldYield()) throw new FitYielded();
      memory.chainRefits++;
      pass.refitted++;
      if (prev) pass.warm++;
      const stFit: FitContext = prev ? { ...st, previous: carryForwardParams(model, prev.attempt.params, prev.T, g.T, prev.forward, g.forward) } : st;
      const id = memory.nextFitId++;
      slice = settle(
        g,
        () => {
          const a = fit(model, g, stFit, options);
          fitted.set(g.expirationTimestamp, { id, signature, priorKey, attempt: a, T: g.T, forward: g.forward, fittedAt: obs });
          return a;
        },
        null,
      );
      if (slice && slice.fit.status !== 'kept-previous') identity.set(g.expirationTimestamp, String(id));
    }
    if (slice) byExpiry.set(g.expirationTimestamp, slice);
  }
  memory.lastPass.set(model, pass);
  // Pass 2: sparse expiries, shaped by their served neighbours (never by an expiry of less than 2 days).
  const sources = [...byExpiry.values()]
    .filter((s) => s.fit.status !== 'kept-previous' && s.T >= SHAPE_SOURCE_MIN_T)
    .sort((a, b) => a.T - b.T)
    .map((s) => ({ T: s.T, w: sliceTotalVariance(model, s) }));
  for (const g of groups) {
    if (g.quotes.length > SPARSE_MAX_QUOTES) continue;
    const lo = [...sources].reverse().find((x) => x.T < g.T) ?? null;
    const hi = sources.find((x) => x.T > g.T) ?? null;
    const target = sparseTarget(g, lo, hi);
    let slice: DraftSlice | null;
    if (target) {
      const s0 = Math.sqrt(Math.max(target.w(0), 1e-12));
      const kq = g.quotes.map((q) => q.k);
      const kLo = Math.min(-4 * s0, ...kq);
      const kHi = Math.max(4 * s0, ...kq);
      const synthetic: SmileQuote[] = [];
      for (let i = 0; i <= 40; i++) {
        const k = kLo + ((kHi - kLo) * i) / 40;
        const w = target.w(k);
        if (!(w > 0) || !Number.isFinite(w)) continue;
        synthetic.push({ instrument: 'sparse-target', strike: g.forward * Math.exp(k), optionType: k < 0 ? 'P' : 'C', k, markIv: Math.sqrt(w / g.T), bidIv: null, askIv: null });
      }
      // The quotes themselves join the 41 points with weight 5 (repeated), so that the model (which cannot follow
      // the target exactly: SABR has 3 parameters) stays within 1 vol point of them.
      for (let r = 0; r < 5; r++) for (const q of g.quotes) synthetic.push(q);
      synthetic.sort((a, b) => a.k - b.k);
      const how = `${target.how}; level lambda = ${target.lambda.toFixed(4)} and tilt mu = ${target.mu.toExponential(3)} (w = lambda w_shape + mu k) from the quotes`;
      const empty: FitContext = { lastFull: undefined, lastFullT: undefined };
      slice = settle(g, () => fit(model, { ...g, quotes: synthetic }, empty, options), how);
    } else {
      slice = settle(g, () => fit(model, g, st, options), 'no neighbouring expiry to take a shape from: the model\'s own sparse mode (default shape)');
    }
    if (slice) byExpiry.set(g.expirationTimestamp, slice);
  }
  let slices = [...byExpiry.values()].sort((a, b) => a.T - b.T);

  // Wing repair (longest first): where the next longer served expiry is quoted and this one is not, this
  // slice's extrapolated wing must not lie above it (calendar); the slice is refitted with that ceiling
  // (its quoted part barely moves). Kept only if the refit is arbitrage-free and meets the ceiling.
  for (let i = slices.length - 2; i >= 0; i--) {
    const s = slices[i]!;
    const next = slices[i + 1]!;
    if (s.fit.status === 'kept-previous' || s.fit.status === 'sparse') continue;
    const g = groups.find((x) => x.expirationTimestamp === s.expirationTimestamp)!;
    const kq = s.quotes.map((q) => q.k);
    const nk = next.quotes.map((q) => q.k);
    const lo = Math.min(...kq);
    const hi = Math.max(...kq);
    const wNext = sliceTotalVariance(model, next);
    const wOwn = sliceTotalVariance(model, s);
    const grid: number[] = [];
    const nLo = Math.min(...nk);
    const nHi = Math.max(...nk);
    // An expiry of less than 2 days (the noisiest, often marked with flat plateaus) yields everywhere the next one is
    // quoted, so that it never forces a longer expiry up; any other only outside its own quoted range.
    const yields = s.T < SHAPE_SOURCE_MIN_T;
    for (let j = 0; j <= 80; j++) {
      const k = nLo + ((nHi - nLo) * j) / 80;
      if (yields || k < lo || k > hi) grid.push(k);
    }
    // the identity of this slice as the next one of the slice before it: kept while it is served unrepaired
    const ownId = identity.get(s.expirationTimestamp);
    const nextId = identity.get(next.expirationTimestamp);
    identity.delete(s.expirationTimestamp);
    if (!grid.some((k) => wOwn(k) > wNext(k))) {
      if (ownId !== undefined) identity.set(s.expirationTimestamp, ownId);
      continue;
    }
    // The same two fits as at the last repair (both reused or deferred, on an incremental view): that repair, carried
    // to this T, if it still meets the ceiling on this grid (WingRepair).
    const key = ownId !== undefined && nextId !== undefined ? `${ownId}<${nextId}${yields ? ' yields' : ''}` : null;
    const memo = key !== null && memory.incremental ? wingRepairs.get(s.expirationTimestamp) : undefined;
    let repair: Extract<WingRepair, { failed: false }> | null = null;
    if (memo !== undefined && memo.key === key) {
      if (memo.failed) {
        pass.ceilingReused++;
        continue;
      }
      const params = carryForwardParams(model, memo.params, memo.T, s.T, memo.forward, s.forward);
      const wCarried = sliceTotalVariance(model, { T: s.T, forward: s.forward, params });
      if (!grid.some((k) => wCarried(k) > wNext(k) * (1 + 1e-9))) {
        repair = { ...memo, params, T: s.T, forward: s.forward };
        pass.ceilingReused++;
      }
    }
    if (repair === null) {
      let refit: SliceFit | null = null;
      pass.ceilingRefitted++;
      try {
        // incremental: warm from the slice's own fit (its quoted part barely moves under the ceiling)
        refit = fit(model, g, { ...st, ceiling: { w: wNext, kGrid: grid }, ...(memory.incremental ? { previous: s.params } : {}) }, options);
      } catch {
        refit = null;
      }
      const wRefit = refit && refit.butterflyFree ? sliceTotalVariance(model, { T: s.T, forward: s.forward, params: refit.params }) : null;
      if (!refit || wRefit === null || grid.some((k) => wRefit(k) > wNext(k) * (1 + 1e-9))) {
        if (key !== null) wingRepairs.set(s.expirationTimestamp, { key, failed: true });
        continue;
      }
      repair = { key: key ?? '', failed: false, params: refit.params, T: s.T, forward: s.forward, method: refit.method, minDensity: refit.minDensity, warnings: refit.warnings };
      if (key !== null) wingRepairs.set(s.expirationTimestamp, repair);
      else wingRepairs.delete(s.expirationTimestamp);
    }
    if (key !== null) identity.set(s.expirationTimestamp, `(${key})`);
    counts.constrainedRefits++;
    const repaired: DraftSlice = {
      ...s,
      params: repair.params,
      fit: {
        ...s.fit,
        method: `${repair.method}; ${yields ? 'kept at or below the next expiry\'s slice over its quoted range (an expiry under 2 days yields)' : 'wings kept at or below the next expiry\'s slice where it is quoted and this one is not'} (calendar ceiling on ${grid.length} points)`,
        status: 'repaired',
        constrainedRefit: true,
        minDensity: repair.minDensity,
        warnings: repair.warnings.filter((w) => !w.startsWith('ATM check')),
      },
    };
    slices[i] = repaired;
    lastGood.set(s.expirationTimestamp, { slice: { ...repaired, fit: { ...repaired.fit } }, fittedAt: obs });
  }
  slices = [...slices];

  // Calendar: raw check slice by slice, envelope where needed, then verify the served surface.
  let calendarFreeRaw = true;
  let calendarFree = true;
  if (slices.length > 0) {
    const fns = slices.map((s) => sliceTotalVariance(model, s));
    const raw = rawCalendarCheck(fns, CALENDAR_GRID);
    raw.forEach((r, i) => {
      const s = slices[i]!;
      s.fit.calendarFree = r.calendarFree;
      if (!r.calendarFree) {
        calendarFreeRaw = false;
        s.fit.calendarRepaired = true;
        if (s.fit.status === 'fitted') s.fit.status = 'repaired';
        counts.calendarRepaired++;
      }
    });
    const served = buildModelSurface(model, slices);
    calendarFree = served.calendarArbitrageFree(CALENDAR_GRID).arbitrageFree;
    for (const s of slices) {
      const core = within10Delta(served, s);
      s.fit.rmse10DeltaVolPts = core.rmse;
      s.fit.quotes10Delta = core.quotes;
      servedQuality(served, s, reference.get(s.expirationTimestamp) ?? null);
    }
  }
  const arbitrage: SurfaceArbitrage = {
    butterflyFree: slices.every((s) => s.fit.butterflyFree),
    calendarFreeRaw,
    calendarFree,
    calendarGrid: CALENDAR_GRID_TEXT,
    counts: { ...counts } as ArbitrageCounts,
  };
  return { model, slices, skipped, calibrationMs: performance.now() - t0, arbitrage };
}

/**
 * Diagnostics of a slice measured on the SERVED surface (what the API sells): RMSE and max error against the
 * mark IVs, the reference gap (`referenceRmseVolPts`: the model's own unconstrained fit of the expiry;
 * `repairCostVolPts` = served RMSE minus it), the ATM error (served vol at k = 0 minus the interpolated market ATM
 * vol) and the largest error at quotes between the 25-delta strikes (mark call delta 0.25..0.75), with the quality
 * warnings of issue 11 item 3 (ATM error > {@link WARN_ATM_VOL_PTS}, 25-delta error > {@link WARN_25D_VOL_PTS}),
 * whatever the RMSE.
 */
function servedQuality(served: VolSurface, s: DraftSlice, referenceRmse: number | null): void {
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

/**
 * Fit one chain view with every model: per expiry SVI, SABR (beta from `options.sabrBeta`, default 1) and
 * Vanna-Volga, the rejection rule against `memory` and the calendar envelope (module docstring), plus the
 * listed forward points. Without `memory` a fresh one is used (no earlier slice can be kept, counts are this
 * fit's). Runs in the calibration worker.
 * @param shouldYield on a view that may yield (mayYield: a regular incremental view, or a full view of the periodic
 *   safety net only): asked before each slice refit after the
 *   chain's first; when it answers true the fit stops there ({@link FitYielded}). The slices refitted until then stay
 *   in `memory` (a later view with the same inputs for them reuses them) and the cumulative counts, but the count of
 *   fits run, are restored to their values before this fit; nothing is returned for the view.
 * @throws FitYielded when `shouldYield` stopped it
 */
export function fitChain(view: ChainView, options: ChainFitOptions = {}, memory: FitMemory = new FitMemory(), shouldYield?: () => boolean): ChainFit {
  const t0 = performance.now();
  const obs = view.observationTimestamp;
  const skipped: Array<{ expirationTimestamp: number; reason: string }> = [];
  const spot = view.spot;
  if (spot === null || !Number.isFinite(obs)) {
    return { source: view.source, pair: view.pair, observationTimestamp: obs, spot: null, points: [], models: [], skipped, calibrationMs: performance.now() - t0, version: view.version };
  }
  memory.prune(obs);
  memory.incremental = view.full === false;
  memory.refitOnly = view.full === false && view.refitOnly !== undefined ? new Set(view.refitOnly) : null;
  memory.shouldYield = mayYield(view) && shouldYield ? shouldYield : null;
  memory.chainRefits = 0;
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
  // (the iVSummary figures are computed where they are read, once per snapshot: src/cache/history.ts summarizeSurface)
  // the cumulative repair/rejection counts of a pass that yields are taken back (its retry counts its served slices
  // again), except `fits`: the fits it ran are kept in memory and reused by the retry, which does not count them
  const counts = memory.shouldYield ? VOLATILITY_MODELS.map((m) => ({ ...memory.counts.get(m)! })) : null;
  let models: ModelFit[];
  try {
    models = VOLATILITY_MODELS.map((m): ModelFit => fitModel(m, eligible, obs, memory, options));
  } catch (err) {
    if (err instanceof FitYielded && counts) {
      VOLATILITY_MODELS.forEach((m, i) => {
        const c = memory.counts.get(m)!;
        Object.assign(c, { ...counts[i]!, fits: c.fits });
      });
    }
    throw err;
  }
  return { source: view.source, pair: view.pair, observationTimestamp: obs, spot, points, models, skipped, calibrationMs: performance.now() - t0, version: view.version };
}

/**
 * A chain fit stopped at a slice boundary because the caller asked it to yield (fitChain's `shouldYield`: an urgent
 * fit waits for this worker). Not a failure: the slices refitted so far are kept in the pair's memory.
 */
export class FitYielded extends Error {
  constructor() {
    super('chain fit yielded to an urgent one');
    this.name = 'FitYielded';
  }
}

/**
 * A stateful fitter: one {@link FitMemory} per (source, pair) and memory namespace, so that rejected fits can
 * keep the last good slice and the counts accumulate. One per calibration worker (and one for in-thread use).
 */
export class ChainFitter {
  private readonly memories = new Map<string, FitMemory>();

  constructor(private readonly options: ChainFitOptions = {}) {}

  /**
   * Fit `view` with the memory of its (source, pair) in `namespace` (default 'live'; the simulated 24 h
   * history seeding uses its own so that it never touches the live memory). `shouldYield`: see {@link fitChain}.
   * @throws FitYielded when `shouldYield` stopped a regular incremental or periodic full fit
   */
  fit(view: ChainView, namespace = 'live', shouldYield?: () => boolean): ChainFit {
    const key = ChainFitter.key(view.source, view.pair, namespace);
    let m = this.memories.get(key);
    if (!m) this.memories.set(key, (m = new FitMemory()));
    return fitChain(view, this.options, m, shouldYield);
  }

  /**
   * The memory of (source, pair) in `namespace` (default 'live'): its last fits, counts and the refit/reuse tally of
   * the last pass ({@link FitMemory.lastPass}); undefined before its first fit.
   */
  memoryOf(source: ChainView['source'], pair: ChainView['pair'], namespace = 'live'): FitMemory | undefined {
    return this.memories.get(ChainFitter.key(source, pair, namespace));
  }

  private static key(source: ChainView['source'], pair: ChainView['pair'], namespace: string): string {
    return `${namespace}:${source}:${pair.base}/${pair.quote}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Snapshots (main thread)

/** Fit and build in one step, on the calling thread (stateless: a fresh FitMemory). */
export function calibrateChain(view: ChainView, sequence: number, options: ChainFitOptions = {}): CalibrationResult {
  return buildSnapshots(fitChain(view, options), sequence);
}
