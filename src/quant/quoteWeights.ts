/**
 * Quote handling shared by the per-expiry smile calibrations (sviCalibration.ts, sabrCalibration.ts,
 * vannaVolga.ts): the quote type, the weights of the IV residuals, the median behind their robust
 * (MAD) scales, and the market ATM vol read off the quotes.
 *
 * Sources: the weights are those of the weighted least-squares problems of sviCalibration.ts (Zeliade
 * Systems, "Quasi-explicit calibration of Gatheral's SVI model", Zeliade white paper ZWP-0005, 2009,
 * sec. 3: the slice fit minimizes a weighted sum of squared residuals); vega weights as QuantLib's
 * SABRInterpolation with vegaWeighted = true, with Black vega per unit forward phi(d1)·sqrt(T) (F. Black,
 * "The pricing of commodity contracts", Journal of Financial Economics 3, 1976); inverse bid-ask
 * weighting and the conventions in docs/conventions.md ("Weights and loss"); median and
 * 1.4826·MAD as in Hampel et al., "Robust Statistics", 1986. Each model keeps its own defaults (SVI
 * vegaFloor 0.1, SABR 0.03: see their options) and passes them in.
 */

/** One quote of one expiry. */
export interface SviQuote {
  /** Log-moneyness ln(K/F) against the expiry's forward F. */
  readonly k: number;
  /** Implied volatility (mark IV), fraction, > 0. */
  readonly iv: number;
  /** Optional extra weight (> 0), multiplied into the weighting scheme's weight. */
  readonly weight?: number;
  /** Best bid IV, fraction; null/undefined/<= 0 when there is no bid. */
  readonly bidIv?: number | null;
  /** Best ask IV, fraction; null/undefined/<= 0 when there is no ask. */
  readonly askIv?: number | null;
  /**
   * The IV interval a quote without a two-sided market is honoured in (issue 26: model price at or below the ask and
   * within 2 price ticks of the mark; src/quant/models/fitKit.ts noBidPriceBands), lo < hi, fractions; absent: none.
   * Fits that take it (calibrateSabr) keep their smile inside it where they can.
   */
  readonly ivBand?: { readonly lo: number; readonly hi: number } | null;
}

/**
 * Weights of the IV residuals (normalized to mean 1 by the caller):
 * - `uniform`: 1;
 * - `vega`: Black vega per unit forward, phi(d1)·sqrt(T) with d1 = -k/sqrt(w) + sqrt(w)/2, relative to
 *   the largest, floored at `vegaFloor` (so wings still count);
 * - `spread`: 1 / max(askIv - bidIv, minSpread) where both sides exist, the median of those weights
 *   elsewhere (inverse bid-ask weighting);
 * - `auto`: `spread` when at least half of the quotes have a two-sided IV market, else `vega`;
 * - `halfSpread`: the spread-weighted least squares of issue 26, 1 / h^2 with h the quote's half-spread in IV
 *   (see {@link quoteHalfSpreads}): minimizing sum ((iv_fit - mark) / h)^2.
 */
export type SviWeighting = 'auto' | 'uniform' | 'vega' | 'spread' | 'halfSpread';

/** Floor of the half-spread h of the `halfSpread` objective, IV fraction (0.25 vol pt). */
export const HALF_SPREAD_FLOOR = 0.0025;
/** Floor of the h given to a quote without a two-sided market (no bid), IV fraction (2 vol pts). */
export const NO_BID_HALF_SPREAD_FLOOR = 0.02;

/**
 * The scale h_i (IV fraction) of each quote's residual in the spread-weighted objective
 * min sum_i ((iv_fit(k_i) - mark_i) / h_i)^2 (issue 26; docs/conventions.md "Weights and loss"):
 * - a two-sided quote (0 < bid IV < ask IV): h = max((ask IV - bid IV) / 2, {@link HALF_SPREAD_FLOOR});
 * - a quote without a two-sided market (no bid, or no ask): the widest h of the expiry's two-sided quotes, at least
 *   {@link NO_BID_HALF_SPREAD_FLOOR} (2 vol pts): its mark is the exchange's, not a market, and worth 1 to 2 ticks.
 * Weighting residuals by the inverse bid-ask spread is the usual reading of "fit inside the quotes": Cont and
 * Ben Hamida, "Recovering volatility from option prices by evolutionary optimization", J. Computational Finance 8(4),
 * 2005, sec. 2 (weights proportional to 1 / spread^2, residuals measured in units of the bid-ask spread).
 * @param qs quotes of ONE expiry (IVs as fractions)
 * @returns h per quote (same order), IV fraction, > 0
 */
export function quoteHalfSpreads(qs: readonly SviQuote[]): number[] {
  const h = qs.map((q) => (hasTwoSidedIv(q) ? Math.max(((q.askIv as number) - (q.bidIv as number)) / 2, HALF_SPREAD_FLOOR) : Number.NaN));
  let widest = NO_BID_HALF_SPREAD_FLOOR;
  for (const x of h) if (x > widest) widest = x;
  return h.map((x) => (Number.isNaN(x) ? widest : x));
}

/** The model's parameters of {@link computeQuoteWeights}. */
export interface QuoteWeightOptions {
  /** Floor of relative vega weights (fraction of the largest vega), e.g. SVI 0.1, SABR 0.03. */
  readonly vegaFloor: number;
  /** Floor of the bid-ask IV spread (fraction) in `spread` weights, e.g. 0.005 (0.5 vol pt). */
  readonly minSpread: number;
}

/** True when the quote has a usable two-sided IV market: 0 < bidIv < askIv, askIv finite. */
export function hasTwoSidedIv(q: SviQuote): boolean {
  return q.bidIv != null && q.askIv != null && q.bidIv > 0 && q.askIv > q.bidIv && Number.isFinite(q.askIv);
}

/** The scheme `auto` stands for on these quotes (see {@link SviWeighting}); other schemes unchanged. */
export function resolveWeighting(w: SviWeighting, qs: readonly SviQuote[]): Exclude<SviWeighting, 'auto'> {
  if (w !== 'auto') return w;
  const two = qs.filter(hasTwoSidedIv).length;
  return two * 2 >= qs.length && two > 0 ? 'spread' : 'vega';
}

/**
 * Residual weight of each quote (same order), not normalized: the scheme's weight (see
 * {@link SviWeighting}) times the quote's own `weight` (default 1).
 * @param qs valid quotes (finite k, iv > 0)
 * @param T years ACT/365 (> 0)
 */
export function computeQuoteWeights(qs: readonly SviQuote[], T: number, w: Exclude<SviWeighting, 'auto'>, o: QuoteWeightOptions): number[] {
  let base: number[];
  if (w === 'uniform') base = qs.map(() => 1);
  else if (w === 'halfSpread') base = quoteHalfSpreads(qs).map((h) => 1 / (h * h));
  else if (w === 'vega') {
    const vegas = qs.map((q) => {
      const sw = q.iv * Math.sqrt(T);
      const d1 = -q.k / sw + sw / 2;
      return Math.exp(-0.5 * d1 * d1) * Math.sqrt(T);
    });
    const mx = Math.max(...vegas);
    base = vegas.map((x) => Math.max(mx > 0 ? x / mx : 1, o.vegaFloor));
  } else {
    const ws = qs.map((q) => (hasTwoSidedIv(q) ? 1 / Math.max((q.askIv as number) - (q.bidIv as number), o.minSpread) : Number.NaN));
    const known = ws.filter((x) => !Number.isNaN(x));
    const med = known.length > 0 ? median(known) : 1;
    base = ws.map((x) => (Number.isNaN(x) ? med : x));
  }
  return base.map((b, i) => b * ((qs[i] as SviQuote).weight ?? 1));
}

/**
 * The quotes a calibration can use, sorted by k (ties in input order), with their input indices; and
 * the indices of the others (non-finite k, iv not finite and > 0, or a `weight` not finite and > 0).
 * @param caller the calibration's name, for the error message
 * @throws RangeError when no quote is valid
 */
export function validSortedQuotes(quotes: readonly SviQuote[], caller: string): { valid: { q: SviQuote; i: number }[]; dropped: number[] } {
  const valid: { q: SviQuote; i: number }[] = [];
  const dropped: number[] = [];
  quotes.forEach((q, i) => {
    const ok = Number.isFinite(q.k) && Number.isFinite(q.iv) && q.iv > 0 && (q.weight === undefined || (Number.isFinite(q.weight) && q.weight > 0));
    if (ok) valid.push({ q, i });
    else dropped.push(i);
  });
  if (valid.length === 0) throw new RangeError(`${caller}: no valid quote (need finite k and iv > 0)`);
  valid.sort((x, y) => x.q.k - y.q.k || x.i - y.i);
  return { valid, dropped };
}

/**
 * Market ATM IV: linear interpolation in k of the quotes around k = 0 (the quote itself at k = 0);
 * null when 0 is outside the quoted k range.
 * @param k log-moneyness, ascending
 * @param iv IV of each k, fraction
 */
export function marketAtmIv(k: ArrayLike<number>, iv: ArrayLike<number>): number | null {
  const n = k.length;
  if (n === 0 || (k[0] as number) > 0 || (k[n - 1] as number) < 0) return null;
  for (let i = 0; i < n; i++) {
    if ((k[i] as number) === 0) return iv[i] as number;
    if (i + 1 < n && (k[i] as number) < 0 && (k[i + 1] as number) > 0) {
      const t = -(k[i] as number) / ((k[i + 1] as number) - (k[i] as number));
      return (iv[i] as number) * (1 - t) + (iv[i + 1] as number) * t;
    }
  }
  return null;
}

/** Median of `xs` (mean of the two middle values for an even count); NaN for none. Does not modify `xs`. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 === 1 ? (s[h] as number) : ((s[h - 1] as number) + (s[h] as number)) / 2;
}
