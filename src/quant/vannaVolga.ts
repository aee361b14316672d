/**
 * Vanna-Volga (VV) smile of one expiry from three pillars: the 25-delta put, ATM and 25-delta call.
 *
 * Source: A. Castagna, F. Mercurio, "The vanna-volga method for implied volatilities", Risk, January 2007,
 * pp. 106-111 (working-paper version: "Consistent pricing of FX options", SSRN 873788, 2005). With the
 * pillar strikes K1 < K2 < K3 and vols sigma1, sigma2, sigma3 (sigma2 = ATM), and
 *   y1(K) = ln(K2/K) ln(K3/K) / (ln(K2/K1) ln(K3/K1)),
 *   y2(K) = ln(K/K1) ln(K3/K) / (ln(K2/K1) ln(K3/K2)),
 *   y3(K) = ln(K/K1) ln(K/K2) / (ln(K3/K1) ln(K3/K2)),
 * the article gives
 * - the VV option price (the flat-vol Black price plus the cost of the vega-vanna-volga replicating
 *   portfolio of the three pillar options): C(K) = C_BS(K; sigma2) + sum_i x_i(K) [C_BS(K_i; sigma_i) - C_BS(K_i; sigma2)],
 *   x_i(K) = Vega(K)/Vega(K_i) · y_i(K), vegas at sigma2 ({@link vannaVolgaPrice});
 * - the first-order approximation of its implied volatility, sigma(K) ≈ y1 sigma1 + y2 sigma2 + y3 sigma3
 *   ({@link vannaVolgaFirstOrderVol});
 * - the second-order approximation
 *   sigma(K) ≈ sigma2 + (-sigma2 + sqrt(sigma2^2 + d1(K) d2(K) (2 sigma2 D1(K) + D2(K)))) / (d1(K) d2(K)),
 *   D1(K) = y1 sigma1 + y2 sigma2 + y3 sigma3 - sigma2,
 *   D2(K) = y1 d1(K1) d2(K1) (sigma1 - sigma2)^2 + y3 d1(K3) d2(K3) (sigma3 - sigma2)^2,
 *   d1(x) = (ln(F/x) + sigma2^2 T/2) / (sigma2 sqrt T), d2 = d1 - sigma2 sqrt T
 *   ({@link vannaVolgaSecondOrderVol}; evaluated here in the algebraically equal, cancellation-free form
 *   sigma2 + u / (sigma2 + sqrt(sigma2^2 + d1 d2 u)), u = 2 sigma2 D1 + D2, which needs no division by d1 d2).
 * Both approximations reproduce the three pillar vols exactly. Equation numbers of the printed article are
 * not quoted here because we could not check them against the printed page; the formulas are as above.
 *
 * Service conventions (decisions.md "Quant conventions", docs/conventions.md): r = 0, Black-76 on the
 * expiry's forward F (discount factor 1); ATM = forward ATM (Katm = F, not the delta-neutral straddle
 * of the FX market); the 25-delta pillars are the strikes whose PLAIN forward Black call delta N(d1) is
 * 0.25 (call, above F) and 0.75 (the 25-delta put, put delta -0.25, below F), as the exchanges print delta.
 *
 * Wings (the service's documented rule, not in the article): the second-order formula can fail far from
 * the pillars (negative square-root argument) and the first-order one is a parabola in ln K. So:
 * 1. between the 10-delta strikes K10P (call delta 0.90) and K10C (call delta 0.10) of the VV smile itself,
 *    the second-order approximation is used; where its square-root argument is negative or the result is
 *    not > 0 the first-order approximation is used; where that is not > 0 either, the smallest pillar vol;
 * 2. beyond K10P and K10C the total implied variance w(k) = sigma^2 T continues from the boundary with the
 *    slope s of the VV smile there (C1 continuation), clamped to [0, 1.8] outward (90 % of Roger Lee's moment
 *    bound 2, R. Lee, "The moment formula for implied volatility at extreme strikes", Mathematical Finance
 *    14(3), 2004), plus a convex hyperbolic term that bends the wing up towards a steeper asymptote:
 *      w(k) = w_b + s (k - k_b) + c (sqrt((k - k_b)^2 + d^2) - d),   outward,
 *    c the wing curvature (`wingCurvL`, `wingCurvR`; 0 = the linear wing; c > 0 bends the wing up, c < 0 flattens it
 *    towards a plateau, issue 26: at least -|s|, so that w never decreases outward, and at least -g0 d, g0 the
 *    Gatheral-Jacquier g of the linear wing at the junction, so that the concavity c/d it adds there stays within
 *    half of what butterfly-freeness allows) and d > 0 its scale (`wingScaleL`,
 *    `wingScaleR`; default |ln(K25/K10)| of that side), with |s| + c <= 1.8 so that the asymptotic slope stays
 *    within Lee's bound; this is raw SVI's own wing form (Gatheral 2004: a hyperbola with linear asymptotes, d
 *    playing SVI's sigma: how soon the slope turns from s towards s + c). Both are fitted by
 *    {@link calibrateVannaVolga} to the quotes beyond the 10-delta strike by penalized least squares (a prior c ~ 0
 *    scaled by the junction's total standard deviation, {@link WING_NOISE_IV}: continuous in the quotes, no
 *    quote-count threshold): d on a log
 *    grid (1/16 to 4 times the default, 13 points) refined by golden section in ln d within a factor sqrt 2 of the
 *    best grid point (so d lies in 2^-4.5 to 2^2.5 times the default), c per d by weighted linear ridge least squares
 *    in total variance, the final c by golden section on the penalized IV objective (stored as found; served as at most 1.8 - |s|,
 *    {@link wingCurvatureBound}, so |s| + c <= 1.8 holds for the served wing); if needed c is scaled
 *    down until the density check passes (one side alone, the side of the failing strike first, when that
 *    suffices, else both together); without quotes there c is 0. w never decreases outward; never NaN.
 */
import { black76Greeks, black76Price } from './black76.js';
import { impliedVolBlack76 } from './impliedVol.js';
import { checkSmileDensity, type DensityCheckOptions } from './smileArbitrage.js';
import { strikeFromDelta, strikeFromDeltaFlat } from './strikeFromDelta.js';
import { median, quoteHalfSpreads, type SviQuote } from './quoteWeights.js';
import { levenbergMarquardt } from './lm.js';
import { normCdf } from './normal.js';

/** Which VV implied-vol approximation is used between the 10-delta strikes. */
export type VannaVolgaOrder = 'first' | 'second';

/**
 * Parameters of a VV smile: three pillar strikes (same currency as the forward, K25P < Katm < K25C) and
 * their implied vols (fractions). Optional: the approximation order (default 'second') and the wing
 * boundaries K10P < K25P, K10C > K25C (computed by {@link vannaVolgaWingStrikes} when absent).
 */
export interface VannaVolgaParams {
  readonly K25P: number;
  readonly Katm: number;
  readonly K25C: number;
  readonly vol25P: number;
  readonly volAtm: number;
  readonly vol25C: number;
  readonly order?: VannaVolgaOrder;
  readonly K10P?: number;
  readonly K10C?: number;
  /** Wing curvatures c >= 0 beyond K10P and K10C (module docstring, wing rule 2); default 0 (linear wings). */
  readonly wingCurvL?: number;
  readonly wingCurvR?: number;
  /**
   * Scale d of each wing's hyperbola (log-moneyness, > 0): how soon beyond the 10-delta strike the wing's slope
   * turns from the boundary slope s towards its asymptote s + c. Fitted with c; absent (older documents): the wing's
   * own |ln(K25/K10)| ({@link defaultWingScales}).
   */
  readonly wingScaleL?: number;
  readonly wingScaleR?: number;
}

/** Max outward slope of total variance in k in the extrapolated wings (90 % of Lee's bound 2). */
export const VV_MAX_WING_SLOPE = 1.8;

/**
 * Structural checks of VV parameters: finite positive strikes with K25P < Katm < K25C, positive finite
 * vols, and (if given) K10P < K25P, K10C > K25C. Returns the violated conditions (empty when valid).
 */
export function vannaVolgaParamViolations(p: VannaVolgaParams): string[] {
  // one property read per condition, messages built only for a failed one: every smile construction runs this
  const out: string[] = [];
  const positive = (name: string, v: number | undefined): void => {
    if (!(v !== undefined && v > 0 && Number.isFinite(v))) out.push(`${name} must be finite > 0, got ${v}`);
  };
  positive('K25P', p.K25P);
  positive('Katm', p.Katm);
  positive('K25C', p.K25C);
  positive('vol25P', p.vol25P);
  positive('volAtm', p.volAtm);
  positive('vol25C', p.vol25C);
  if (out.length > 0) return out;
  if (!(p.K25P < p.Katm && p.Katm < p.K25C)) out.push(`strikes must satisfy K25P < Katm < K25C, got ${p.K25P}, ${p.Katm}, ${p.K25C}`);
  if (p.K10P !== undefined && !(p.K10P > 0 && p.K10P < p.K25P)) out.push(`K10P must be in (0, K25P), got ${p.K10P}`);
  if (p.K10C !== undefined && !(p.K10C > p.K25C && Number.isFinite(p.K10C))) out.push(`K10C must be > K25C, got ${p.K10C}`);
  const slope = (name: string, v: number | undefined): void => {
    if (v !== undefined && !(v >= -VV_MAX_WING_SLOPE && v <= VV_MAX_WING_SLOPE)) out.push(`${name} must be in [-${VV_MAX_WING_SLOPE}, ${VV_MAX_WING_SLOPE}], got ${v}`);
  };
  slope('wingCurvL', p.wingCurvL);
  slope('wingCurvR', p.wingCurvR);
  if (p.wingScaleL !== undefined) positive('wingScaleL', p.wingScaleL);
  if (p.wingScaleR !== undefined) positive('wingScaleR', p.wingScaleR);
  return out;
}

function assertParams(fn: string, p: VannaVolgaParams): void {
  const v = vannaVolgaParamViolations(p);
  if (v.length > 0) throw new RangeError(`${fn}: invalid Vanna-Volga parameters: ${v.join('; ')}`);
}

function assertFT(fn: string, F: number, T: number): void {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`${fn}: forward F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`${fn}: T must be finite > 0 years, got ${T}`);
}

/**
 * What the Castagna-Mercurio 2007 formulas of one VV smile need that does not depend on the strike, computed once per
 * (p, F, T): the pillars' log-strikes l_i = ln K_i and the denominators of the Lagrange weights in ln K,
 *   y1 = (l2 - l)(l3 - l) / ((l2 - l1)(l3 - l1)),  y2 = (l - l1)(l3 - l) / ((l2 - l1)(l3 - l2)),
 *   y3 = (l - l1)(l - l2) / ((l3 - l1)(l3 - l2))   (sum to 1),
 * and the pillar terms d1(K_i) d2(K_i) at the ATM vol of the second order (module docstring). `first(K)` is the first
 * order (independent of F and T), `second(K)` the second order (NaN where its square root does not exist), `core(K)`
 * the smile between the wing strikes: second order where it exists and is > 0, else first order where > 0, else the
 * lowest pillar vol. The public single-strike functions and the smile all evaluate through it (issue 22: the 401
 * strikes of a density check, the wing-strike root searches and the pillar fit's residuals prepare it once).
 * F and T are used by `second` and `core` only.
 */
interface VvKernel {
  first(K: number): number;
  second(K: number): number;
  core(K: number): number;
  /** The Lagrange weights y1 and y3 at K (vannaVolgaPrice's pillar weights). */
  outerWeights(K: number): { y1: number; y3: number };
}

function vvKernel(p: VannaVolgaParams, F: number, T: number): VvKernel {
  const l1 = Math.log(p.K25P);
  const l2 = Math.log(p.Katm);
  const l3 = Math.log(p.K25C);
  const den1 = (l2 - l1) * (l3 - l1);
  const den2 = (l2 - l1) * (l3 - l2);
  const den3 = (l3 - l1) * (l3 - l2);
  const s2 = p.volAtm;
  const e1 = p.vol25P - s2;
  const e3 = p.vol25C - s2;
  const a1 = d1d2AtAtm(F, p.K25P, T, s2);
  const a3 = d1d2AtAtm(F, p.K25C, T, s2);
  const lowest = Math.min(p.vol25P, p.volAtm, p.vol25C);
  const isSecond = (p.order ?? 'second') === 'second';
  const first = (K: number): number => {
    const l = Math.log(K);
    return (((l2 - l) * (l3 - l)) / den1) * p.vol25P + (((l - l1) * (l3 - l)) / den2) * p.volAtm + (((l - l1) * (l - l2)) / den3) * p.vol25C;
  };
  const second = (K: number): number => {
    const l = Math.log(K);
    const y1 = ((l2 - l) * (l3 - l)) / den1;
    const y2 = ((l - l1) * (l3 - l)) / den2;
    const y3 = ((l - l1) * (l - l2)) / den3;
    const D1 = y1 * p.vol25P + y2 * s2 + y3 * p.vol25C - s2;
    const D2 = y1 * a1 * e1 * e1 + y3 * a3 * e3 * e3;
    const u = 2 * s2 * D1 + D2;
    const rad = s2 * s2 + d1d2AtAtm(F, K, T, s2) * u;
    if (!(rad >= 0)) return Number.NaN;
    return s2 + u / (s2 + Math.sqrt(rad));
  };
  return {
    first,
    second,
    core: (K: number): number => {
      if (isSecond) {
        const v = second(K);
        if (v > 0 && Number.isFinite(v)) return v;
      }
      const v1 = first(K);
      return v1 > 0 && Number.isFinite(v1) ? v1 : lowest;
    },
    outerWeights: (K: number) => {
      const l = Math.log(K);
      return { y1: ((l2 - l) * (l3 - l)) / den1, y3: ((l - l1) * (l - l2)) / den3 };
    },
  };
}

/**
 * First-order VV implied vol (Castagna-Mercurio 2007): y1(K) vol25P + y2(K) volAtm + y3(K) vol25C, the
 * quadratic interpolation in ln K through the three pillars. Independent of F and T. May be <= 0 far out.
 * @throws RangeError on invalid parameters or K not finite > 0
 */
export function vannaVolgaFirstOrderVol(p: VannaVolgaParams, K: number): number {
  assertParams('vannaVolgaFirstOrderVol', p);
  if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`vannaVolgaFirstOrderVol: K must be finite > 0, got ${K}`);
  return vvKernel(p, 1, 1).first(K); // F and T do not enter the first order
}

/** d1(x) d2(x) at the ATM vol sigma2 (Castagna-Mercurio's d1, d2 with r = 0). */
function d1d2AtAtm(F: number, x: number, T: number, sigma2: number): number {
  const s = sigma2 * Math.sqrt(T);
  const d1 = Math.log(F / x) / s + 0.5 * s;
  return d1 * (d1 - s);
}

/**
 * Second-order VV implied vol (Castagna-Mercurio 2007), see the module docstring for the formula.
 * @returns the vol (fraction), or NaN where the square-root argument sigma2^2 + d1 d2 u is negative
 *   (the approximation does not exist there)
 * @throws RangeError on invalid parameters, F, T or K
 */
export function vannaVolgaSecondOrderVol(p: VannaVolgaParams, F: number, K: number, T: number): number {
  assertParams('vannaVolgaSecondOrderVol', p);
  assertFT('vannaVolgaSecondOrderVol', F, T);
  if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`vannaVolgaSecondOrderVol: K must be finite > 0, got ${K}`);
  return vvKernel(p, F, T).second(K);
}

/**
 * The VV option price of Castagna-Mercurio 2007 (undiscounted, r = 0): the Black-76 price at the ATM vol
 * plus the weighted market-minus-flat prices of the two 25-delta pillar options (the ATM term vanishes),
 * weights x_i(K) = Vega(K)/Vega(K_i) y_i(K) with vegas at the ATM vol. Quote currency per unit underlying.
 * @throws RangeError on invalid parameters, F, T or K
 */
export function vannaVolgaPrice(p: VannaVolgaParams, F: number, K: number, T: number, optionType: 'C' | 'P'): number {
  assertParams('vannaVolgaPrice', p);
  assertFT('vannaVolgaPrice', F, T);
  if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`vannaVolgaPrice: K must be finite > 0, got ${K}`);
  const s2 = p.volAtm;
  const { y1, y3 } = vvKernel(p, F, T).outerWeights(K);
  const vegaK = black76Greeks(F, K, T, s2, 'C').vega;
  const v1 = black76Greeks(F, p.K25P, T, s2, 'C').vega;
  const v3 = black76Greeks(F, p.K25C, T, s2, 'C').vega;
  const c1 = black76Price(F, p.K25P, T, p.vol25P, 'C') - black76Price(F, p.K25P, T, s2, 'C');
  const c3 = black76Price(F, p.K25C, T, p.vol25C, 'C') - black76Price(F, p.K25C, T, s2, 'C');
  // Calls and puts get the same correction (put-call parity holds for each pillar term).
  return black76Price(F, K, T, s2, optionType) + (vegaK / v1) * y1 * c1 + (vegaK / v3) * y3 * c3;
}

/**
 * Implied volatility of the exact VV price ({@link vannaVolgaPrice}) at K, from the out-of-the-money option
 * (put below F, call at or above). NaN when the VV price leaves the no-arbitrage price bounds.
 * @throws RangeError on invalid parameters, F, T or K
 */
export function vannaVolgaPriceImpliedVol(p: VannaVolgaParams, F: number, K: number, T: number): number {
  const type = K < F ? 'P' : 'C';
  const price = vannaVolgaPrice(p, F, K, T, type);
  try {
    return impliedVolBlack76(price, F, K, T, type);
  } catch {
    return Number.NaN;
  }
}

/**
 * Wing boundaries of a VV smile: the strikes whose forward Black call delta on the VV smile (between the
 * pillars' second/first-order formula) is 0.90 (K10P, below the 25-delta put) and 0.10 (K10C, above the
 * 25-delta call), by {@link strikeFromDelta}. If the root search fails, or gives a strike not beyond the
 * 25-delta pillar, the flat-ATM-vol closed form is used, and if that is not beyond the pillar either, the
 * pillar's log-distance from Katm is doubled (K10C = K25C^2/Katm, K10P = K25P^2/Katm).
 * @throws RangeError on invalid parameters, F or T
 */
export function vannaVolgaWingStrikes(p: VannaVolgaParams, F: number, T: number): { K10P: number; K10C: number } {
  assertParams('vannaVolgaWingStrikes', p);
  assertFT('vannaVolgaWingStrikes', F, T);
  return wingStrikesOn(p, F, T, vvKernel(p, F, T).core);
}

/** {@link vannaVolgaWingStrikes} on the core smile `smile` of p (checked parameters). */
function wingStrikesOn(p: VannaVolgaParams, F: number, T: number, smile: (K: number) => number): { K10P: number; K10C: number } {
  const solve = (delta: number): number => {
    try {
      return strikeFromDelta(delta, F, T, smile);
    } catch {
      return Number.NaN;
    }
  };
  let K10C = solve(0.1);
  if (!(K10C > p.K25C)) K10C = strikeFromDeltaFlat(0.1, F, T, p.volAtm);
  if (!(K10C > p.K25C && Number.isFinite(K10C))) K10C = (p.K25C * p.K25C) / p.Katm;
  let K10P = solve(0.9);
  if (!(K10P < p.K25P && K10P > 0)) K10P = strikeFromDeltaFlat(0.9, F, T, p.volAtm);
  if (!(K10P < p.K25P && K10P > 0)) K10P = (p.K25P * p.K25P) / p.Katm;
  return { K10P, K10C };
}

/**
 * The full VV smile of an expiry as a function of strike, with the wing rule of the module docstring.
 * Computes the wing strikes once (unless given in `p`). The returned function never returns NaN for
 * K > 0 (it throws RangeError for K not finite > 0).
 * @throws RangeError on invalid parameters, F or T
 */
export function vannaVolgaSmile(p: VannaVolgaParams, F: number, T: number): (K: number) => number {
  assertParams('vannaVolgaSmile', p);
  assertFT('vannaVolgaSmile', F, T);
  const core = vvKernel(p, F, T).core;
  const t = wingTermsOn(p, F, T, core);
  const cLo = wingCurvatureBound(p.wingCurvL ?? 0, t, 'L');
  const cHi = wingCurvatureBound(p.wingCurvR ?? 0, t, 'R');
  return (K: number): number => {
    if (!(K > 0 && Number.isFinite(K))) throw new RangeError(`vannaVolgaSmile: K must be finite > 0, got ${K}`);
    const k = Math.log(K / F);
    if (k < t.kLo) return vannaVolgaWingVol(t, 'L', k, cLo, T);
    if (k > t.kHi) return vannaVolgaWingVol(t, 'R', k, cHi, T);
    return core(K);
  };
}

/**
 * What the wing rule of {@link vannaVolgaSmile} needs of the core smile, independent of the wing curvatures: the
 * 10-delta log-moneyness kLo, kHi; the core's total variance wLo, wHi there and its outward slopes sLo (<= 0),
 * sHi (>= 0) in total variance per unit k (central difference, clamped to [-VV_MAX_WING_SLOPE, VV_MAX_WING_SLOPE]);
 * the hyperbola scales dLo, dHi (`wingScaleL/R`, else {@link defaultWingScales}). Computing them once lets a
 * curvature search evaluate the wings without re-evaluating the core (calibrateVannaVolga).
 */
interface VannaVolgaWingTerms {
  readonly kLo: number;
  readonly kHi: number;
  readonly wLo: number;
  readonly wHi: number;
  readonly sLo: number;
  readonly sHi: number;
  readonly dLo: number;
  readonly dHi: number;
}

/** The {@link VannaVolgaWingTerms} of a VV smile (wing strikes computed unless given in `p`). @throws RangeError on invalid parameters, F or T */
function vannaVolgaWingTerms(p: VannaVolgaParams, F: number, T: number): VannaVolgaWingTerms {
  assertParams('vannaVolgaSmile', p);
  assertFT('vannaVolgaSmile', F, T);
  return wingTermsOn(p, F, T, vvKernel(p, F, T).core);
}

/** {@link vannaVolgaWingTerms} on the core smile `core` of p (checked parameters, F and T). */
function wingTermsOn(p: VannaVolgaParams, F: number, T: number, core: (K: number) => number): VannaVolgaWingTerms {
  const wings = p.K10P !== undefined && p.K10C !== undefined ? { K10P: p.K10P, K10C: p.K10C } : wingStrikesOn(p, F, T, core);
  const kLo = Math.log(wings.K10P / F);
  const kHi = Math.log(wings.K10C / F);
  const w = (k: number): number => {
    const v = core(F * Math.exp(k));
    return v * v * T;
  };
  const slopeAt = (k: number): number => {
    const h = 1e-5 * Math.max(1, Math.abs(k));
    return (w(k + h) - w(k - h)) / (2 * h);
  };
  return {
    kLo,
    kHi,
    wLo: w(kLo),
    wHi: w(kHi),
    // Outward slopes: the left wing grows as k decreases (dw/dk <= 0), the right wing as k increases.
    sLo: Math.min(0, Math.max(-VV_MAX_WING_SLOPE, slopeAt(kLo))),
    sHi: Math.max(0, Math.min(VV_MAX_WING_SLOPE, slopeAt(kHi))),
    dLo: p.wingScaleL ?? defaultWingScales(p.K25P, p.K25C, wings.K10P, wings.K10C).wingScaleL,
    dHi: p.wingScaleR ?? defaultWingScales(p.K25P, p.K25C, wings.K10P, wings.K10C).wingScaleR,
  };
}

/**
 * The wing scales of documents written before they were fitted, and the start of their search: each wing's own
 * log-distance between its 25-delta and 10-delta strikes, |ln(K25/K10)| (at least 1e-4).
 */
export function defaultWingScales(K25P: number, K25C: number, K10P: number, K10C: number): { wingScaleL: number; wingScaleR: number } {
  return { wingScaleL: Math.max(Math.log(K25P / K10P), 1e-4), wingScaleR: Math.max(Math.log(K10C / K25C), 1e-4) };
}

/**
 * A wing curvature as served: at most VV_MAX_WING_SLOPE minus the outward slope, so that the wing's asymptotic slope
 * in total variance, s + c, stays within VV_MAX_WING_SLOPE (below Lee's moment bound of 2).
 */
function wingCurvatureBound(c: number, t: VannaVolgaWingTerms, side: 'L' | 'R'): number {
  return side === 'L' ? Math.max(Math.min(c, VV_MAX_WING_SLOPE + t.sLo), t.sLo) : Math.max(Math.min(c, VV_MAX_WING_SLOPE - t.sHi), -t.sHi);
}

/**
 * Implied vol on one wing beyond its 10-delta strike (the wing rule of the module docstring): total variance
 * w = w10 + s x + c (sqrt(x^2 + d^2) - d), x the log-moneyness distance beyond the 10-delta strike; `c` already
 * bounded by {@link wingCurvatureBound}.
 */
function vannaVolgaWingVol(t: VannaVolgaWingTerms, side: 'L' | 'R', k: number, c: number, T: number): number {
  if (side === 'L') {
    const x = t.kLo - k;
    return Math.sqrt((t.wLo - t.sLo * x + c * (Math.sqrt(x * x + t.dLo * t.dLo) - t.dLo)) / T);
  }
  const x = k - t.kHi;
  return Math.sqrt((t.wHi + t.sHi * x + c * (Math.sqrt(x * x + t.dHi * t.dHi) - t.dHi)) / T);
}

/**
 * VV implied vol at strike K with the service's wing rule (see the module docstring): second-order
 * Castagna-Mercurio 2007 formula between the 10-delta strikes (first order where it fails), linear total
 * variance beyond. Never NaN for valid inputs. For many strikes, build {@link vannaVolgaSmile} once.
 * @param p VV parameters (pillar strikes and vols; optional wing strikes and order)
 * @param F the expiry's forward (> 0), T years (> 0), K strike (> 0)
 * @throws RangeError on invalid parameters, F, T or K
 */
export function vannaVolgaImpliedVol(p: VannaVolgaParams, F: number, K: number, T: number): number {
  return vannaVolgaSmile(p, F, T)(K);
}

// ---------------------------------------------------------------------------------------------
// Pillars from market quotes, and the per-expiry "calibration" with diagnostics

/** Options of {@link calibrateVannaVolga}. */
export interface VannaVolgaCalibrationOptions {
  /** Approximation order between the 10-delta strikes, default 'second'. */
  readonly order?: VannaVolgaOrder;
  /** Outlier rule (Hampel identifier on the quotes, see {@link calibrateVannaVolga}): deviations beyond
   * this many robust sigmas are down-weighted, beyond twice as many dropped. Default 4. */
  readonly outlierSigmas?: number;
  /** Deviations below this many vol points are never outliers. Default 1. */
  readonly outlierFloorVolPts?: number;
  /** At most this fraction of the quotes is dropped. Default 0.1; 0 disables the filter. */
  readonly maxOutlierFraction?: number;
  /** Density-check grid and tolerance (default grid: 4 ATM standard deviations, widened to the quotes). */
  readonly densityCheck?: DensityCheckOptions;
  /**
   * Warm start of the pillar least-squares fit ({@link fitPillarVols}): the pillar vols of a previous fit of (nearly)
   * the same expiry start the Levenberg-Marquardt instead of the read-off vols (the incremental refit of issue 12
   * item 1). The bounds and the keep-only-if-better rule stay those of the read-off vols. Optional.
   */
  readonly previousPillars?: { readonly vol25P: number; readonly volAtm: number; readonly vol25C: number };
  /**
   * Objective of the pillar least squares ({@link fitPillarVols}): `uniform` (plain IV least squares, the default) or
   * `halfSpread` (issue 26: min sum ((iv - mark) / h)^2 with h of quoteWeights.ts quoteHalfSpreads, over the expiry's
   * quotes). The served model uses `halfSpread` (models/vannaVolga.ts).
   */
  readonly weighting?: 'uniform' | 'halfSpread';
}

/** Result of {@link calibrateVannaVolga} (same diagnostics as calibrateSvi and calibrateSabr). */
export interface VannaVolgaCalibrationResult {
  /** Pillars (with the wing strikes K10P, K10C and the order filled in). */
  readonly params: Required<VannaVolgaParams>;
  /** Forward and expiry used. */
  readonly F: number;
  readonly T: number;
  /** RMSE of model IV minus mark IV over the quotes used, in vol points (|iv error| · 100). */
  readonly rmseVolPts: number;
  /** Largest |model IV - mark IV| over the quotes used, vol points. */
  readonly maxErrorVolPts: number;
  /** RMSE over every valid input quote (filtered outliers included), vol points. */
  readonly rmseAllVolPts: number;
  /** Fit over the quotes between the 10-delta strikes K10P and K10C (where the VV formula itself is
   * used, not the wing extrapolation): RMSE and max error in vol points, and the number of quotes. */
  readonly within10Delta: { readonly rmseVolPts: number; readonly maxErrorVolPts: number; readonly quotes: number };
  /** Number of quotes in the market smile the pillars were read from. */
  readonly quotesUsed: number;
  /** Indices (into the input array) of quotes dropped: invalid inputs and filtered outliers. */
  readonly quotesDropped: readonly number[];
  /** Density check of the VV smile (smileArbitrage.ts). */
  readonly arbitrageFree: boolean;
  readonly minDensity: number;
  readonly kAtMinDensity: number;
  /** Human-readable account of the pillar rule and fallbacks used. */
  readonly method: string;
  /** No optimizer: always 0 (kept for the common result shape). */
  readonly iterations: number;
  /** ATM sanity check: market ATM IV (interpolated; null outside the quotes), model ATM IV, gap in vol pts. */
  readonly atm: { readonly marketIv: number | null; readonly modelIv: number; readonly errorVolPts: number | null };
  readonly warnings: readonly string[];
}

/** Piecewise-linear interpolation in k of sorted (k, iv) points, flat beyond both ends. */
function linearSmile(ks: readonly number[], ivs: readonly number[]): (k: number) => number {
  const n = ks.length;
  return (k: number): number => {
    if (n === 1 || k <= (ks[0] as number)) return ivs[0] as number;
    if (k >= (ks[n - 1] as number)) return ivs[n - 1] as number;
    let lo = 0;
    let hi = n - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if ((ks[mid] as number) <= k) lo = mid;
      else hi = mid;
    }
    const t = (k - (ks[lo] as number)) / ((ks[hi] as number) - (ks[lo] as number));
    return (ivs[lo] as number) * (1 - t) + (ivs[hi] as number) * t;
  };
}

/** RMSE, max |error| and count of residuals in vol points (0, 0, 0 for none). */
export function errorStats(res: readonly number[]): { rmseVolPts: number; maxErrorVolPts: number; quotes: number } {
  if (res.length === 0) return { rmseVolPts: 0, maxErrorVolPts: 0, quotes: 0 };
  let ss = 0;
  let mx = 0;
  for (const e of res) {
    ss += e * e;
    mx = Math.max(mx, Math.abs(e));
  }
  return { rmseVolPts: Math.sqrt(ss / res.length), maxErrorVolPts: mx, quotes: res.length };
}

/** A valid quote of {@link calibrateVannaVolga}: k = ln(K/F), mark IV (fraction), its index in the input, bid/ask IVs (null when absent). */
interface ValidQuote {
  readonly k: number;
  readonly iv: number;
  readonly i: number;
  readonly bidIv: number | null;
  readonly askIv: number | null;
  /** Outlier weight in (0, 1] ({@link dropOutlierQuotes}), multiplied into the pillar and wing fits' weights; 1 when absent. */
  readonly weight?: number;
}

/** A density check's result (smileArbitrage.ts). */
type DensityCheck = ReturnType<typeof checkSmileDensity>;

/**
 * The valid quotes (finite k, iv > 0; bid/ask IVs kept, the spread-weighted pillar fit of issue 26 reads them), sorted
 * by k then input index, and the indices of the others.
 * @throws RangeError when no valid quote remains
 */
function splitValidQuotes(quotes: readonly SviQuote[]): { valid: ValidQuote[]; dropped: number[] } {
  const valid: ValidQuote[] = [];
  const dropped: number[] = [];
  quotes.forEach((q, i) => {
    if (Number.isFinite(q.k) && Number.isFinite(q.iv) && q.iv > 0) valid.push({ k: q.k, iv: q.iv, i, bidIv: q.bidIv ?? null, askIv: q.askIv ?? null });
    else dropped.push(i);
  });
  if (valid.length === 0) throw new RangeError('calibrateVannaVolga: no valid quote (need finite k and iv > 0)');
  valid.sort((a, b) => a.k - b.k || a.i - b.i);
  return { valid, dropped };
}

/** Each inner quote's deviation (vol points) from the linear interpolation of its two neighbours, with its position t. */
function neighbourDeviations(set: readonly { k: number; iv: number }[]): { d: number; t: number }[] {
  const out: { d: number; t: number }[] = [];
  for (let t = 1; t + 1 < set.length; t++) {
    const a = set[t - 1] as { k: number; iv: number };
    const b = set[t] as { k: number; iv: number };
    const c = set[t + 1] as { k: number; iv: number };
    const pred = c.k > a.k ? a.iv + ((c.iv - a.iv) * (b.k - a.k)) / (c.k - a.k) : 0.5 * (a.iv + c.iv);
    out.push({ d: 100 * (b.iv - pred), t });
  }
  return out;
}

/**
 * Hampel identifier against the neighbours' linear interpolation, applied iteratively (the worst quote first,
 * deviations recomputed without it) so that the neighbours of a bad quote, whose own deviations it inflates, are not
 * flagged with it; the robust scale comes from the full set: thr = max(outlierSigmas 1.4826 MAD, outlierFloorVolPts).
 * Each quote's score is its deviation from the median deviation (for a flagged quote, when it was flagged), and its
 * weight tapers linearly from 1 at a score of thr to 0 at 2 thr (issue 26, 2026-11-28: a hard cut at thr made the
 * served smile jump when 0.1 vol pt of mark noise carried a quote across it; schepal 15-day expiry, ATM 80.8 <-> 81.7 %
 * under +-0.1 vp). Quotes at 2 thr or more are dropped (at most maxOutlierFraction of them, the worst first); those
 * between keep a weight in (0, 1). Only with >= 10 quotes and maxOutlierFraction > 0.
 * @returns the quotes kept, each with its `weight` (`valid` itself when none is flagged); the dropped quotes' indices
 *   are appended to `dropped` and a note to `notes`
 */
function dropOutlierQuotes(valid: ValidQuote[], options: VannaVolgaCalibrationOptions, dropped: number[], notes: string[]): ValidQuote[] {
  const maxFrac = options.maxOutlierFraction ?? 0.1;
  if (!(valid.length >= 10 && maxFrac > 0)) return valid;
  const dev0 = neighbourDeviations(valid);
  const med = median(dev0.map((x) => x.d));
  const mad = 1.4826 * median(dev0.map((x) => Math.abs(x.d - med)));
  const thr = Math.max((options.outlierSigmas ?? 4) * mad, options.outlierFloorVolPts ?? 1);
  const maxDrop = Math.floor(maxFrac * valid.length);
  // flag the worst beyond thr, one at a time, recomputing the deviations without the flagged ones
  const score = new Map<ValidQuote, number>();
  let current = valid;
  while (score.size < maxDrop && current.length >= 3) {
    let worst: { d: number; t: number } | null = null;
    for (const x of neighbourDeviations(current)) {
      if (Math.abs(x.d - med) > thr && (worst === null || Math.abs(x.d - med) > Math.abs(worst.d - med))) worst = x;
    }
    if (worst === null) break;
    score.set(current[worst.t]!, Math.abs(worst.d - med));
    current = current.filter((_, t) => t !== worst.t);
  }
  if (score.size === 0) return valid;
  const taper = (e: number): number => Math.min(1, Math.max(0, 2 - e / thr));
  const kept: ValidQuote[] = [];
  let nDropped = 0;
  let nWeighted = 0;
  for (const q of valid) {
    const e = score.get(q);
    if (e === undefined) kept.push(q);
    else if (taper(e) > 0) {
      kept.push({ ...q, weight: taper(e) });
      nWeighted++;
    } else {
      dropped.push(q.i);
      nDropped++;
    }
  }
  const parts: string[] = [];
  if (nDropped > 0) parts.push(`dropped ${nDropped} outlier quote${nDropped > 1 ? 's' : ''} (>= ${(2 * thr).toFixed(2)} vol pts from the neighbours' interpolation)`);
  if (nWeighted > 0) parts.push(`down-weighted ${nWeighted} quote${nWeighted > 1 ? 's' : ''} between ${thr.toFixed(2)} and ${(2 * thr).toFixed(2)} vol pts from it`);
  notes.push(parts.join('; '));
  return kept;
}

/** The market smile's points: the distinct k of the sorted quotes, each with the mean IV of the quotes there. */
function averagedSmilePoints(used: readonly ValidQuote[]): { ks: number[]; ivs: number[] } {
  const ks: number[] = [];
  const ivs: number[] = [];
  for (let t = 0; t < used.length; ) {
    const k = (used[t] as { k: number }).k;
    let sum = 0;
    let cnt = 0;
    while (t < used.length && (used[t] as { k: number }).k === k) {
      sum += (used[t] as { iv: number }).iv;
      cnt++;
      t++;
    }
    ks.push(k);
    ivs.push(sum / cnt);
  }
  return { ks, ivs };
}

/**
 * The 25-delta pillar strikes on the market smile (`mktAtK`: strike -> IV): delta roots, else the flat-ATM-vol closed
 * form; a call strike not above F from the closed form, a put strike not below F mirrored to F^2/K25C. Fallbacks are
 * appended to `warnings` and `notes`.
 */
function pillarStrikes(mktAtK: (K: number) => number, volAtm: number, F: number, T: number, warnings: string[], notes: string[]): { K25P: number; K25C: number } {
  const solve = (delta: number): { K: number; fallback: boolean } => {
    try {
      return { K: strikeFromDelta(delta, F, T, mktAtK), fallback: false };
    } catch {
      return { K: strikeFromDeltaFlat(delta, F, T, volAtm), fallback: true };
    }
  };
  const c25 = solve(0.25);
  const p25 = solve(0.75);
  let K25C = c25.K;
  let K25P = p25.K;
  if (c25.fallback || p25.fallback) {
    warnings.push('25-delta strike root not found on the market smile; flat-ATM-vol closed form used');
    notes.push('a 25-delta strike from the flat-ATM-vol closed form');
  }
  if (!(K25C > F)) {
    K25C = strikeFromDeltaFlat(0.25, F, T, volAtm);
    notes.push('25-delta call strike from the flat-ATM-vol closed form');
  }
  if (!(K25P < F)) {
    K25P = (F * F) / K25C;
    warnings.push('25-delta put strike not below the forward (volAtm·sqrt(T) > 1.35); mirrored to F^2/K25C');
    notes.push('25-delta put strike mirrored to F^2/K25C');
  }
  return { K25P, K25C };
}

/** Golden-section minimum of f on [a0, b0] (40 steps): the midpoint of the last bracket and its value. */
function goldenSection(f: (x: number) => number, a0: number, b0: number): { x: number; f: number } {
  let a = a0;
  let b = b0;
  const r = (Math.sqrt(5) - 1) / 2;
  let x1 = b - r * (b - a);
  let x2 = a + r * (b - a);
  let f1 = f(x1);
  let f2 = f(x2);
  for (let it = 0; it < 40; it++) {
    if (f1 <= f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - r * (b - a);
      f1 = f(x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + r * (b - a);
      f2 = f(x2);
    }
  }
  const x = 0.5 * (a + b);
  return { x, f: f(x) };
}

/**
 * The wing fit's objective (wing rule 2; issue 26, 2026-11-28): the wing's curvature c and its scale d are fitted by
 * penalized least squares,
 *   J(c, d) = sum over the quotes beyond the 10-delta strike of ((sigma(k_i) - iv_i) / WING_NOISE_IV)^2 + (c / tau)^2,
 *   tau = WING_PRIOR_CURVATURE sqrt(w_b),
 * i.e. the maximum a posteriori estimate under Gaussian marks noise and a Gaussian prior on c centred on 0, the linear
 * C1 wing (Tikhonov regularization: Hoerl and Kennard, "Ridge regression", Technometrics 12(1), 1970; the Bayesian
 * reading: Bishop, "Pattern Recognition and Machine Learning", 2006, sec. 3.3). c is the rise of the wing's asymptotic
 * slope in total variance, s + c; its prior scale follows the smile's own slope scale, which grows as the total
 * standard deviation sigma sqrt(T) = sqrt(w_b) at the junction (a slope dw/dk = 2 sigma sigma' T with an IV skew
 * sigma' of order 1/sqrt(T) in k), so the prior means the same on a 1-day and a 1-year expiry. No prior on d (its log
 * grid bounds it): with the curvature the quotes ask for near the junction, c / d, a smaller d needs a smaller c, so
 * the prior leans to the wing that bends early and then runs straight, the least far-reaching extrapolation. Each
 * quote's pull grows continuously with its distance beyond the junction (a quote at the junction has no leverage on
 * the wing's shape), so the served wing does not jump when the 10-delta strike crosses a quote, as it did with a scale
 * fitted only from 3 quotes beyond (schepal 29MAY20: k = 1 between 190.7 and 223.0 % under +-0.1 vp of mark noise).
 * WING_NOISE_IV: 0.5 vol pt, about the half-spread of a far out-of-the-money crypto option (the spread objective's
 * floor is 0.25 vp). WING_PRIOR_CURVATURE: 0.25 (measured on the three Deribit chains and the simulator, 2026-11-28,
 * against 0.1, 0.5 and 1: served wings within 0.01 vp of each other on their quotes; 0.25 moved least under +-0.1 vp of
 * mark noise beyond the quotes of those tried but 0.1, which sat further from SVI and SABR there).
 */
const WING_NOISE_IV = 0.005;
const WING_PRIOR_CURVATURE = 0.25;

/**
 * One wing's best curvature at a scale d = d0 e^u, for the quotes `beyond` that side's 10-delta strike: `at(u, exact)`
 * -> {c, f}, c by the linearized ridge least squares (or, `exact`, golden section on the penalized IV objective J of
 * {@link WING_NOISE_IV}) and f = J(c, u); `linearCost`, J of the linear wing (c = 0, any d). The wings alone move with
 * c and d: the core's terms are computed once (vannaVolgaSmile's formula, same numbers).
 */
function wingCurvatureFit(
  side: 'L' | 'R',
  terms: VannaVolgaWingTerms,
  beyond: readonly ValidQuote[],
  T: number,
  d0: number,
): { readonly at: (u: number, exact?: boolean) => { c: number; f: number }; readonly linearCost: number } {
  const noise2 = WING_NOISE_IV * WING_NOISE_IV;
  const tau = WING_PRIOR_CURVATURE * Math.sqrt(side === 'L' ? terms.wLo : terms.wHi);
  const objective = (c: number, u: number): number => {
    const d = d0 * Math.exp(u);
    const t = side === 'L' ? { ...terms, dLo: d } : { ...terms, dHi: d };
    const cEff = wingCurvatureBound(c, t, side);
    const misfit = beyond.reduce((a, q) => a + (q.weight ?? 1) * (vannaVolgaWingVol(t, side, q.k, cEff, T) - q.iv) ** 2, 0);
    return misfit / noise2 + (c / tau) ** 2;
  };
  // For a scale d the wing is w = A + c B (A the C1 continuation, B = sqrt(x^2 + d^2) - d): c by weighted linear
  // ridge least squares in total variance, each quote weighted 1/(2 iv T)^2 so that a variance residual approximates
  // the IV one (d iv = dw / (2 iv T)), clamped to [its floor, the Lee bound]; exact for that linearization.
  const t0 = side === 'L' ? terms.sLo : terms.sHi;
  const cMax = wingCurvatureBound(VV_MAX_WING_SLOPE, terms, side);
  // Issue 26: a NEGATIVE curvature flattens the wing towards a plateau (short expiries whose far marks are flat).
  // Bounds: c >= -|s| (the asymptotic slope s + c stays >= 0: w never decreases outward), and the concavity it adds
  // at the junction, w'' = c / d, at most the Gatheral-Jacquier g of the linear wing there, g0 = (1 - k w'/(2w))^2
  // - (w'^2/4)(1/w + 1/4) (GJ 2014 eq. 2.1 with w'' = 0): c >= -g0 d, half of what g >= 0 allows at the junction
  // (w' and the g terms change with x beyond it). No negative curvature where g0 <= 0. The density check still decides.
  const kb = side === 'L' ? terms.kLo : terms.kHi;
  const wb = side === 'L' ? terms.wLo : terms.wHi;
  const g0 = (1 - (kb * t0) / (2 * wb)) ** 2 - ((t0 * t0) / 4) * (1 / wb + 0.25);
  const cFloor = wingCurvatureBound(-VV_MAX_WING_SLOPE, terms, side);
  const cMinAt = (d: number): number => (g0 > 0 && Number.isFinite(g0) ? Math.max(cFloor, -g0 * d) : 0);
  const ridge = noise2 / (tau * tau);
  const cLinear = (d: number): number => {
    let num = 0;
    let den = ridge;
    for (const q of beyond) {
      const x = side === 'L' ? terms.kLo - q.k : q.k - terms.kHi;
      const A = (side === 'L' ? terms.wLo - t0 * x : terms.wHi + t0 * x) - q.iv * q.iv * T;
      const B = Math.sqrt(x * x + d * d) - d;
      const lam = (q.weight ?? 1) / (4 * q.iv * q.iv * T * T);
      num -= lam * B * A;
      den += lam * B * B;
    }
    return Math.min(Math.max(num / den, cMinAt(d)), cMax);
  };
  const at = (u: number, exact = false): { c: number; f: number } => {
    const d = d0 * Math.exp(u);
    if (!exact) {
      const c = cLinear(d);
      return { c, f: objective(c, u) };
    }
    const g = goldenSection((c) => objective(c, u), Math.min(cMinAt(d), 0), VV_MAX_WING_SLOPE);
    return { c: g.x, f: g.f };
  };
  return { at, linearCost: objective(0, 0) };
}

/**
 * Wing curvature c and scale d of one side (wing rule 2), on the quotes beyond that side's 10-delta strike (none: c =
 * 0 at the default scale): the penalized objective J of {@link WING_NOISE_IV} over u = ln(d / d0) on a grid of 13
 * points from 1/16 to 4 times the default scale (each u at its own linearized c), then golden section in u within a
 * factor sqrt 2 of the best point, the final c at the chosen d by golden section on J; the linear wing at the default
 * scale (c = 0, J = the misfit alone) when nothing lowers J. Continuous in the quotes: no quote-count threshold.
 */
function fitWing(side: 'L' | 'R', terms: VannaVolgaWingTerms, used: readonly ValidQuote[], T: number): { c: number; d: number } {
  const d0 = side === 'L' ? terms.dLo : terms.dHi;
  const beyond = used.filter((q) => (side === 'L' ? q.k < terms.kLo : q.k > terms.kHi));
  if (beyond.length === 0) return { c: 0, d: d0 };
  const { at, linearCost } = wingCurvatureFit(side, terms, beyond, T, d0);
  let best = { u: 0, ...at(0) };
  for (let j = -8; j <= 4; j++) {
    if (j === 0) continue;
    const u = (j / 2) * Math.LN2;
    const r = at(u);
    if (r.f < best.f * (1 - 1e-12)) best = { u, ...r };
  }
  const refined = goldenSection((u) => at(u).f, best.u - 0.5 * Math.LN2, best.u + 0.5 * Math.LN2);
  const u = refined.f < best.f ? refined.x : best.u;
  const exact = at(u, true);
  // the linear wing (c = 0) is the same at every scale (J = its misfit alone): kept, at the default scale, unless beaten
  return exact.f < linearCost ? { c: exact.c, d: d0 * Math.exp(u) } : { c: 0, d: d0 };
}

/** The largest factor in [0, 1] for which `ok` holds (bisection, 12 steps), given that 0 passes. */
function largestPassingFactor(ok: (mu: number) => boolean): number {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 12; i++) {
    const mid = 0.5 * (lo + hi);
    if (ok(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * Butterfly: when the curved wings fail the density check but the linear ones pass, the curvature of one side (the
 * failing strike's first) is scaled down by the largest factor in [0, 1] that passes (bisection, 12 steps): the
 * smallest change; both sides together only when neither alone suffices. A note is appended when scaled.
 * @param params the fitted smile (pillars, order, wing strikes, curvatures and scales)
 * @param ks the market smile's sorted k (the check's range)
 * @returns the served curvatures and the served smile's check (unscaled, or at the chosen factors; null when both
 *   curvatures are 0: no check run)
 */
function scaleWingsForDensity(
  params: Required<VannaVolgaParams>,
  ks: readonly number[],
  F: number,
  T: number,
  densityCheck: DensityCheckOptions | undefined,
  notes: string[],
): { wingCurvL: number; wingCurvR: number; servedCheck: DensityCheck | null } {
  let { wingCurvL, wingCurvR } = params;
  let servedCheck: DensityCheck | null = null;
  const kLoQ = Math.min(...ks);
  const kHiQ = Math.max(...ks);
  // memoized by the scale factors: the final check reuses the bisection's check of the factors it chose
  const checked = new Map<string, DensityCheck>();
  const checkAt = (muL: number, muR: number): DensityCheck => {
    const key = `${muL},${muR}`;
    let chk = checked.get(key);
    if (chk === undefined) {
      chk = checkSmileDensity(vannaVolgaSmile({ ...params, wingCurvL: muL * wingCurvL, wingCurvR: muR * wingCurvR }, F, T), F, T, {
        kMin: kLoQ,
        kMax: kHiQ,
        ...densityCheck,
      });
      checked.set(key, chk);
    }
    return chk;
  };
  const passes = (muL: number, muR: number): boolean => checkAt(muL, muR).arbitrageFree;
  if (wingCurvL !== 0 || wingCurvR !== 0) servedCheck = checkAt(1, 1);
  if (servedCheck !== null && !servedCheck.arbitrageFree && passes(0, 0)) {
    const failingStrike = servedCheck.atStrike;
    // One side alone first when that suffices (the side with the failing strike first): a call wing that
    // fails does not flatten the put wing. Else both together.
    const callSideFirst = Number.isFinite(failingStrike) && failingStrike > F;
    let muL = 1;
    let muR = 1;
    if (callSideFirst && passes(1, 0)) muR = largestPassingFactor((mu) => passes(1, mu));
    else if (passes(0, 1)) muL = largestPassingFactor((mu) => passes(mu, 1));
    else if (passes(1, 0)) muR = largestPassingFactor((mu) => passes(1, mu));
    else muL = muR = largestPassingFactor((mu) => passes(mu, mu));
    servedCheck = checkAt(muL, muR); // the served smile's check (memoized), taken before the curvatures change
    wingCurvL *= muL;
    wingCurvR *= muR;
    notes.push(`wing curvatures scaled by ${muL.toFixed(4)} (put side) and ${muR.toFixed(4)} (call side) to pass the density check`);
  }
  return { wingCurvL, wingCurvR, servedCheck };
}

/** What {@link vannaVolgaResult} reads of a finished calibration. */
interface VannaVolgaFitted {
  readonly params: Required<VannaVolgaParams>;
  readonly valid: readonly ValidQuote[];
  readonly used: readonly ValidQuote[];
  readonly dropped: number[];
  /** The market smile's sorted k. */
  readonly ks: readonly number[];
  /** The market smile's ATM vol (at k = 0, flat beyond the quotes). */
  readonly volAtm: number;
  /** The served smile's density check when the wing scaling ran one, else null. */
  readonly servedCheck: DensityCheck | null;
  readonly warnings: string[];
  readonly notes: readonly string[];
}

/**
 * The calibration result of the fitted smile: errors (vol points) on the quotes used, all valid quotes and those
 * inside the 10-delta strikes, the density check (the served one, else run here), the ATM comparison and the method.
 * Appends the butterfly and ATM warnings to `fit.warnings`; sorts `fit.dropped`.
 */
function vannaVolgaResult(fit: VannaVolgaFitted, F: number, T: number, options: VannaVolgaCalibrationOptions): VannaVolgaCalibrationResult {
  const { params, valid, used, dropped, ks, volAtm, servedCheck, warnings, notes } = fit;
  const smile = vannaVolgaSmile(params, F, T);
  const resUsed = used.map((q) => 100 * (smile(F * Math.exp(q.k)) - q.iv));
  const resAll = valid.map((q) => 100 * (smile(F * Math.exp(q.k)) - q.iv));
  const { rmseVolPts: rmse, maxErrorVolPts: maxErr } = errorStats(resUsed);
  const rmseAll = errorStats(resAll).rmseVolPts;
  const kLo10 = Math.log(params.K10P / F);
  const kHi10 = Math.log(params.K10C / F);
  const resCore = used.filter((q) => q.k >= kLo10 && q.k <= kHi10).map((q) => 100 * (smile(F * Math.exp(q.k)) - q.iv));

  const kMin = ks[0] as number;
  const kMax = ks[ks.length - 1] as number;
  // the same smile and options as the wing scaling's check, scaled or not (kMin/kMax: ks is sorted)
  const chk = servedCheck ?? checkSmileDensity(smile, F, T, { kMin, kMax, ...options.densityCheck });
  if (!chk.arbitrageFree) warnings.push(`butterfly arbitrage: min density ${chk.minDensity.toExponential(3)} at K = ${chk.atStrike.toPrecision(6)}`);
  const marketAtm = kMin <= 0 && kMax >= 0 ? volAtm : null;
  const modelAtm = smile(F);
  const atmErr = marketAtm === null ? null : 100 * (modelAtm - marketAtm);
  if (marketAtm === null) warnings.push('the quotes do not straddle the forward: ATM vol is the nearest quote (flat extrapolation)');

  const rule = ks.length === 1 ? 'flat smile through the single quote' : `pillars read off the linear-in-k interpolation of ${ks.length} mark IVs`;
  const method = [
    `vanna-volga ${params.order} order (Castagna-Mercurio 2007); ${rule}; beyond the 10-delta strikes C1 wings in total variance with fitted curvature c = ${params.wingCurvL.toFixed(4)} (put side), ${params.wingCurvR.toFixed(4)} (call side) and scale d = ${params.wingScaleL.toFixed(4)}, ${params.wingScaleR.toFixed(4)}`,
    ...notes,
  ].join('; ');
  dropped.sort((a, b) => a - b);
  return {
    params,
    F,
    T,
    rmseVolPts: rmse,
    maxErrorVolPts: maxErr,
    rmseAllVolPts: rmseAll,
    within10Delta: errorStats(resCore),
    quotesUsed: used.length,
    quotesDropped: dropped,
    arbitrageFree: chk.arbitrageFree,
    minDensity: chk.minDensity,
    kAtMinDensity: Number.isFinite(chk.atStrike) ? Math.log(chk.atStrike / F) : Number.NaN,
    method,
    iterations: 0,
    atm: { marketIv: marketAtm, modelIv: modelAtm, errorVolPts: atmErr },
    warnings,
  };
}


/**
 * Builds the VV smile of one expiry from its quotes and reports the fit diagnostics.
 *
 * Pillar rule (documented in docs/conventions.md): the market smile is the piecewise-linear interpolation
 * in log-moneyness k = ln(K/F) of the expiry's mark IVs (quotes at the same k averaged; flat beyond the
 * lowest and highest quoted k). ATM: Katm = F, volAtm = smile(0). 25-delta call: the strike K25C > F
 * whose plain forward Black call delta N(d1), computed with the smile's own vol at K, is 0.25
 * (strikeFromDelta, Brent), vol25C = smile(ln(K25C/F)); 25-delta put: call delta 0.75 (put delta -0.25).
 * If a delta root cannot be found, the flat-ATM-vol closed form is used; if the 25-delta put strike is
 * not below the forward (possible only when volAtm·sqrt(T) > 1.35), it is mirrored to F^2/K25C. All
 * fallbacks are named in `method` and `warnings`. These read-off pillar vols then start a least-squares fit
 * of the three pillar vols to the quotes of the marks' own 10-delta band ({@link inTenDeltaBand}, {@link fitPillarVols};
 * kept only when it lowers the error; named in `method`).
 *
 * Robustness: with >= 10 quotes, a Hampel identifier (F. R. Hampel, "The influence curve and its role in
 * robust estimation", JASA 69, 1974; Hampel et al., "Robust Statistics", 1986) flags quotes whose IV
 * deviates from the linear interpolation of its two neighbours by more than
 * thr = max(outlierSigmas · 1.4826 · MAD, outlierFloorVolPts) (MAD of all those deviations), the worst first
 * and the deviations recomputed after each flag (at most maxOutlierFraction of the quotes); a flagged quote's weight
 * in the pillar and wing fits tapers from 1 at thr to 0 at 2 thr, where it is dropped (a redescending weight, as
 * Hampel's three-part redescending M-estimator: the fit stays continuous in the marks), so a single bad mark next
 * to a pillar does not move it and its neighbours stay. One quote gives a flat smile; two or more give
 * the linear market smile above. Never throws for valid inputs with at least one valid quote.
 *
 * @param quotes the expiry's quotes (k = ln(K/F), mark IV fraction); invalid ones (non-finite k, iv <= 0)
 *   are dropped and listed in quotesDropped
 * @param F the expiry's forward (> 0); T years ACT/365 (> 0)
 * @throws RangeError when F or T are not finite and > 0, or no valid quote remains
 */
export function calibrateVannaVolga(
  quotes: readonly SviQuote[],
  F: number,
  T: number,
  options: VannaVolgaCalibrationOptions = {},
): VannaVolgaCalibrationResult {
  assertFT('calibrateVannaVolga', F, T);
  const { valid, dropped } = splitValidQuotes(quotes);
  const warnings: string[] = [];
  const notes: string[] = [];
  const used = dropOutlierQuotes(valid, options, dropped, notes);
  // Market smile: average duplicates at the same k.
  const { ks, ivs } = averagedSmilePoints(used);
  const mkt = linearSmile(ks, ivs);
  const mktAtK = (K: number): number => mkt(Math.log(K / F));
  const volAtm = mkt(0);
  const { K25P, K25C } = pillarStrikes(mktAtK, volAtm, F, T, warnings, notes);
  const order = options.order ?? 'second';
  const read: VannaVolgaParams = { K25P, Katm: F, K25C, vol25P: mktAtK(K25P), volAtm, vol25C: mktAtK(K25C), order };
  const base = fitPillarVols(read, used, F, T, notes, options.previousPillars, options.weighting ?? 'uniform');
  const wings = vannaVolgaWingStrikes(base, F, T);
  // Wing curvatures and scales (wing rule 2), each side alone (the other side does not move them): fitWing.
  const terms = vannaVolgaWingTerms({ ...base, order, K10P: wings.K10P, K10C: wings.K10C }, F, T);
  const fitL = fitWing('L', terms, used, T);
  const fitR = fitWing('R', terms, used, T);
  const wingScaleL = fitL.d;
  const wingScaleR = fitR.d;
  const fitted: Required<VannaVolgaParams> = { ...base, order, K10P: wings.K10P, K10C: wings.K10C, wingCurvL: fitL.c, wingCurvR: fitR.c, wingScaleL, wingScaleR };
  const { wingCurvL, wingCurvR, servedCheck } = scaleWingsForDensity(fitted, ks, F, T, options.densityCheck, notes);
  const params: Required<VannaVolgaParams> = { ...base, order, K10P: wings.K10P, K10C: wings.K10C, wingCurvL, wingCurvR, wingScaleL, wingScaleR };
  return vannaVolgaResult({ params, valid, used, dropped, ks, volAtm, servedCheck, warnings, notes }, F, T, options);
}

/**
 * The quotes the pillar vols are fitted to: those whose own mark's plain forward Black call delta N(d1),
 * d1 = (-k + sigma^2 T / 2) / (sigma sqrt T) with sigma the quote's mark IV (Black 1976, r = 0), lies in [0.10, 0.90]:
 * the 10-delta band by the market's own deltas, independent of the fit (beyond it the service serves its wing rule).
 */
function inTenDeltaBand(q: SviQuote, T: number): boolean {
  const s = q.iv * Math.sqrt(T);
  if (!(s > 0) || !Number.isFinite(s)) return false;
  const delta = normCdf(-q.k / s + 0.5 * s);
  return delta >= 0.1 && delta <= 0.9;
}

/**
 * Pillar rule: the three pillar vols (ATM, 25-delta put, 25-delta call; strikes fixed) are fitted by least
 * squares of the VV smile's IV to the quotes of the marks' own 10-delta band ({@link inTenDeltaBand}),
 * starting from those read-off vols (projected Levenberg-Marquardt, lm.ts). Reading a pillar off one mark makes
 * the whole smile inherit that mark's noise: Deribit marks dip or jump locally (2020-05-14 15MAY20/29MAY20:
 * 9250 marked 76.9 % between 85.7 % and 76.0 %), and Castagna-Mercurio's second-order formula then bends every
 * strike to pass through it. Treating the pillar vols as the three free parameters of the VV smile (its
 * consistent-smile reading: Castagna and Mercurio, "The Vanna-Volga method for implied volatilities", Risk,
 * January 2007, sec. "a consistent smile", and Bossens, Rayée, Skantzos and Deelstra, "Vanna-Volga methods
 * applied to FX derivatives: from theory to market practice", IJTAF 13(8), 2010, sec. 5, which calibrate the
 * pillar quotes to the market smile) keeps the formula and takes the level, skew and curvature from every
 * quote. The fitted pillars are kept only when they lower the squared IV error over those quotes (never worse
 * than the read-off ones); vols are bounded to [0.2, 5] times the read-off vol. Fewer than 5 quotes in range:
 * the read-off pillars are kept. With `weighting = 'halfSpread'` each IV residual is divided by the quote's h
 * (quoteWeights.ts quoteHalfSpreads over all the expiry's quotes, so a no-bid quote gets the expiry's widest h):
 * the spread-weighted objective of issue 26 (weights normalized to mean 1 over the fitted quotes).
 */
function fitPillarVols(
  read: VannaVolgaParams,
  used: readonly SviQuote[],
  F: number,
  T: number,
  notes: string[],
  previous: { readonly vol25P: number; readonly volAtm: number; readonly vol25C: number } | undefined,
  weighting: 'uniform' | 'halfSpread',
): VannaVolgaParams {
  const hAll = quoteHalfSpreads(used);
  const insideIdx = used.map((q, i) => (inTenDeltaBand(q, T) ? i : -1)).filter((i) => i >= 0);
  const inside = insideIdx.map((i) => used[i]!);
  if (inside.length < 5) return read;
  const om = insideIdx.map((i) => (weighting === 'halfSpread' ? 1 / (hAll[i]! * hAll[i]!) : 1) * (used[i]!.weight ?? 1));
  const omMean = om.reduce((a, x) => a + x, 0) / om.length;
  const sw = om.map((x) => Math.sqrt(x / omMean));
  // Pillar strikes keep the delta convention with the pillar's own vol (decisions.md): when the read-off strike
  // is the forward-delta 25D strike of its vol, it moves with the fitted vol (closed form strikeFromDeltaFlat).
  const nd1 = (K: number, v: number): number => normCdf(Math.log(F / K) / (v * Math.sqrt(T)) + 0.5 * v * Math.sqrt(T));
  const moveC = Math.abs(nd1(read.K25C, read.vol25C) - 0.25) < 1e-8;
  const moveP = Math.abs(nd1(read.K25P, read.vol25P) - 0.75) < 1e-8;
  const at = (x: readonly number[]): VannaVolgaParams => ({
    ...read,
    vol25P: x[0]!,
    volAtm: x[1]!,
    vol25C: x[2]!,
    K25P: moveP ? strikeFromDeltaFlat(0.75, F, T, x[0]!) : read.K25P,
    K25C: moveC ? strikeFromDeltaFlat(0.25, F, T, x[2]!) : read.K25C,
  });
  const res = (x: readonly number[]): number[] => {
    const p = at(x);
    let sm: (K: number) => number;
    try {
      // the wing strikes of these pillars, solved inside on the same prepared core
      sm = vannaVolgaSmile({ ...p, K10P: undefined, K10C: undefined }, F, T);
    } catch {
      return inside.map(() => Number.NaN);
    }
    return inside.map((q, i) => (sm(F * Math.exp(q.k)) - q.iv) * sw[i]!);
  };
  const x0 = [read.vol25P, read.volAtm, read.vol25C];
  const lower = x0.map((v) => 0.2 * v);
  const upper = x0.map((v) => 5 * v);
  const cost0 = 0.5 * res(x0).reduce((a, r) => a + r * r, 0);
  // warm start: the previous fit's pillar vols, when inside the bounds
  const prev = previous ? [previous.vol25P, previous.volAtm, previous.vol25C] : null;
  const start = prev && prev.every((v, i) => Number.isFinite(v) && v >= lower[i]! && v <= upper[i]!) ? prev : x0;
  const r = levenbergMarquardt(res, start, {
    lower,
    upper,
    project: (x) => x.map((v, i) => Math.min(upper[i]!, Math.max(lower[i]!, v))),
    maxIterations: 60,
  });
  if (!(r.cost < cost0) || !r.x.every(Number.isFinite)) return read;
  const out = at(r.x);
  if (!(out.K25P < F && out.K25C > F)) return read;
  notes.push(`pillar vols fitted${weighting === 'halfSpread' ? ' (spread-weighted)' : ''} to ${inside.length} quotes of the marks' 10-delta band (call delta 0.10 to 0.90; 25P ${read.vol25P.toFixed(4)} -> ${r.x[0]!.toFixed(4)}, ATM ${read.volAtm.toFixed(4)} -> ${r.x[1]!.toFixed(4)}, 25C ${read.vol25C.toFixed(4)} -> ${r.x[2]!.toFixed(4)})`);
  return out;
}
