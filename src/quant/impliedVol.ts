/**
 * Implied volatility from an undiscounted Black-76 price (r = 0).
 *
 * Method (a safeguarded Halley iteration in the variables and objective functions of Jaeckel, with a
 * Brent fallback; not a port of "Let's Be Rational"):
 * 1. Normalise (Jaeckel 2015): x = ln(F/K), s = sigma sqrt T, b = price / sqrt(F K). By put-call
 *    parity the in-the-money option is replaced by its out-of-the-money twin (price minus intrinsic), and
 *    by the symmetry b_put(x, s) = b_call(-x, s) everything becomes an out-of-the-money call with
 *    x <= 0: b(x, s) = e^{x/2} N(x/s + s/2) - e^{-x/2} N(x/s - s/2), increasing in s from 0 to
 *    b_max = e^{x/2}.
 * 2. At-the-money (x = 0) has the closed form s = -2 N^-1((1 - b)/2).
 * 3. Otherwise split at the inflection point s_c = sqrt(2|x|) (where d1 = 0; b is convex below, concave
 *    above; Jaeckel 2006, 2015). Below it solve 1/ln b(s) = 1/ln beta, above it solve
 *    ln(b_max - b(s)) = ln(b_max - beta), the objective functions of Jaeckel (2015), which are
 *    nearly linear in their regions. In the upper branch b_max - b = e^{x/2} N(-d1) + e^{-x/2} N(d2) is
 *    summed from two positive tails, so no cancellation. Halley steps use the analytic normalised vega
 *    b' = exp(-(x^2/s^2 + s^2/4)/2)/sqrt(2 pi) and b'' = b' (x^2/s^3 - s/4); a step leaving the current
 *    bracket is replaced by bisection; after 100 iterations (never seen) Brent (1973) finishes the job.
 *
 * Accuracy: the round trip sigma -> price -> sigma is within 1e-10 absolute wherever the price carries
 * that information (time value not swamped by rounding of the intrinsic part); tested on a grid in
 * test/quant/impliedVol.test.ts.
 *
 * Sources: P. Jaeckel, "Let's Be Rational", Wilmott Magazine, January 2015 (normalisation, branch split at
 * s_c, objective functions); P. Jaeckel, "By Implication", Wilmott Magazine, November 2006 (the s_c
 * inflection point and the price bounds); R. P. Brent (1973), see brent.ts.
 */
import { brentRoot } from './brent.js';
import type { OptionType } from './black76.js';
import { normCdf, normInv } from './normal.js';

const INV_SQRT_2PI = 0.3989422804014327;
const MAX_HALLEY_ITERATIONS = 100;
/** Relative step in s below which the iteration stops (the objectives carry ~1e-16 absolute noise). */
const REL_STEP_TOL = 1e-14;

/** Normalised out-of-the-money call b(x, s), x <= 0, s > 0 (Jaeckel 2015, normalised Black call). */
function normalisedOtmCall(x: number, s: number): number {
  const d1 = x / s + 0.5 * s;
  return Math.exp(0.5 * x) * normCdf(d1) - Math.exp(-0.5 * x) * normCdf(d1 - s);
}

/** b_max - b(x, s) = e^{x/2} N(-d1) + e^{-x/2} N(d2): the sum of two positive tails. */
function normalisedOtmCallComplement(x: number, s: number): number {
  const d1 = x / s + 0.5 * s;
  return Math.exp(0.5 * x) * normCdf(-d1) + Math.exp(-0.5 * x) * normCdf(d1 - s);
}

/** Normalised vega db/ds = exp(-(x^2/s^2 + s^2/4)/2)/sqrt(2 pi). */
function normalisedVega(x: number, s: number): number {
  const h = x / s;
  const t = 0.5 * s;
  return INV_SQRT_2PI * Math.exp(-0.5 * (h * h + t * t));
}

/** Objective g with its first two derivatives in s, for one branch; g increases or decreases monotonically. */
type Objective = (s: number) => { g: number; g1: number; g2: number };

/**
 * Solves g(s) = 0 inside the bracket [lo, hi] (g(lo), g(hi) of opposite signs) by Halley steps from s0,
 * replacing any step that leaves the shrinking bracket by bisection; Brent if the iteration budget ends.
 */
function solveBracketed(obj: Objective, lo: number, hi: number, s0: number): number {
  let gLo = obj(lo).g;
  const increasing = obj(hi).g > gLo;
  let s = s0;
  for (let i = 0; i < MAX_HALLEY_ITERATIONS; i++) {
    const { g, g1, g2 } = obj(s);
    if (g === 0) return s;
    // Shrink the bracket with the sign of g.
    if ((g < 0) === increasing) {
      lo = s;
      gLo = g;
    } else {
      hi = s;
    }
    const newton = -g / g1;
    const denom = 1 + (0.5 * newton * g2) / g1;
    const step = denom > 0.5 && denom < 2 ? newton / denom : newton;
    // Converged: the step is below the floating-point resolution of s (test before the bracket check,
    // since s + step may round onto the bracket end s itself just became).
    if (Math.abs(step) <= REL_STEP_TOL * s) return s + step;
    let next = s + step;
    if (!(next > lo && next < hi) || !Number.isFinite(next)) next = 0.5 * (lo + hi);
    if (hi - lo <= REL_STEP_TOL * hi) return next;
    s = next;
  }
  return brentRoot((u) => obj(u).g, lo, hi).root;
}

/**
 * Implied volatility sigma (fraction) such that black76Price(F, K, T, sigma, optionType) = price, with
 * r = 0 (undiscounted price in quote currency, as the exchanges mark).
 *
 * @param price undiscounted option price in quote currency (for an inverse option: mark price in coin
 *   times F)
 * @param F forward, quote currency (> 0)
 * @param K strike, quote currency (> 0)
 * @param T time to expiry in years ACT/365 (> 0)
 * @param optionType 'C' or 'P'
 * @returns sigma >= 0 (0 exactly when price equals the intrinsic value max(theta (F - K), 0))
 * @throws RangeError when the price is outside the no-arbitrage bounds: below intrinsic value, or at or
 *   above the upper bound (F for a call, K for a put); or when F, K, T are not finite and > 0, or the
 *   price is not finite
 */
export function impliedVolBlack76(price: number, F: number, K: number, T: number, optionType: OptionType): number {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`impliedVol: forward F must be finite > 0, got ${F}`);
  if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`impliedVol: strike K must be finite > 0, got ${K}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`impliedVol: T must be finite > 0 years, got ${T}`);
  if (!Number.isFinite(price)) throw new RangeError(`impliedVol: price must be a finite number, got ${price}`);
  const isCall = optionType === 'C';
  const intrinsic = isCall ? Math.max(F - K, 0) : Math.max(K - F, 0);
  const upper = isCall ? F : K;
  if (price < intrinsic) {
    throw new RangeError(
      `impliedVol: price ${price} is below the intrinsic value ${intrinsic} (${optionType}, F=${F}, K=${K}): no volatility gives it`,
    );
  }
  if (price >= upper) {
    throw new RangeError(
      `impliedVol: price ${price} is at or above the upper bound ${upper} (${isCall ? 'F' : 'K'}) for a ${isCall ? 'call' : 'put'}: no volatility gives it`,
    );
  }
  // Out-of-the-money twin: its price is the time value (put-call parity with r = 0).
  const timeValue = price - intrinsic;
  if (timeValue === 0) return 0;
  const sqrtFK = Math.sqrt(F) * Math.sqrt(K);
  const beta = timeValue / sqrtFK;
  const x = -Math.abs(Math.log(F / K));
  const bMax = Math.exp(0.5 * x);
  if (!(beta < bMax)) {
    throw new RangeError(`impliedVol: price ${price} is at the upper no-arbitrage bound (after normalisation)`);
  }
  const s = impliedTotalStdDevOtm(beta, x, bMax);
  return s / Math.sqrt(T);
}

/** Solves b(x, s) = beta for s > 0, with x <= 0 and 0 < beta < b_max = e^{x/2}. */
function impliedTotalStdDevOtm(beta: number, x: number, bMax: number): number {
  if (x === 0) {
    // b(0, s) = 1 - 2 N(-s/2).
    // For beta >= 1/2, 1 - beta is exact (Sterbenz) and the closed form is accurate as it stands; below,
    // 1 - beta has lost the low digits of a small beta and Newton steps on the accurate b(0, s) restore them.
    const s = -2 * normInv(0.5 * (1 - beta));
    return beta < 0.5 ? polishAtm(beta, s) : s;
  }
  const sC = Math.sqrt(-2 * x);
  const bC = normalisedOtmCall(x, sC);
  if (beta < bC) {
    // Lower branch: g = 1/ln b(s) - 1/ln beta (decreasing in s; g(0+) = -1/ln beta > 0).
    const invLnBeta = 1 / Math.log(beta);
    const obj: Objective = (s) => {
      if (s <= 0) return { g: -invLnBeta, g1: -Infinity, g2: 0 };
      const b = normalisedOtmCall(x, s);
      if (!(b > 0)) return { g: -invLnBeta, g1: -Infinity, g2: 0 };
      const v = normalisedVega(x, s);
      const b2 = v * ((x * x) / (s * s * s) - 0.25 * s);
      const L = Math.log(b);
      const L1 = v / b;
      const L2 = b2 / b - L1 * L1;
      return { g: 1 / L - invLnBeta, g1: -L1 / (L * L), g2: -L2 / (L * L) + (2 * L1 * L1) / (L * L * L) };
    };
    return solveBracketed(obj, 0, sC, lowerBranchGuess(beta, x, sC));
  }
  // Upper branch: g = ln(b_max - beta) - ln(b_max - b(s)) (increasing in s).
  const lnTauStar = Math.log(bMax - beta);
  const obj: Objective = (s) => {
    const tau = normalisedOtmCallComplement(x, s);
    const v = normalisedVega(x, s);
    const b2 = v * ((x * x) / (s * s * s) - 0.25 * s);
    const r = v / tau;
    return { g: lnTauStar - Math.log(tau), g1: r, g2: b2 / tau + r * r };
  };
  // Large-s approximation b_max - b ~ (e^{x/2} + e^{-x/2}) N(-s/2) as the first guess.
  const guess = Math.max(sC, -2 * normInv(Math.min(0.5, (bMax - beta) / (bMax + Math.exp(-0.5 * x)))));
  let hi = Math.max(2 * guess, 2 * sC, 1);
  for (let i = 0; i < 64 && obj(hi).g < 0; i++) hi *= 2;
  return solveBracketed(obj, sC, hi, Math.min(guess, 0.5 * (sC + hi)));
}

/**
 * First guess in the lower branch from the small-s asymptotics b ~ b'(s) s^3 / x^2, i.e.
 * ln beta ~ -x^2/(2 s^2) + ln(s^3 / (x^2 sqrt(2 pi))), solved by a few fixed-point steps; clamped into (0, s_c).
 */
function lowerBranchGuess(beta: number, x: number, sC: number): number {
  const lnBeta = Math.log(beta);
  let s = Math.abs(x) / Math.sqrt(-2 * lnBeta);
  for (let i = 0; i < 3; i++) {
    const rhs = -lnBeta + Math.log((s * s * s * INV_SQRT_2PI) / (x * x)) - (s * s) / 8;
    if (!(rhs > 0)) break;
    s = Math.abs(x) / Math.sqrt(2 * rhs);
  }
  return s > 0 && s < sC ? s : 0.5 * sC;
}

/**
 * b(0, s) = N(s/2) - N(-s/2) = erf(s / (2 sqrt 2)), accurate also for small s (Maclaurin series of erf,
 * Abramowitz and Stegun 7.1.5, for argument < 0.5; 1 - 2 N(-s/2) above, where nothing cancels).
 */
function atmNormalisedCall(s: number): number {
  const z = s / (2 * Math.SQRT2);
  if (z >= 0.5) return 1 - 2 * normCdf(-0.5 * s);
  const z2 = z * z;
  let term = z;
  let sum = z;
  for (let n = 1; n < 30; n++) {
    term *= -z2 / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

/** Newton steps on b(0, s) - beta from the closed-form start, to remove its rounding (ATM, beta < 1/2). */
function polishAtm(beta: number, s: number): number {
  for (let i = 0; i < 4; i++) {
    if (!(s > 0) || !Number.isFinite(s)) return s;
    const v = normalisedVega(0, s);
    if (!(v > 0)) return s;
    const step = (atmNormalisedCall(s) - beta) / v;
    s -= step;
    if (Math.abs(step) <= REL_STEP_TOL * s) break;
  }
  return s;
}
