/**
 * OKX's and Bybit's printed option Greeks, PRIVATE to the simulator (built on its own black76.ts, so
 * that the service's src/quant/exchangeGreeks.ts can be checked against an independent implementation).
 * The conventions were measured on the recorded samples (docs/conventions.md "Exchange valuation
 * conventions"):
 *
 * OKX opt-summary (coin-margined options), with F the forward, S the index, b = ln(F/S)/T,
 * h = min(1, 365 T) and c = Black-76 price / F (the premium in coin):
 * - `deltaBS` N(d1) (put N(d1) - 1); `gammaBS` phi(d1) / (S sigma sqrt T); `vegaBS` S phi(d1) sqrt T / 100;
 *   `thetaBS` (S/F)(-F phi(d1) sigma / (2 sqrt T) - b K N(d2)) h / 365 for a call,
 *   (S/F)(-F phi(d1) sigma / (2 sqrt T) + b K N(-d2)) h / 365 for a put: Black-Scholes on the index
 *   with the rate implied by the forward;
 * - coin `delta` deltaBS - c; `gamma` phi(d1)/(sigma sqrt T) - 2 delta; `vega` phi(d1) sqrt T / 100;
 *   `theta` -phi(d1) sigma / (2 sqrt T) h / 365.
 * Bybit option tickers (USDC): Black-76 on the forward, delta N(d1), gamma phi(d1)/(F sigma sqrt T) h,
 * vega F phi(d1) sqrt T / 100, theta -F phi(d1) sigma / (2 sqrt T) h / 365.
 */
import { black76Price, normCdf, normPdf, type OptionType } from './black76.js';

/** h = min(1, 365 T): the fraction of a day left, capped at one day. */
function dayScale(T: number): number {
  return Math.min(1, Math.max(T, 0) * 365);
}

/** OKX `opt-summary` Greeks of one coin-margined option (see the module docstring). */
export interface OkxGreeks {
  /** Premium in coin (Black-76 / F). */
  readonly coinPrice: number;
  readonly deltaBS: number;
  readonly gammaBS: number;
  readonly vegaBS: number;
  readonly thetaBS: number;
  readonly delta: number;
  readonly gamma: number;
  readonly vega: number;
  readonly theta: number;
}

/**
 * OKX's opt-summary Greeks. F forward, S index (USD), K strike, T years, sigma fraction.
 * @returns all-zero Greeks (and the intrinsic coin price) when T or sigma is not > 0.
 */
export function okxGreeks(type: OptionType, F: number, S: number, K: number, T: number, sigma: number): OkxGreeks {
  const coinPrice = black76Price(type, F, K, T, sigma) / F;
  const sd = sigma * Math.sqrt(Math.max(T, 0));
  if (!(sd > 0)) {
    const d = type === 'call' ? (F > K ? 1 : 0) : F < K ? -1 : 0;
    return { coinPrice, deltaBS: d, gammaBS: 0, vegaBS: 0, thetaBS: 0, delta: d - coinPrice, gamma: 0, vega: 0, theta: 0 };
  }
  const d1 = Math.log(F / K) / sd + sd / 2;
  const d2 = d1 - sd;
  const pdf = normPdf(d1);
  const h = dayScale(T);
  const b = Math.log(F / S) / T;
  const theta76 = (-F * pdf * sigma) / (2 * Math.sqrt(T));
  const carry = type === 'call' ? -b * K * normCdf(d2) : b * K * normCdf(-d2);
  const deltaBS = type === 'call' ? normCdf(d1) : normCdf(d1) - 1;
  const delta = deltaBS - coinPrice;
  return {
    coinPrice,
    deltaBS,
    gammaBS: pdf / (S * sd),
    vegaBS: (S * pdf * Math.sqrt(T)) / 100,
    thetaBS: ((S / F) * (theta76 + carry) * h) / 365,
    delta,
    gamma: pdf / sd - 2 * delta,
    vega: (pdf * Math.sqrt(T)) / 100,
    theta: ((theta76 / F) * h) / 365,
  };
}

/** Bybit option ticker Greeks (USDC). */
export interface BybitGreeks {
  readonly delta: number;
  readonly gamma: number;
  readonly vega: number;
  readonly theta: number;
}

/** Bybit's option ticker Greeks (see the module docstring); zeros (delta the step) when T or sigma is not > 0. */
export function bybitGreeks(type: OptionType, F: number, K: number, T: number, sigma: number): BybitGreeks {
  const sd = sigma * Math.sqrt(Math.max(T, 0));
  if (!(sd > 0)) return { delta: type === 'call' ? (F > K ? 1 : 0) : F < K ? -1 : 0, gamma: 0, vega: 0, theta: 0 };
  const d1 = Math.log(F / K) / sd + sd / 2;
  const pdf = normPdf(d1);
  const h = dayScale(T);
  return {
    delta: type === 'call' ? normCdf(d1) : normCdf(d1) - 1,
    gamma: (pdf / (F * sd)) * h,
    vega: (F * pdf * Math.sqrt(T)) / 100,
    theta: (((-F * pdf * sigma) / (2 * Math.sqrt(T))) * h) / 365,
  };
}
