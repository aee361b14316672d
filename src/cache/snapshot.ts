/**
 * Immutable calibration results held in the cache and read by the API, the publisher and the
 * dashboard. A request reads ONE snapshot object and never sees a half-updated surface
 * (../shared/design.md). Times are Unix seconds; IVs fractions; prices in the pair's quote currency.
 */
import type { Pair, Source } from '../domain/markets.js';

/** Volatility models of the spec. Only SVI is calibrated in this slice. */
export const VOLATILITY_MODELS = ['SVI', 'SABR', 'VANNA_VOLGA'] as const;
export type VolatilityModel = (typeof VOLATILITY_MODELS)[number];

/** What the API needs of a calibrated surface (implemented by src/quant/surface.ts VolSurface). */
export interface SurfaceView {
  /** Implied vol (fraction) at maturity T (years) and strike K, given the forward F of that T. */
  impliedVol(T: number, K: number, F: number): number;
  /** Total variance sigma^2 T at maturity T (years) and log-moneyness k = ln(K/F). */
  totalVariance(T: number, k: number): number;
}

/** What the API needs of a forward curve (implemented by src/quant/forwardCurve.ts ForwardCurve). */
export interface ForwardCurveView {
  /** Spot index, quote currency. */
  readonly spot: number;
  /** Forward for maturity T (years), quote currency. */
  forward(T: number): number;
  /** Simple annualized basis (F/S - 1)/T of every listed point (spec section 7 `fixedYields`). */
  fixedYields(): Array<{ expirationTimestamp: number; value: number }>;
  /** The constant maturities 1D..12M from `observationTimestamp` (spec section 7 `constMatYields`). */
  constMatYields(observationTimestamp: number): Array<{ expirationTimestamp: number; constMat: string; value: number }>;
}

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

/** Fit diagnostics of one expiry (issue 4 widens this; the Kafka snapshot carries it). */
export interface FitDiagnostics {
  /** RMSE of model vs mark IV, vol points (1 vol point = 0.01). */
  readonly rmseVolPts: number;
  /** Largest absolute error, vol points. */
  readonly maxErrorVolPts: number;
  readonly quotesUsed: number;
  /** True when the fitted smile passes the butterfly (density) check. */
  readonly butterflyFree: boolean;
  /** How the fit was done (e.g. `raw-svi`, `flat` for a single quote). */
  readonly method: string;
  /**
   * Milliseconds of the surface fit this slice belongs to (slices are fitted in sequence, each
   * constrained by the previous one, so the time is the surface's).
   */
  readonly calibrationMs: number;
}

/** One listed expiry of a calibrated surface. */
export interface ExpirySlice {
  readonly expirationTimestamp: number;
  /** Years from the snapshot's observationTimestamp, ACT/365. */
  readonly T: number;
  /** The expiry's forward (exchange's own: Deribit underlying_price), quote currency. */
  readonly forward: number;
  /** Model parameters (raw SVI: a, b, rho, m, sigma). */
  readonly params: Readonly<Record<string, number>>;
  readonly fit: FitDiagnostics;
  readonly quotes: readonly SmileQuote[];
}

/** A calibrated surface of one (source, pair, model). */
export interface SurfaceSnapshot {
  readonly source: Source;
  readonly pair: Pair;
  readonly model: VolatilityModel;
  /** Time of the newest market data used, Unix seconds (exchange time). */
  readonly observationTimestamp: number;
  /** Spot index, quote currency. */
  readonly spot: number;
  readonly slices: readonly ExpirySlice[];
  readonly surface: SurfaceView;
  readonly forwardCurve: ForwardCurveView;
  /** Wall-clock milliseconds the whole surface calibration took. */
  readonly calibrationMs: number;
  /** Increments with every recalibration of this key. */
  readonly sequence: number;
}

/** Listed point of a forward curve. */
export interface ForwardPoint {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  /** Where the forward came from. */
  readonly origin: 'option-underlying' | 'future';
}

/** The forward curve of one (source, pair). */
export interface ForwardCurveSnapshot {
  readonly source: Source;
  readonly pair: Pair;
  readonly observationTimestamp: number;
  readonly spot: number;
  readonly points: readonly ForwardPoint[];
  readonly curve: ForwardCurveView;
  readonly sequence: number;
}

/** Key of a surface: `SOURCE:BASE/QUOTE:MODEL` (decisions.md Kafka key). */
export function surfaceKey(source: Source, pair: Pair, model: VolatilityModel): string {
  return `${source}:${pair.base}/${pair.quote}:${model}`;
}
