/**
 * Immutable calibration results held in the cache and read by the API, the publisher and the
 * dashboard. A request reads ONE snapshot object and never sees a half-updated surface
 * (docs/architecture.md). Times are Unix seconds; IVs fractions; prices in the pair's quote currency.
 */
import type { Pair, Source } from '../domain/markets.js';
import type { ExpirySlice, ForwardPoint, SurfaceArbitrage } from '../domain/chainFit.js';
import type { VolatilityModel } from '../domain/volatilityModels.js';
import type { SmileFigures } from '../quant/smileFigures.js';

// The fit's shapes and the list of models live in src/domain (the chain fit's output); re-exported for the cache's readers.
export { VOLATILITY_MODELS, type VolatilityModel } from '../domain/volatilityModels.js';
export {
  QUALITY_WARNING_PREFIX,
  type ArbitrageCounts,
  type ExpirySlice,
  type FitDiagnostics,
  type ForwardPoint,
  type SliceStatus,
  type SmileQuote,
  type SurfaceArbitrage,
} from '../domain/chainFit.js';


/** What the API needs of a calibrated surface (implemented by src/quant/surface.ts VolSurface). */
export interface SurfaceView {
  /** Implied vol (fraction) at maturity T (years) and strike K, given the forward F of that T. */
  impliedVol(T: number, K: number, F: number): number;
  /** Total variance sigma^2 T at maturity T (years) and log-moneyness k = ln(K/F). */
  totalVariance(T: number, k: number): number;
  /** Optional: the smile w(k) at a fixed T with its interpolation data found once (same numbers as totalVariance). */
  totalVarianceAt?(T: number): (k: number) => number;
  /** Analytic dw/dk at (T, k) where the model has it (SVI); null otherwise. Optional for hand-built views. */
  totalVarianceDk?(T: number, k: number): number | null;
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

/** iVSummary figures of one listed expiry or constant maturity (src/quant/smileFigures.ts; fractions, null = no strike). */
export interface IvSummaryEntry extends SmileFigures {
  /** Expiry (listed) or observationTimestamp + days · 86400 (constant maturity), Unix seconds. */
  readonly expirationTimestamp: number;
  /** The constant-maturity label 1W..9M (constant-maturity entries only). */
  readonly constMat?: '1W' | '2W' | '1M' | '2M' | '3M' | '6M' | '9M';
}

/** The iVSummary figures of one surface snapshot (src/cache/history.ts summarizeSurface). */
export interface IvSummary {
  readonly observationTimestamp: number;
  /** One entry per listed (fitted) expiry, sorted by expiry. */
  readonly listed: readonly IvSummaryEntry[];
  /** One entry per constant maturity, 1W..9M in order. */
  readonly constMat: readonly IvSummaryEntry[];
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
  /** Wall-clock milliseconds this model's fit of every expiry took (in the calibration worker). */
  readonly calibrationMs: number;
  /** Increments with every recalibration of this key. */
  readonly sequence: number;
  /** No-arbitrage status and repair/rejection counts (set by src/quant/chain/chainFit.ts; absent on hand-built snapshots). */
  readonly arbitrage?: SurfaceArbitrage;
  /** Listed expiries this model could not serve, and why. */
  readonly skipped?: ReadonlyArray<{ readonly expirationTimestamp: number; readonly reason: string }>;
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
