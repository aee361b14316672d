/**
 * The option Greeks each exchange PRINTS, reproduced from its inputs: the valuation conventions behind
 * the `priceMethod` values OKX (XCHG_B) and BYBIT (XCHG_C). Deribit's printed ticker Greeks are the plain
 * Black-76 ones (docs/conventions.md "Deribit's printed numbers"); these two differ in ways measured on
 * the recorded samples (test/quant/exchangeGreeks.test.ts, docs/conventions.md "Exchange valuation
 * conventions"). Nothing here changes how the service values an option (valueVanilla in vanilla.ts is
 * Black-76 on the forward with r = 0 for every priceMethod); it states precisely how the exchanges'
 * own figures relate to ours, and it is the reference the simulator's numbers and the tests are
 * checked against.
 *
 * Notation: F forward of the expiry, S the exchange's index (spot), K strike (quote currency), T years
 * ACT/365, sigma the mark IV (fraction), c = C76(F) / F the inverse option's premium in coin,
 * phi/N the standard normal density/CDF, d1 = (ln(F/K) + sigma^2 T/2) / (sigma sqrt T).
 * "Day scaling": h = min(1, 365 T), the fraction of a day left when less than one day is left.
 *
 * OKX coin-margined options (opt-summary; measured on OKX's docs example BTC-USD-220309-33000-C/P to
 * 6 significant digits, and the 2021 recorded ETH pushes to 0.3 %):
 * - `*BS` Greeks are Black-Scholes on the INDEX S with the rate b = ln(F/S)/T implied by the forward,
 *   i.e. derivatives of the USD value U = S c with respect to S and calendar time at fixed S:
 *   deltaBS = N(d1) (put N(d1) - 1); gammaBS = phi(d1) / (S sigma sqrt T);
 *   vegaBS = S phi(d1) sqrt T / 100 (per vol point); thetaBS = (S/F) (theta76 + b K dualDelta) h / 365
 *   (per day, USD), where theta76 = -F phi(d1) sigma / (2 sqrt T) and dualDelta = -N(d2) (call),
 *   N(-d2) (put). That is why OKX's call and put thetas differ: the b K N(d2) carry term of
 *   Black-Scholes on spot.
 * - coin Greeks: delta = deltaBS - c (premium-adjusted, = S dc/dS); gamma = phi(d1)/(sigma sqrt T) - 2 delta
 *   (= S^2 d2c/dS2); vega = phi(d1) sqrt T / 100 = dc/dsigma per vol point; theta = theta76 / F * h / 365
 *   (decay of c at a fixed forward; the same for a call and a put).
 *
 * Bybit USDC options (tickers; measured on the recorded SOL-28APR23-24-C, ETH-30JUN23-200-P and the docs'
 * BTC-6JAN23-17500-C): Black-76 on `underlyingPrice` (the forward), r = 0, in USDC: delta = N(d1) (put
 * N(d1) - 1); gamma = phi(d1) / (F sigma sqrt T) * h; vega = F phi(d1) sqrt T / 100; theta = theta76 * h / 365.
 */
import { black76Greeks, type OptionType } from './black76.js';
import { normPdf } from './normal.js';

/** One calendar day in years ACT/365. */
const DAY = 1 / 365;

/** h = min(1, T / 1 day): the day scaling of the exchanges' per-day figures. */
export function dayFraction(T: number): number {
  return Math.min(1, Math.max(T, 0) / DAY);
}

function checkInputs(fn: string, F: number, S: number, K: number, T: number, sigma: number): void {
  for (const [name, v] of [['F', F], ['S', S], ['K', K], ['T', T], ['sigma', sigma]] as const) {
    if (!(v > 0 && Number.isFinite(v))) throw new RangeError(`${fn}: ${name} must be a finite number > 0, got ${v}`);
  }
}

/** Greeks as OKX prints them in `opt-summary` for a coin-margined (inverse) option, per one coin of underlying. */
export interface OkxPrintedGreeks {
  /** Premium in coin, c = Black-76 price / F (OKX's mark price of the option, in BTC/ETH). */
  readonly markPriceCoin: number;
  /** `deltaBS`: N(d1) (put N(d1) - 1). */
  readonly deltaBS: number;
  /** `gammaBS`: phi(d1) / (S sigma sqrt T), per USD of the index. */
  readonly gammaBS: number;
  /** `vegaBS`: S phi(d1) sqrt T / 100, USD per vol point. */
  readonly vegaBS: number;
  /** `thetaBS`: (S/F)(theta76 + b K dualDelta) h / 365, USD per day, b = ln(F/S)/T. */
  readonly thetaBS: number;
  /** `delta` (coin, premium-adjusted): deltaBS - markPriceCoin. */
  readonly delta: number;
  /** `gamma` (coin): phi(d1)/(sigma sqrt T) - 2 delta. */
  readonly gamma: number;
  /** `vega` (coin): phi(d1) sqrt T / 100, coin per vol point. */
  readonly vega: number;
  /** `theta` (coin): theta76 / F * h / 365, coin per day. */
  readonly theta: number;
}

/**
 * OKX's printed Greeks of a coin-margined option (see the module docstring for each formula).
 * @param F forward of the expiry (OKX `fwdPx`), USD; @param S index (OKX `index-tickers` idxPx), USD;
 * @param K strike, USD; @param T years ACT/365 (> 0); @param sigma mark IV (OKX `markVol`), fraction.
 * @throws RangeError when an input is not finite > 0
 */
export function okxOptionGreeks(F: number, S: number, K: number, T: number, sigma: number, optionType: OptionType): OkxPrintedGreeks {
  checkInputs('okxOptionGreeks', F, S, K, T, sigma);
  const g = black76Greeks(F, K, T, sigma, optionType);
  const sd = sigma * Math.sqrt(T);
  const d1 = Math.log(F / K) / sd + sd / 2;
  const pdf = normPdf(d1);
  const h = dayFraction(T);
  const b = Math.log(F / S) / T;
  const c = g.price / F;
  const delta = g.delta - c;
  return {
    markPriceCoin: c,
    deltaBS: g.delta,
    gammaBS: pdf / (S * sd),
    vegaBS: (S * pdf * Math.sqrt(T)) / 100,
    thetaBS: ((S / F) * (g.theta + b * K * g.dualDelta) * h) / 365,
    delta,
    gamma: pdf / sd - 2 * delta,
    vega: (pdf * Math.sqrt(T)) / 100,
    theta: ((g.theta / F) * h) / 365,
  };
}

/** Greeks as Bybit prints them in option `tickers` (USDC, per one unit of the underlying). */
export interface BybitPrintedGreeks {
  /** Black-76 price on the forward, USDC (Bybit `markPrice`). */
  readonly markPrice: number;
  /** N(d1) (put N(d1) - 1). */
  readonly delta: number;
  /** phi(d1) / (F sigma sqrt T) * h, per USDC of the forward. */
  readonly gamma: number;
  /** F phi(d1) sqrt T / 100, USDC per vol point. */
  readonly vega: number;
  /** theta76 * h / 365, USDC per day. */
  readonly theta: number;
}

/**
 * Bybit's printed Greeks of a USDC option (see the module docstring).
 * @param F forward (Bybit `underlyingPrice`), USDC; @param K strike; @param T years (> 0); @param sigma `markPriceIv`.
 * @throws RangeError when an input is not finite > 0
 */
export function bybitOptionGreeks(F: number, K: number, T: number, sigma: number, optionType: OptionType): BybitPrintedGreeks {
  checkInputs('bybitOptionGreeks', F, F, K, T, sigma);
  const g = black76Greeks(F, K, T, sigma, optionType);
  const h = dayFraction(T);
  return { markPrice: g.price, delta: g.delta, gamma: g.gamma * h, vega: g.vega / 100, theta: (g.theta * h) / 365 };
}
