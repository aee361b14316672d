/**
 * Helpers shared by the per-model slice fits of this folder: the calibrations' quote form, error statistics of a
 * smile against the marks, and the grid of every density check of a SERVED smile.
 */
import type { SviQuote } from '../sviCalibration.js';
import type { SliceInput, SliceQuote } from './types.js';
import { hasTwoSidedIv, quoteHalfSpreads } from '../quoteWeights.js';
import { black76Price } from '../black76.js';
import { impliedVolBlack76 } from '../impliedVol.js';
import type { OptionPriceTick } from '../../domain/optionTicks.js';

/** The quotes in the calibrations' form (src/quant/quoteWeights.ts SviQuote). */
export function toCalibrationQuotes(g: SliceInput): SviQuote[] {
  return g.quotes.map((q) => ({ k: q.k, iv: q.markIv, bidIv: q.bidIv, askIv: q.askIv }));
}

/** Price ticks a no-bid quote's model price may lie from its mark (issue 26: "within 2 ticks of the mark"). */
export const NO_BID_TICKS = 2;

/**
 * The calibration quotes of a slice with issue 26's price band on each quote without a two-sided market: the IV
 * interval whose Black-76 price (undiscounted, r = 0; black76.ts) lies within {@link NO_BID_TICKS} price ticks of the
 * mark's price and, where the quote has an ask, at or below the ask (IV at most the ask IV). The ticks are the
 * exchange's (src/domain/optionTicks.ts) at the mark's premium. Bounds by inverting Black-76 (impliedVol.ts): a
 * price below the intrinsic value gives lo = 0, one at or above the price bound none (hi = +Infinity). No rule (null)
 * or an empty interval: the quote carries no band.
 * @param g the slice (T years, forward and strikes in the quote currency)
 * @param tick the chain's price tick rule, or null
 */
export function noBidPriceBands(g: SliceInput, tick: OptionPriceTick | null | undefined): SviQuote[] {
  const quotes = toCalibrationQuotes(g);
  if (!tick) return quotes;
  return quotes.map((c, i) => {
    if (hasTwoSidedIv(c)) return c;
    const q = g.quotes[i]!;
    const type = q.optionType ?? (q.k < 0 ? 'P' : 'C');
    const mark = black76Price(g.forward, q.strike, g.T, q.markIv, type);
    const t = NO_BID_TICKS * tick(mark, g.forward);
    const ivAt = (price: number, fallback: number): number => {
      try {
        return impliedVolBlack76(price, g.forward, q.strike, g.T, type);
      } catch {
        return fallback;
      }
    };
    const lo = ivAt(mark - t, 0);
    let hi = ivAt(mark + t, Number.POSITIVE_INFINITY);
    if (q.askIv !== null && q.askIv > 0 && Number.isFinite(q.askIv)) hi = Math.min(hi, q.askIv);
    return lo < hi ? { ...c, ivBand: { lo, hi } } : c;
  });
}

/** x when it is a finite number, else null. */
export function finiteOrNull(x: number | null | undefined): number | null {
  return typeof x === 'number' && Number.isFinite(x) ? x : null;
}

/** RMSE and max |error| (vol points) of a smile w(k) against the slice's mark IVs. */
export function errorsAgainst(w: (k: number) => number, g: SliceInput): { rmse: number; max: number } {
  let ss = 0;
  let mx = 0;
  let n = 0;
  for (const q of g.quotes) {
    const v = Math.sqrt(w(q.k) / g.T);
    const e = 100 * (v - q.markIv);
    if (!Number.isFinite(e)) continue;
    ss += e * e;
    mx = Math.max(mx, Math.abs(e));
    n++;
  }
  return { rmse: n > 0 ? Math.sqrt(ss / n) : 0, max: mx };
}

/** Half-width of the served-smile density check, ATM standard deviations. */
export const SERVED_CHECK_STD = 6;

/**
 * Grid of every density check of a SERVED smile (SABR's served check, Vanna-Volga's calibration and repair): 401
 * strikes over 6 ATM standard deviations widened to the quoted log-moneyness range of the expiry, so that the wing
 * junctions (at 4 standard deviations or the quotes) are inside it. Options of smileArbitrage.ts checkSmileDensity.
 */
export function servedGrid(g: SliceInput): { kMin: number; kMax: number; nStd: number } {
  let kMin = Infinity;
  let kMax = -Infinity;
  for (const q of g.quotes) {
    if (q.k < kMin) kMin = q.k;
    if (q.k > kMax) kMax = q.k;
  }
  return { kMin, kMax, nStd: SERVED_CHECK_STD };
}

/**
 * The weights of the spread-weighted objective of SVI and SABR (issue 26; src/quant/quoteWeights.ts `halfSpread`),
 * 1/h^2 per quote with h = max(half-spread in IV, 0.25 vol pt) and quotes without a two-sided market at the widest h
 * of the expiry (at least 2 vol pts): the W of SmileModel.objectiveWeights (the refit gate, src/quant/chain/sliceGate.ts).
 */
export function halfSpreadObjectiveWeights(quotes: readonly SliceQuote[]): Float64Array {
  const h = quoteHalfSpreads(quotes.map((q) => ({ k: q.k, iv: q.markIv, bidIv: q.bidIv, askIv: q.askIv })));
  return Float64Array.from(h, (x) => 1 / (x * x));
}
