/**
 * SABR stochastic-volatility model: the lognormal (Black) implied-volatility expansion of one expiry.
 *
 * Model (Hagan, Kumar, Lesniewski, Woodward 2002, eq. (2.1)): dF = a F^beta dW1, da = nu a dW2,
 * dW1 dW2 = rho dt, a(0) = alpha, for the forward F of the expiry.
 *
 * Formulas:
 * - `hagan2002` (default): P. S. Hagan, D. Kumar, A. S. Lesniewski, D. E. Woodward, "Managing Smile Risk",
 *   Wilmott Magazine, September 2002, pp. 84-108, eq. (2.17a)-(2.17c):
 *     sigma_B(K) = alpha / { (F K)^((1-beta)/2) [1 + (1-beta)^2/24 L^2 + (1-beta)^4/1920 L^4] } · z/x(z)
 *                  · { 1 + [ (1-beta)^2/24 · alpha^2/(F K)^(1-beta) + rho beta nu alpha / (4 (F K)^((1-beta)/2))
 *                        + (2 - 3 rho^2)/24 · nu^2 ] T },
 *     L = ln(F/K),  z = (nu/alpha) (F K)^((1-beta)/2) L,
 *     x(z) = ln{ (sqrt(1 - 2 rho z + z^2) + z - rho) / (1 - rho) },
 *   and at the money (K = F) eq. (2.18). This is the formula of QuantLib's unsafeSabrVolatility, whose test
 *   values (test-suite/interpolations.cpp, testSabrInterpolation) are checked in test/quant/sabr.test.ts.
 * - `obloj2008`: J. Obloj, "Fine-tune your smile: correction to Hagan et al.", Wilmott Magazine, May 2008
 *   (arXiv:0708.0998), eq. (3.5)-(3.6): the same T-correction term, but the leading term replaced by
 *     I0 = nu L / x(zeta),  zeta = nu (F^(1-beta) - K^(1-beta)) / (alpha (1-beta))  (beta < 1),
 *     zeta = nu L / alpha (beta = 1),
 *   which is exact in the short-expiry limit (Berestycki, Busca, Florent 2004) and, as nu -> 0, gives the
 *   CEV limit alpha (1-beta) L / (F^(1-beta) - K^(1-beta)). For beta = 1 (the service's default) both
 *   formulas are IDENTICAL; they differ only for beta < 1.
 *
 * Numerics: z/x(z) uses its Taylor series 1 - rho z/2 + (2 - 3 rho^2) z^2/12 for |z| < 1e-5; for z < rho the
 * argument of the logarithm is rewritten (1 + rho) / (sqrt(1 - 2 rho z + z^2) - (z - rho)) (multiplying by the
 * conjugate) so that the far low-strike wing of a strongly positive-rho smile keeps full precision; the
 * logarithms are taken with log1p (full relative precision of x(z) for small z as well).
 *
 * Units: F and K in the same currency (> 0); T in years ACT/365; alpha in F^(1-beta)/sqrt(year) units
 * (for beta = 1: a volatility fraction); nu per sqrt(year); vols as fractions.
 */

/** SABR parameters of one expiry. */
export interface SabrParams {
  /** Initial volatility level a(0) > 0 (for beta = 1, roughly the ATM vol as a fraction). */
  readonly alpha: number;
  /** CEV exponent in [0, 1] (fixed, not fitted; default 1 in the service). */
  readonly beta: number;
  /** Correlation of forward and volatility, |rho| < 1. */
  readonly rho: number;
  /** Volatility of volatility, >= 0, per sqrt(year). */
  readonly nu: number;
}

/** Which implied-volatility expansion to use (see the module docstring). */
export type SabrFormula = 'hagan2002' | 'obloj2008';

/**
 * Checks SABR parameters: alpha > 0 finite, beta in [0, 1], |rho| < 1, nu >= 0 finite.
 * @returns list of violated conditions, empty when valid.
 */
export function sabrParamViolations(p: SabrParams): string[] {
  const out: string[] = [];
  if (!(p.alpha > 0 && Number.isFinite(p.alpha))) out.push(`alpha must be finite > 0, got ${p.alpha}`);
  if (!(p.beta >= 0 && p.beta <= 1)) out.push(`beta must be in [0, 1], got ${p.beta}`);
  if (!(Math.abs(p.rho) < 1)) out.push(`|rho| must be < 1, got ${p.rho}`);
  if (!(p.nu >= 0 && Number.isFinite(p.nu))) out.push(`nu must be finite >= 0, got ${p.nu}`);
  return out;
}

/**
 * z / x(z) of Hagan et al. 2002 eq. (2.17a)-(2.17c), with x(z) = ln{(sqrt(1 - 2 rho z + z^2) + z - rho)/(1 - rho)}.
 * Series 1 - rho z/2 + (2 - 3 rho^2) z^2/12 near z = 0; for z < rho the conjugate form
 * x(z) = ln{(1 + rho) / (sqrt(1 - 2 rho z + z^2) - z + rho)}, which avoids cancellation; both logarithms are
 * evaluated as log1p of their (cancellation-free) excess over 1, so that x(z) keeps full relative precision
 * for small z too. |rho| < 1.
 */
export function sabrZOverX(z: number, rho: number): number {
  if (Math.abs(z) < 1e-5) return 1 - 0.5 * rho * z + ((2 - 3 * rho * rho) * z * z) / 12;
  const s = Math.sqrt(1 - 2 * rho * z + z * z);
  const sm1 = (z * z - 2 * rho * z) / (s + 1); // s - 1 without cancellation
  const x = z - rho >= 0 ? Math.log1p((sm1 + z) / (1 - rho)) : Math.log1p((z - sm1) / (s - z + rho));
  return z / x;
}

function checkInputs(fn: string, p: SabrParams, F: number, K: number, T: number): void {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`${fn}: forward F must be finite > 0, got ${F}`);
  if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`${fn}: strike K must be finite > 0, got ${K}`);
  if (!(T >= 0 && Number.isFinite(T))) throw new RangeError(`${fn}: T must be finite >= 0 years, got ${T}`);
  const v = sabrParamViolations(p);
  if (v.length > 0) throw new RangeError(`${fn}: invalid SABR parameters: ${v.join('; ')}`);
}

/**
 * The expiry-time correction factor 1 + [ (1-beta)^2 alpha^2 / (24 (FK)^(1-beta)) + rho beta nu alpha /
 * (4 (FK)^((1-beta)/2)) + (2 - 3 rho^2) nu^2 / 24 ] T of Hagan et al. 2002 eq. (2.17a) (shared by Obloj 2008).
 */
function timeCorrection(p: SabrParams, F: number, K: number, T: number): number {
  const omb = 1 - p.beta;
  const fkPow = omb === 0 ? 1 : Math.pow(F * K, omb); // (FK)^(1-beta)
  const sq = Math.sqrt(fkPow);
  return (
    1 +
    ((omb * omb * p.alpha * p.alpha) / (24 * fkPow) + (p.rho * p.beta * p.nu * p.alpha) / (4 * sq) + ((2 - 3 * p.rho * p.rho) * p.nu * p.nu) / 24) * T
  );
}

/**
 * Black (lognormal) implied volatility of the SABR model at strike K (Hagan et al. 2002 eq. (2.17a)-(2.17c);
 * or Obloj 2008 eq. (3.5)-(3.6) with `formula = 'obloj2008'`).
 *
 * The expansion is asymptotic: for extreme parameters (large nu^2 T, or rho beta nu alpha T strongly negative)
 * the correction factor can make the result <= 0; such parameter sets are outside the formula's domain and
 * the value is returned as computed (callers such as the calibration treat it as invalid).
 *
 * @param p SABR parameters (alpha > 0, beta in [0, 1], |rho| < 1, nu >= 0)
 * @param F the expiry's forward (> 0)
 * @param K strike, same currency as F (> 0)
 * @param T time to expiry in years ACT/365 (>= 0)
 * @param formula 'hagan2002' (default) or 'obloj2008'; identical when beta = 1
 * @returns implied volatility, fraction
 * @throws RangeError on non-finite or non-positive F or K, negative or non-finite T, invalid parameters
 */
export function sabrImpliedVol(p: SabrParams, F: number, K: number, T: number, formula: SabrFormula = 'hagan2002'): number {
  checkInputs('sabrImpliedVol', p, F, K, T);
  return sabrImpliedVolUnchecked(p, F, K, T, formula);
}

/** {@link sabrImpliedVol} without argument checks (for inner loops of calibrations with validated inputs). */
export function sabrImpliedVolUnchecked(p: SabrParams, F: number, K: number, T: number, formula: SabrFormula = 'hagan2002'): number {
  const L = Math.log(F / K);
  const omb = 1 - p.beta;
  const corr = timeCorrection(p, F, K, T);
  if (formula === 'obloj2008' && omb > 0) {
    // q = (F^(1-beta) - K^(1-beta)) / (1-beta) = F^(1-beta) (1 - e^{-(1-beta) L}) / (1-beta), via expm1.
    const Fpow = Math.pow(F, omb);
    const u = omb * L;
    const lnOverQ = u === 0 ? 1 / Fpow : u / (-Math.expm1(-u)) / Fpow; // L / q
    if (p.nu === 0) return p.alpha * lnOverQ * corr;
    const q = L / lnOverQ;
    const zeta = (p.nu * q) / p.alpha;
    return p.alpha * lnOverQ * sabrZOverX(zeta, p.rho) * corr;
  }
  const fkHalf = omb === 0 ? 1 : Math.pow(F * K, 0.5 * omb); // (FK)^((1-beta)/2)
  const l2 = omb * omb * L * L;
  const denom = fkHalf * (1 + l2 / 24 + (l2 * l2) / 1920);
  const z = (p.nu / p.alpha) * fkHalf * L;
  return (p.alpha / denom) * sabrZOverX(z, p.rho) * corr;
}

/**
 * SABR ATM (K = F) Black volatility, Hagan et al. 2002 eq. (2.18):
 * alpha / F^(1-beta) · {1 + [(1-beta)^2 alpha^2 / (24 F^(2-2beta)) + rho beta alpha nu / (4 F^(1-beta)) + (2 - 3 rho^2) nu^2 / 24] T}.
 * @throws RangeError as {@link sabrImpliedVol}
 */
export function sabrAtmVol(p: SabrParams, F: number, T: number): number {
  checkInputs('sabrAtmVol', p, F, F, T);
  const fPow = Math.pow(F, 1 - p.beta);
  return (p.alpha / fPow) * timeCorrection(p, F, F, T);
}

/**
 * The alpha that gives a target ATM Black volatility for fixed beta, rho, nu: the smallest positive root of
 * the cubic of Hagan et al. 2002 eq. (2.18) in alpha,
 *   c1 alpha^3 + c2 alpha^2 + c3 alpha - atmVol F^(1-beta) = 0,
 *   c1 = (1-beta)^2 T / (24 F^(2-2beta)),  c2 = rho beta nu T / (4 F^(1-beta)),  c3 = 1 + (2 - 3 rho^2) nu^2 T / 24
 * (G. West, "Calibration of the SABR model in illiquid markets", Applied Mathematical Finance 12(4), 2005,
 * sec. 2). For beta = 1 the quadratic's root is taken in the cancellation-free form 2 v / (c3 + sqrt(c3^2 + 4 c2 v)).
 * @returns alpha > 0, or NaN when no positive alpha reaches atmVol (possible only when c2 < 0 or c3 <= 0)
 * @throws RangeError when atmVol, F or T are not finite and > 0 / >= 0
 */
export function sabrAlphaFromAtmVol(atmVol: number, F: number, T: number, beta: number, rho: number, nu: number): number {
  if (!(atmVol > 0 && Number.isFinite(atmVol))) throw new RangeError(`sabrAlphaFromAtmVol: atmVol must be finite > 0, got ${atmVol}`);
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`sabrAlphaFromAtmVol: F must be finite > 0, got ${F}`);
  if (!(T >= 0 && Number.isFinite(T))) throw new RangeError(`sabrAlphaFromAtmVol: T must be finite >= 0, got ${T}`);
  const omb = 1 - beta;
  const fPow = Math.pow(F, omb);
  const v = atmVol * fPow;
  const c1 = (omb * omb * T) / (24 * fPow * fPow);
  const c2 = (rho * beta * nu * T) / (4 * fPow);
  const c3 = 1 + ((2 - 3 * rho * rho) * nu * nu * T) / 24;
  if (c1 === 0) {
    const disc = c3 * c3 + 4 * c2 * v;
    if (disc < 0) return Number.NaN;
    const den = c3 + Math.sqrt(disc);
    return den > 0 ? (2 * v) / den : Number.NaN;
  }
  // Cubic: p(0) = -v < 0; scan for the first sign change from 0, then bisect/secant (monotone bracketing).
  const poly = (a: number): number => ((c1 * a + c2) * a + c3) * a - v;
  let lo = 0;
  let step = Math.max(v / Math.max(c3, 1e-12), 1e-12) / 8;
  let hi = step;
  let found = false;
  for (let i = 0; i < 200; i++) {
    if (poly(hi) >= 0) {
      found = true;
      break;
    }
    lo = hi;
    step *= 1.5;
    hi += step;
  }
  if (!found) return Number.NaN;
  for (let i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
    const mid = 0.5 * (lo + hi);
    if (poly(mid) >= 0) hi = mid;
    else lo = mid;
  }
  return 0.5 * (lo + hi);
}
