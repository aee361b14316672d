/**
 * One interface for every volatility model the service serves (issue 11 item 5): how a model's per-expiry
 * parameters become a smile in total implied variance, how they are stored (numbers only: snapshots, Kafka
 * documents), how a slice is carried to a later observation when its new fit is rejected, which arbitrage check
 * and which wing rule apply. Each model is one module in this folder (svi.ts, sabr.ts, vannaVolga.ts, essvi.ts)
 * registered in index.ts; adding a model is one file plus its tests. Each module also FITS one expiry
 * ({@link SmileModel.fit}): the calibration worker's pipeline (src/quant/chain/chainFit.ts) calls it through the
 * registry, never branches on the name, and carries the fit's typed parameters `P` to the model's own functions; the
 * stored form ({@link StoredParams}) is written and read only where a slice is served or rebuilt.
 *
 * Units: k = ln(K/F) against the expiry's forward F; T in years ACT/365; w(k) = sigma(k)^2 T.
 */
import type { OptionPriceTick } from '../../domain/optionTicks.js';
import type { VolatilityModel } from '../../domain/volatilityModels.js';

/** The served models, as the API names them (`volatilityModel`): the one list of src/domain/volatilityModels.ts. */
export type ModelName = VolatilityModel;

/** One out-of-the-money quote of an expiry as the fits see it; IVs as fractions, k = ln(K/F). */
export interface SliceQuote {
  readonly strike: number;
  readonly k: number;
  readonly markIv: number;
  /** Bid/ask IVs when known (the spread-weighted objective's h, issue 26). */
  readonly bidIv: number | null;
  readonly askIv: number | null;
  /** The quoted option's type (the out-of-the-money side, or the other where it has no usable mark); absent: by k. */
  readonly optionType?: 'C' | 'P';
}

/** One expiry's input to a model fit: expiry (Unix s), T (years ACT/365), the expiry's forward and its OTM quotes. */
export interface SliceInput {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: readonly SliceQuote[];
}

/**
 * A model's parameters in their stored (serialized) form, numbers only, by name: the `params` of a served slice in a
 * snapshot, a Kafka document and the surface endpoint's `parameters`. Written once by the model's
 * {@link SmileModel.toRecord} when a chain fit's slices are served, read back by its validating
 * {@link SmileModel.fromRecord} where a stored slice becomes a smile again (the cache, a Kafka replica); the chain fit
 * itself (src/quant/chain/chainFit.ts) carries each model's typed parameters `P`, never this form.
 */
export type StoredParams = Readonly<Record<string, number>>;

/**
 * One expiry's fit by one model, before the pipeline's rejection and calendar rules, with the model's typed parameters
 * `P` (an opaque value to the pipeline, handed back only to the same model). Vols in vol points where named so.
 */
export interface SliceFit<P> {
  /** The fitted parameters, typed by the model. */
  readonly params: P;
  readonly rmseVolPts: number;
  readonly maxErrorVolPts: number;
  readonly quotesUsed: number;
  readonly butterflyFree: boolean;
  /** A constrained refit was needed (and is what `params` hold). */
  readonly repaired: boolean;
  readonly method: string;
  readonly minDensity: number | null;
  readonly atmErrorVolPts: number | null;
  readonly warnings: readonly string[];
  /** True for a full (not sparse) fit: its shape may serve as the prior of later sparse expiries. */
  readonly full: boolean;
  /** RMSE (vol points) of the model's own fit of this expiry before any repair (diagnostics.referenceRmseVolPts). */
  readonly unconstrainedRmseVolPts?: number;
  /**
   * RMSE (vol points, against the marks) of the PLAIN fit of this expiry: the same model's equal-weight least squares
   * (the objective before issue 26), warm-started from the served spread-weighted fit, before any repair. Information
   * only (diagnostics.plainRmseVolPts); absent where the model does not compute it.
   */
  readonly plainRmseVolPts?: number;
}

/**
 * What the fit of one expiry may use from the shorter expiries already served in this recalibration, and from its
 * own previous fit, in the model's typed parameters `P`. A model does not use a prior or a start that its own
 * `fromRecord` would refuse ({@link usableStart}).
 */
export interface FitContext<P> {
  /** Last full fit and its T (prior of sparse expiries). */
  lastFull: P | undefined;
  lastFullT: number | undefined;
  /**
   * Calendar ceiling from the next longer served expiry where it is quoted and this one is not (the pipeline's wing
   * repair, src/quant/chain/chainFit.ts fitModel; honoured by SVI, ignored by the other models).
   */
  ceiling?: { readonly w: (k: number) => number; readonly kGrid: readonly number[] };
  /** Identity of `lastFull` (expiry and input signature of the fit it came from): what a prior-dependent fit depends on. */
  lastFullKey?: string;
  /**
   * The slice's own previous parameters, carried to this T and forward: a warm start (incremental refit). SVI
   * starts its outer search from them alone, SABR its Levenberg-Marquardt, Vanna-Volga its pillar least squares.
   */
  previous?: P;
}

/** Options of a slice fit. */
export interface SliceFitOptions {
  /** SABR CEV exponent, fixed, in [0, 1] (env SABR_BETA). Default 1. */
  readonly sabrBeta?: number;
  /**
   * The chain's option price tick rule (src/domain/optionTicks.ts; the chain fit sets the (source, pair)'s own when
   * absent), for the no-bid price bands of issue 26 (fitKit.ts noBidPriceBands); null: no bands.
   */
  readonly optionPriceTick?: OptionPriceTick | null;
}

/** A volatility model: typed parameters `P`, their stored form, the served smile and the rules around it. */
export interface SmileModel<P> {
  readonly name: ModelName;
  /** Stored parameter names, in order (the `parameters` of the surface endpoint). */
  readonly parameterNames: readonly string[];
  /**
   * The stored names the model's fit varies (the others are fixed, e.g. SABR's beta, or follow from them); the
   * refit gate's Jacobian (src/quant/chain/sliceGate.ts) is taken in these. Default: every {@link parameterNames}.
   */
  readonly freeParameterNames?: readonly string[];
  /**
   * Whether an incremental pass may confirm a slice of this model without a refit when the refit gate
   * (src/quant/chain/sliceGate.ts) predicts a move within the tracking tolerance. False: refitted on any change of its
   * inputs (for a fit that does not respond smoothly to its quotes, which no linear prediction can bound). Default true.
   */
  readonly trackingGate?: boolean;
  /**
   * The weights W_i of the squared IV residuals in the model's fit objective, sum_i W_i (sigma(k_i) - m_i)^2, one per
   * quote (the refit gate projects mark moves with them, src/quant/chain/sliceGate.ts). Absent: equal weights.
   */
  objectiveWeights?(quotes: readonly SliceQuote[]): Float64Array;
  /** Stored names that may be absent in older documents (defaults apply). */
  readonly optionalParameterNames: readonly string[];
  /**
   * Typed parameters from their stored form.
   * @throws RangeError when a parameter is missing, not finite or invalid for the model
   */
  fromRecord(r: StoredParams, T: number, forward: number): P;
  /** The stored form (numbers only, every {@link parameterNames} entry, in that order). */
  toRecord(p: P): Record<string, number>;
  /** The SERVED smile in total variance w(k) (wing rule included); NaN where the model has no value. */
  totalVariance(p: P, T: number, forward: number): (k: number) => number;
  /** Analytic dw/dk of the served smile when the model has one (else absent: callers difference numerically). */
  totalVarianceDk?(p: P, T: number, forward: number): (k: number) => number;
  /** Parameters of a slice fitted at (oldT, oldForward) carried to (newT, newForward), implied vol at each k kept. */
  carryForward(p: P, oldT: number, newT: number, oldForward: number, newForward: number): P;
  /** The butterfly check used (diagnostics.arbitrageCheck). */
  readonly arbitrageCheck: string;
  /**
   * Incremental refits (src/quant/chain/chainFit.ts): an unchanged expiry's last fit is reused, carried to the new T
   * ({@link carryForward}: the implied vol at each log-moneyness kept), only while its T has moved by at most this
   * fraction since; beyond it the expiry is refitted warm. Chosen per model so that a reused slice stays within
   * the tracking tolerance's floor, 0.05 vol pt, of a cold fit at every quote and for |k| <= 1 (issue 22; five times
   * the limits measured for 0.01 vol pt; test/streams/incremental.test.ts, test/calibration/tracking.test.ts).
   */
  readonly reuseMaxTChange: number;
  /** The wing rule beyond the quoted/core range, as documented. */
  readonly wingRule: string;
  /**
   * The model's calibration of one expiry, served smile and its butterfly check included.
   * @throws whatever the calibration throws (no valid quote); the pipeline turns it into a rejection
   */
  fit(g: SliceInput, ctx: FitContext<P>, options: SliceFitOptions): SliceFit<P>;
  /**
   * True when the fit of `g` borrows its shape from `ctx.lastFull` (a sparse mode of the model): an incremental
   * pass then refits it whenever that prior changes.
   */
  borrowsShape(g: SliceInput): boolean;
}

/**
 * A prior or warm start `p` of `model` when the model can read it back from its stored form (its validating
 * `fromRecord`, at T and forward), else undefined: a start that is not valid for the model is not used (the fit then
 * starts cold / from its default shape), as the calibrations themselves ignore an unusable prior or start.
 */
export function usableStart<P>(model: SmileModel<P>, p: P | undefined, T: number, forward: number): P | undefined {
  if (p === undefined) return undefined;
  try {
    model.fromRecord(model.toRecord(p), T, forward);
    return p;
  } catch (err) {
    if (err instanceof RangeError) return undefined;
    throw err;
  }
}

/** Reads a finite number named `name` from a stored record. @throws RangeError when missing or not finite */
export function need(model: ModelName, r: StoredParams, name: string): number {
  const v = r[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`${model} parameter ${name} missing or not finite (${String(v)})`);
  return v;
}
