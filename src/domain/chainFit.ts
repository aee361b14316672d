/**
 * The shapes of a chain fit (src/quant/chain/chainFit.ts), plain data: the quotes a smile is fitted to, the served
 * slice of one expiry with its diagnostics, a model's fit of a chain with its no-arbitrage status, the listed forward
 * points, and the whole chain's fit (structured-clone and JSON safe: what a calibration worker sends back). The cache
 * (src/cache/snapshot.ts, snapshotBuilder.ts), Kafka documents and the API read them. Times are Unix seconds, T in
 * years ACT/365, IVs fractions, vol points 0.01, prices in the pair's quote currency.
 */
import type { Pair, Source } from './markets.js';
import type { VolatilityModel } from './volatilityModels.js';

/** One market quote used by a smile fit. */
export interface SmileQuote {
  readonly instrument: string;
  readonly strike: number;
  readonly optionType: 'C' | 'P';
  /** Log-moneyness ln(K/F) against the expiry's forward. */
  readonly k: number;
  readonly markIv: number;
  readonly bidIv: number | null;
  readonly askIv: number | null;
}

/** Prefix of the fit-quality warnings in FitDiagnostics.warnings (issue 11 item 3; counted by the metrics, shown on the dashboard). */
export const QUALITY_WARNING_PREFIX = 'fit quality:';

/**
 * How the served slice of an expiry came about (issue 4 "repaired or rejected"):
 * - `fitted`: the fit passed the butterfly check as it came out of the optimizer;
 * - `repaired`: the fit violated a no-arbitrage condition and a constrained refit removed it (SVI: penalty
 *   rounds on g(k) < 0 or below the calendar floor; SABR: density penalties; Vanna-Volga: pillar shrinkage
 *   towards ATM), or the calendar envelope was applied to it (`calendarRepaired`);
 * - `sparse`: the expiry has 1 to 4 quotes; its shape comes from the neighbouring served expiries in total variance
 *   and its level (and tilt) from its own quotes (src/quant/chain/sparse.ts `sparseTarget`; `method` says how);
 * - `kept-previous`: the fit was rejected (butterfly arbitrage that no refit removed) and the last good slice
 *   of that expiry is served instead (its parameters carried to the new observation, `fittedAt` says when it
 *   was fitted).
 */
export type SliceStatus = 'fitted' | 'repaired' | 'sparse' | 'kept-previous';

/**
 * Fit diagnostics of one expiry and model (issue 4; carried in the Kafka surface document as is).
 * The fields after `calibrationMs` were added with the three-model surfaces; they are optional only so that
 * hand-built snapshots (tests, older documents) stay valid: every slice fitted by src/quant/chain/chainFit.ts
 * has them all.
 */
export interface FitDiagnostics {
  /** RMSE of model vs mark IV, vol points (1 vol point = 0.01), over the quotes used. */
  readonly rmseVolPts: number;
  /** Largest absolute error, vol points. */
  readonly maxErrorVolPts: number;
  readonly quotesUsed: number;
  /** True when the served smile passes the butterfly check (`arbitrageCheck` says which). */
  readonly butterflyFree: boolean;
  /** How the fit was done (e.g. `svi-5p: ...`, `sabr-3p: ...`, `vanna-volga second order ...`). */
  readonly method: string;
  /** Wall-clock milliseconds of this expiry's fit (the fit of the served parameters). */
  readonly calibrationMs: number;
  /** Fitted, repaired or kept from an earlier fit (see {@link SliceStatus}). */
  readonly status?: SliceStatus;
  /**
   * The raw fit violated a condition and a constrained refit gave the served parameters: butterfly (SVI, SABR
   * penalty rounds; Vanna-Volga pillar shrinkage) or, for SVI, the calendar floor against the previous slice.
   */
  readonly constrainedRefit?: boolean;
  /** The raw slice was at or above the earlier expiry's served slice, w_i(k) >= W_{i-1}(k), on the calendar grid. */
  readonly calendarFree?: boolean;
  /** RMSE (vol points) of the served smile over the quotes between its own 10-delta strikes (call delta 0.90 to
   * 0.10, where the iVSummary pillars live); null when no quote lies there. */
  readonly rmse10DeltaVolPts?: number | null;
  /** Number of those quotes. */
  readonly quotes10Delta?: number;
  /** The calendar envelope W_i(k) = max(w_i(k), W_{i-1}(k)) is applied to this slice (src/quant/chain/modelSurface.ts). */
  readonly calendarRepaired?: boolean;
  /** The butterfly check used: Gatheral-Jacquier g(k) (SVI) or the density on a strike grid (SABR, Vanna-Volga). */
  readonly arbitrageCheck?: string;
  /** Minimum of g(k) (SVI) or of the density of F_T/F on the grid (SABR, Vanna-Volga); null when not computed. */
  readonly minDensity?: number | null;
  /** Observation time (Unix s) of the chain the served parameters were fitted to. */
  readonly fittedAt?: number;
  /** Why the newest fit of this expiry was rejected (status `kept-previous`). */
  readonly rejectedReason?: string;
  /** ATM check: model minus market ATM vol at k = 0 in vol points; null when the quotes do not straddle F. */
  readonly atmErrorVolPts?: number | null;
  /** Warnings of the calibration (ATM gap, sparse fit, remaining arbitrage). */
  readonly warnings?: readonly string[];
  /**
   * RMSE (vol points, against the same quotes' mark IVs) of the same model's UNCONSTRAINED per-expiry fit: the
   * best fit of this expiry alone before any butterfly repair or calendar envelope. null for sparse and
   * kept-previous slices (no such fit).
   */
  readonly referenceRmseVolPts?: number | null;
  /** What the no-arbitrage repairs cost: served `rmseVolPts` minus `referenceRmseVolPts` (vol points); null with it. */
  readonly repairCostVolPts?: number | null;
  /**
   * Information (issue 26): RMSE (vol points, against the marks) of the model's PLAIN equal-weight least-squares fit of
   * this expiry, before any repair; the served fit minimizes the spread-weighted objective instead. Computed on cold
   * fits (start, reconnect, the 60 s safety net); warm refits keep the expiry's last figure (issue 22). null for
   * sparse and kept-previous slices and for models that do not compute it (Vanna-Volga).
   */
  readonly plainRmseVolPts?: number | null;
  /** Largest |served - mark| (vol points) at the quotes between the 25-delta strikes (mark call delta 0.25..0.75); null without such quotes. */
  readonly maxError25DeltaVolPts?: number | null;
}

/** Counts of repairs and rejections of one (source, pair, model) since the calibrator started. */
export interface ArbitrageCounts {
  /** Expiry fits made. */
  readonly fits: number;
  /** Fits whose violation a constrained refit removed (butterfly; for SVI also the calendar floor). */
  readonly constrainedRefits: number;
  /** Slices served with the calendar envelope (raw slice below the earlier expiry somewhere on the grid). */
  readonly calendarRepaired: number;
  /** Fits rejected (butterfly arbitrage left after the refit). */
  readonly rejected: number;
  /** Of the rejected fits: the last good slice of the expiry was served instead. */
  readonly keptPrevious: number;
  /** Of the rejected fits: no earlier good slice existed, the expiry was left out. */
  readonly dropped: number;
}

/** No-arbitrage status of one calibrated surface (one model). */
export interface SurfaceArbitrage {
  /** Every served slice passes its butterfly check. */
  readonly butterflyFree: boolean;
  /** The raw slices were calendar-free on the grid (before the envelope). */
  readonly calendarFreeRaw: boolean;
  /** The served surface is calendar-free on the grid (w non-decreasing in T at every grid k). */
  readonly calendarFree: boolean;
  /** The calendar grid, e.g. `241 points of k in [-3, 3]`. */
  readonly calendarGrid: string;
  /** Cumulative counts of this (source, pair, model). */
  readonly counts: ArbitrageCounts;
}

/** One listed expiry of a calibrated surface. */
export interface ExpirySlice {
  readonly expirationTimestamp: number;
  /** Years from the snapshot's observationTimestamp, ACT/365. */
  readonly T: number;
  /** The expiry's forward (exchange's own: Deribit underlying_price), quote currency. */
  readonly forward: number;
  /**
   * Model parameters, numbers only (src/quant/chain/modelSurface.ts): SVI raw `a, b, rho, m, sigma` (total variance);
   * SABR `alpha, beta, rho, nu`; VANNA_VOLGA pillar strikes and vols `K25P, Katm, K25C, vol25P, volAtm, vol25C`
   * and wing strikes `K10P, K10C`, wing curvatures `wingCurvL, wingCurvR` and scales `wingScaleL, wingScaleR`
   * (second-order Castagna-Mercurio smile; src/quant/models/vannaVolga.ts); ESSVI `theta, rho, phi`
   * (src/quant/models/essvi.ts).
   */
  readonly params: Readonly<Record<string, number>>;
  readonly fit: FitDiagnostics;
  readonly quotes: readonly SmileQuote[];
}

/** Listed point of a forward curve. */
export interface ForwardPoint {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  /** Where the forward came from. */
  readonly origin: 'option-underlying' | 'future';
}

/** One model's fit of a chain: the served slices (sorted by T), what was left out, and the arbitrage status. */
export interface ModelFit {
  readonly model: VolatilityModel;
  /** Served slices sorted by T ascending (may be empty). */
  readonly slices: readonly ExpirySlice[];
  /** Expiries this model could not serve, and why. */
  readonly skipped: ReadonlyArray<{ expirationTimestamp: number; reason: string }>;
  /** Wall-clock milliseconds of this model's fits and checks. */
  readonly calibrationMs: number;
  /** No-arbitrage status and cumulative counts (absent in fits rebuilt from documents that do not carry it). */
  readonly arbitrage?: SurfaceArbitrage;
}

/**
 * Plain (structured-clone and JSON safe) result of fitting one chain: what a calibration worker sends back and what
 * src/cache/snapshotBuilder.ts buildSnapshots turns into immutable cache snapshots (one per model).
 */
export interface ChainFit {
  readonly source: Source;
  readonly pair: Pair;
  readonly observationTimestamp: number;
  /** Null when the chain has no spot yet (then nothing is built). */
  readonly spot: number | null;
  /** Listed forward points, sorted by T. */
  readonly points: readonly ForwardPoint[];
  /** One entry per model fitted (all three from fitChain; one when rebuilt from a Kafka document). */
  readonly models: readonly ModelFit[];
  /** Expiries skipped by every model and why (too close to expiry, no usable quote). */
  readonly skipped: ReadonlyArray<{ expirationTimestamp: number; reason: string }>;
  /** Wall-clock milliseconds of the whole fit. */
  readonly calibrationMs: number;
  /** Version of the chain state the fit was made from (streams/chainState.ts ChainView.version). */
  readonly version: number;
  /**
   * What this fit did per model with the expiries it served (absent in fits rebuilt from documents): `refitted` ran
   * the model's calibration (cold or warm, sparse expiries included), `confirmed` kept the last fit because a refit
   * would move the served smile by less than the tracking tolerance (src/quant/chain/sliceGate.ts), `deferred` kept it
   * in an urgent partial fit that did not list the expiry. Counted by the metric volsurf_slice_fits_total.
   */
  readonly sliceWork?: Readonly<Partial<Record<VolatilityModel, SliceWork>>>;
}

/** Per model, the expiries of one chain fit refitted, confirmed without a refit, and deferred ({@link ChainFit.sliceWork}). */
export interface SliceWork {
  readonly refitted: number;
  readonly confirmed: number;
  readonly deferred: number;
}
