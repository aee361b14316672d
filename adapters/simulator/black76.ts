/**
 * Black-76 pricing, greeks and implied volatility, PRIVATE to the simulator (the simulator is
 * the "exchange"; the service's own src/quant is written and tested independently of it).
 *
 * Model: undiscounted Black-76 on the forward F (discount factor 1, r = 0, as Deribit marks
 * options: ticker `interest_rate` is 0). Source: F. Black, "The pricing of commodity contracts",
 * J. Financial Economics 3 (1976) p.177, eqs. (9)-(10) with r = 0:
 *   call = F N(d1) - K N(d2),  put = K N(-d2) - F N(-d1),
 *   d1 = (ln(F/K) + sigma^2 T / 2) / (sigma sqrt T),  d2 = d1 - sigma sqrt T.
 * Units: F, K and prices in quote currency (USD or USDC); sigma a FRACTION per year; T in years
 * (ACT/365).
 */

const SQRT_2PI = 2.5066282746310002;

/**
 * Standard normal cumulative distribution N(x), double precision (absolute error about 1e-15).
 * Source: J. F. Hart, "Computer Approximations" (1968), algorithm 5666, as given by G. West,
 * "Better approximations to cumulative normal functions", Wilmott Magazine (2005), Figure 2.
 */
export function normCdf(x: number): number {
  const a = Math.abs(x);
  let c: number;
  if (a > 37) {
    c = 0;
  } else {
    const e = Math.exp((-a * a) / 2);
    if (a < 7.07106781186547) {
      let n = 3.52624965998911e-2 * a + 0.700383064443688;
      n = n * a + 6.37396220353165;
      n = n * a + 33.912866078383;
      n = n * a + 112.079291497871;
      n = n * a + 221.213596169931;
      n = n * a + 220.206867912376;
      let d = 8.83883476483184e-2 * a + 1.75566716318264;
      d = d * a + 16.064177579207;
      d = d * a + 86.7807322029461;
      d = d * a + 296.564248779674;
      d = d * a + 637.333633378831;
      d = d * a + 793.826512519948;
      d = d * a + 440.413735824752;
      c = (e * n) / d;
    } else {
      let b = a + 0.65;
      b = a + 4 / b;
      b = a + 3 / b;
      b = a + 2 / b;
      b = a + 1 / b;
      c = e / b / SQRT_2PI;
    }
  }
  return x > 0 ? 1 - c : c;
}

/** Standard normal density phi(x). */
export function normPdf(x: number): number {
  return Math.exp((-x * x) / 2) / SQRT_2PI;
}

/** Option type as Deribit spells it in `option_type`. */
export type OptionType = 'call' | 'put';

/**
 * Undiscounted Black-76 price in quote currency (USD/USDC).
 * The out-of-the-money side is computed directly and the in-the-money side by put-call parity
 * C - P = F - K (no cancellation for deep options).
 * @param F forward (> 0); @param K strike (> 0); @param T years (>= 0); @param sigma fraction (>= 0).
 * @returns the price; intrinsic value when T or sigma is 0.
 */
export function black76Price(type: OptionType, F: number, K: number, T: number, sigma: number): number {
  const sd = sigma * Math.sqrt(Math.max(T, 0));
  if (!(sd > 0)) return Math.max(type === 'call' ? F - K : K - F, 0);
  const d1 = Math.log(F / K) / sd + sd / 2;
  const d2 = d1 - sd;
  const otmCall = K >= F;
  const otm = otmCall ? F * normCdf(d1) - K * normCdf(d2) : K * normCdf(-d2) - F * normCdf(-d1);
  const v = Math.max(otm, 0);
  if (type === 'call') return otmCall ? v : v + (F - K);
  return otmCall ? v + (K - F) : v;
}

/** Greeks in Deribit's ticker conventions (all in quote currency, even for inverse options). */
export interface Black76Greeks {
  /** Plain forward Black delta: N(d1) for a call, N(d1) - 1 for a put. */
  readonly delta: number;
  /** d(delta)/dF = phi(d1) / (F sigma sqrt T), per 1 unit of quote currency. */
  readonly gamma: number;
  /** Price change per one vol point (0.01): F phi(d1) sqrt T / 100. */
  readonly vega: number;
  /** Price change per calendar day from time decay: -F phi(d1) sigma / (2 sqrt T) / 365. */
  readonly theta: number;
  /** Per 1% rate move, Black-Scholes spot form: K T N(d2) / 100 (call), -K T N(-d2) / 100 (put). */
  readonly rho: number;
}

/**
 * Black-76 greeks as Deribit prints them in `greeks` (checked against the recorded ticker
 * BTC-30SEP22-60000-C in exchange-samples/deribit/crypto-msg-parser__ticker-notifications_2022-06.jsonl:
 * F 30220.5, mark_iv 67.7, T 0.3286 gives delta 0.0578, vega 20.05, theta -5.66, rho 4.91).
 * @returns all zeros when T <= 0 or sigma <= 0.
 */
export function black76Greeks(type: OptionType, F: number, K: number, T: number, sigma: number): Black76Greeks {
  const sqrtT = Math.sqrt(Math.max(T, 0));
  const sd = sigma * sqrtT;
  if (!(sd > 0)) return { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 };
  const d1 = Math.log(F / K) / sd + sd / 2;
  const d2 = d1 - sd;
  const pdf = normPdf(d1);
  const isCall = type === 'call';
  return {
    delta: isCall ? normCdf(d1) : normCdf(d1) - 1,
    gamma: pdf / (F * sd),
    vega: (F * pdf * sqrtT) / 100,
    theta: (-F * pdf * sigma) / (2 * sqrtT) / 365,
    rho: isCall ? (K * T * normCdf(d2)) / 100 : (-K * T * normCdf(-d2)) / 100,
  };
}

/**
 * Black-76 implied volatility (fraction) of an undiscounted price in quote currency, by a
 * bracketed Newton iteration on the out-of-the-money equivalent price (safeguarded with
 * bisection; converges to |sigma error| < 1e-10).
 * @param guess starting volatility (fraction), e.g. the mark IV.
 * @returns NaN when the price is outside the no-arbitrage bounds (at or below intrinsic, or
 *   at or above F for a call / K for a put) or T <= 0.
 */
export function black76ImpliedVol(
  type: OptionType,
  price: number,
  F: number,
  K: number,
  T: number,
  guess = 0.6,
): number {
  if (!(T > 0) || !(price > 0)) return NaN;
  // Out-of-the-money equivalent by parity.
  const otmCall = K >= F;
  let target = price;
  if (type === 'call' && !otmCall) target = price - (F - K);
  if (type === 'put' && otmCall) target = price - (K - F);
  const upper = otmCall ? F : K;
  if (!(target > 0) || target >= upper) return NaN;
  const otmType: OptionType = otmCall ? 'call' : 'put';
  const sqrtT = Math.sqrt(T);
  let lo = 1e-6;
  let hi = 50;
  let s = Number.isFinite(guess) && guess > lo && guess < hi ? guess : 0.6;
  for (let i = 0; i < 200; i++) {
    const p = black76Price(otmType, F, K, T, s);
    const diff = p - target;
    if (diff > 0) hi = s;
    else lo = s;
    const d1 = Math.log(F / K) / (s * sqrtT) + (s * sqrtT) / 2;
    const vega = F * normPdf(d1) * sqrtT;
    let next = vega > 1e-300 ? s - diff / vega : NaN;
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    if (Math.abs(next - s) < 1e-10 || hi - lo < 1e-12) return next;
    s = next;
  }
  return s;
}
