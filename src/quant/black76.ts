/**
 * Black (1976) model on the forward, with discount factor 1 (r = 0), as the exchanges mark options
 * (decisions.md "Quant conventions"; docs/conventions.md).
 *
 *   d1 = (ln(F/K) + sigma^2 T / 2) / (sigma sqrt T),   d2 = d1 - sigma sqrt T
 *   call = F N(d1) - K N(d2),   put = K N(-d2) - F N(-d1)
 *
 * Prices are undiscounted, in quote currency per one unit of the underlying (e.g. USD per 1 BTC option).
 * Greeks are the raw analytic derivatives of that price, in natural units (per unit of F, per 1.0 of
 * volatility, per year). Unit conversions of the API (per vol point, per day, base currency) live in
 * vanilla.ts, not here.
 *
 * Sources: F. Black, "The pricing of commodity contracts", Journal of Financial Economics 3 (1976) 167-179,
 * (the futures-option formula, with the discount factor e^{-rT} set to 1); E. G. Haug, "The Complete Guide
 * to Option Pricing Formulas", 2nd ed. (McGraw-Hill 2007), chapter 1, the Black-76 options-on-futures
 * formula and its numerical example (F = 19, K = 19, T = 0.75, r = 0.10, sigma = 0.28: put 1.7011, checked
 * in the test), and chapter 2 "Black-Scholes-Merton Greeks" (generalized with cost of carry b; here b = 0
 * and r = 0): delta, gamma, vega, DdeltaDvol (vanna), DvegaDvol (volga/vomma), theta, strike delta and
 * strike gamma.
 * Tested in test/quant/black76.test.ts.
 */
import { normCdf, normPdf } from './normal.js';

/** Option type: 'C' call, 'P' put. */
export type OptionType = 'C' | 'P';

/** The two Black-Scholes arguments d1 and d2 (dimensionless). */
export interface D1D2 {
  readonly d1: number;
  readonly d2: number;
}

/**
 * Raw analytic Black-76 figures (r = 0) for one unit of the underlying, in quote currency.
 * Formulas as in Haug (2007) ch. 2 with b = 0, r = 0.
 */
export interface Black76Greeks {
  /** Undiscounted option price, quote currency. */
  readonly price: number;
  /** dV/dF: call N(d1), put N(d1) - 1. Dimensionless (base units). */
  readonly delta: number;
  /** d2V/dF2 = phi(d1) / (F sigma sqrt T). Per quote-currency unit of F. */
  readonly gamma: number;
  /** dV/dsigma = F phi(d1) sqrt T, per 1.0 (100 vol points) of volatility. */
  readonly vega: number;
  /** d2V/dsigma2 = vega d1 d2 / sigma, per 1.0 of volatility squared. */
  readonly volga: number;
  /** d2V/dF dsigma = -phi(d1) d2 / sigma, per 1.0 of volatility. */
  readonly vanna: number;
  /** dV/dt (calendar time) = -dV/dT = -F phi(d1) sigma / (2 sqrt T), quote currency per year. */
  readonly theta: number;
  /** dV/dK: call -N(d2), put N(-d2) (the undiscounted digital, with a sign). */
  readonly dualDelta: number;
  /** d2V/dK2 = phi(d2) / (K sigma sqrt T) (the undiscounted risk-neutral density of F_T at K). */
  readonly dualGamma: number;
}

function checkForwardStrike(fn: string, F: number, K: number): void {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`${fn}: forward F must be a finite number > 0, got ${F}`);
  if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`${fn}: strike K must be a finite number > 0, got ${K}`);
}

function checkTimeVol(fn: string, T: number, sigma: number): void {
  if (Number.isNaN(T) || T === Infinity) throw new RangeError(`${fn}: T must be a finite number of years, got ${T}`);
  if (Number.isNaN(sigma) || sigma === Infinity) throw new RangeError(`${fn}: sigma must be a finite fraction, got ${sigma}`);
}

/** Total standard deviation s = sigma sqrt T, or 0 when T <= 0 or sigma <= 0 (degenerate: no time value). */
function stdDev(T: number, sigma: number): number {
  return T > 0 && sigma > 0 ? sigma * Math.sqrt(T) : 0;
}

/**
 * Intrinsic value on the forward, max(F - K, 0) for a call and max(K - F, 0) for a put (quote currency).
 * @throws RangeError when F or K is not a finite number > 0
 */
export function intrinsicValue(F: number, K: number, optionType: OptionType): number {
  checkForwardStrike('intrinsicValue', F, K);
  return optionType === 'C' ? Math.max(F - K, 0) : Math.max(K - F, 0);
}

/**
 * d1 and d2 of Black (1976): d1 = (ln(F/K) + s^2/2)/s, d2 = d1 - s with s = sigma sqrt T (Haug 2007 ch. 1, Black-76).
 * Degenerate case s = 0 (T <= 0 or sigma <= 0): d1 = d2 = +Infinity if F > K, -Infinity if F < K, 0 if F = K,
 * the limits that make N(d1) the step delta.
 * @throws RangeError when F or K is not finite > 0, or T or sigma is NaN/Infinity
 */
export function d1d2(F: number, K: number, T: number, sigma: number): D1D2 {
  checkForwardStrike('d1d2', F, K);
  checkTimeVol('d1d2', T, sigma);
  const s = stdDev(T, sigma);
  const x = Math.log(F / K);
  if (s === 0) {
    const lim = x > 0 ? Infinity : x < 0 ? -Infinity : 0;
    return { d1: lim, d2: lim };
  }
  const d1 = x / s + 0.5 * s;
  return { d1, d2: d1 - s };
}

/**
 * Undiscounted Black-76 price in quote currency per one unit of underlying (r = 0):
 * call F N(d1) - K N(d2), put K N(-d2) - F N(-d1) (Black 1976; Haug 2007 ch. 1 with r = 0).
 * Put and call are each evaluated from their own formula (not by parity) so an out-of-the-money option
 * keeps its relative accuracy. T <= 0 or sigma <= 0 gives the intrinsic value. The result is never below
 * intrinsic (rounding is clamped).
 *
 * @param F forward of the expiry, quote currency (> 0)
 * @param K strike, quote currency (> 0)
 * @param T time to expiry in years ACT/365
 * @param sigma implied volatility as a fraction (0.6 = 60 %)
 * @param optionType 'C' or 'P'
 * @throws RangeError when F or K is not finite > 0, or T or sigma is NaN/Infinity
 */
export function black76Price(F: number, K: number, T: number, sigma: number, optionType: OptionType): number {
  const { d1, d2 } = d1d2(F, K, T, sigma);
  const intrinsic = optionType === 'C' ? Math.max(F - K, 0) : Math.max(K - F, 0);
  if (stdDev(T, sigma) === 0) return intrinsic;
  const v = optionType === 'C' ? F * normCdf(d1) - K * normCdf(d2) : K * normCdf(-d2) - F * normCdf(-d1);
  return Math.max(v, intrinsic);
}

/**
 * Black-76 price and raw analytic Greeks (r = 0), see {@link Black76Greeks} for each formula and unit
 * (Haug 2007 ch. 2 with b = 0, r = 0: delta, gamma, vega, DdeltaDvol = vanna, DvegaDvol = volga,
 * theta, strike delta, strike gamma).
 * Degenerate case (T <= 0 or sigma <= 0): price = intrinsic, delta is the step (call 1 if F > K, 0.5 if
 * F = K, 0 if F < K; put = call - 1), dualDelta the matching step in K, every other Greek 0. Never NaN.
 * @throws RangeError when F or K is not finite > 0, or T or sigma is NaN/Infinity
 */
export function black76Greeks(F: number, K: number, T: number, sigma: number, optionType: OptionType): Black76Greeks {
  const { d1, d2 } = d1d2(F, K, T, sigma);
  const s = stdDev(T, sigma);
  const isCall = optionType === 'C';
  const nd1 = normCdf(d1);
  const nd2 = normCdf(d2);
  const delta = isCall ? nd1 : nd1 - 1;
  const dualDelta = isCall ? -nd2 : 1 - nd2;
  const price = black76Price(F, K, T, sigma, optionType);
  const pdf1 = normPdf(d1);
  if (s === 0 || pdf1 === 0) {
    return { price, delta, gamma: 0, vega: 0, volga: 0, vanna: 0, theta: 0, dualDelta, dualGamma: 0 };
  }
  const sqrtT = Math.sqrt(T);
  const vega = F * pdf1 * sqrtT;
  return {
    price,
    delta,
    gamma: pdf1 / (F * s),
    vega,
    volga: (vega * d1 * d2) / sigma,
    vanna: (-pdf1 * d2) / sigma,
    theta: (-F * pdf1 * sigma) / (2 * sqrtT),
    dualDelta,
    dualGamma: normPdf(d2) / (K * s),
  };
}
