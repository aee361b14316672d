/**
 * Extended SSVI (eSSVI) as a served model, one expiry at a time: S. Hendriks, C. Martini, "The extended SSVI
 * volatility surface", Journal of Computational Finance, 2019 (SSRN 2971502), on the SSVI slice of J. Gatheral,
 * A. Jacquier, "Arbitrage-free SVI volatility surfaces", Quantitative Finance 14(1), 2014 (arXiv:1204.0646).
 *
 * Slice (Gatheral-Jacquier 2014 Definition 4.1, eq. (4.1), with the slice's own rho as in eSSVI, Hendriks-Martini
 * 2019 sec. 2):
 *   w(k) = theta/2 (1 + rho phi k + sqrt((phi k + rho)^2 + 1 - rho^2)),
 * theta > 0 the ATM total variance (w(0) = theta), rho in (-1, 1), phi > 0; psi = theta phi. Stored: theta, rho, phi.
 * Units: k = ln(K/F), T years ACT/365, w = sigma^2 T (dimensionless), phi per unit of k.
 *
 * Wings: w is defined for every k and is asymptotically LINEAR in |k| by construction, with slopes psi (1 + rho) / 2
 * (k -> +inf) and psi (1 - rho) / 2 (k -> -inf); the butterfly domain below keeps them under Lee's bound 2 (R. Lee,
 * "The moment formula for implied volatility at extreme strikes", Mathematical Finance 14(3), 2004). No separate wing
 * rule: the served smile is the formula everywhere.
 *
 * Butterfly (Gatheral-Jacquier 2014 Theorem 4.2, per slice): theta phi (1 + |rho|) < 4 and theta phi^2 (1 + |rho|) <= 4
 * make g(k) >= 0 (their eq. (2.1)) everywhere. The fit searches only that domain; the served smile is also checked
 * numerically (src/quant/smileArbitrage.ts checkSmileDensity on fitKit.ts servedGrid).
 *
 * Calendar: see {@link essviCalendarFree} (the condition) and {@link fitEssviSlice} (what the fit guarantees).
 */
import { checkSmileDensity } from '../smileArbitrage.js';
import { gridLocalMinima, levenbergMarquardt } from '../lm.js';
import { marketAtmIv } from '../quoteWeights.js';
import { errorsAgainst, finiteOrNull, halfSpreadObjectiveWeights, servedGrid } from './fitKit.js';
import { need, usableStart, type FitContext, type SliceFit, type SliceInput, type SmileModel } from './types.js';

/** eSSVI slice parameters (Gatheral-Jacquier 2014 eq. (4.1)): theta > 0 ATM total variance, |rho| < 1, phi > 0. */
export interface EssviParams {
  readonly theta: number;
  readonly rho: number;
  readonly phi: number;
}

/** Largest |rho| the fit uses (the formula needs |rho| < 1). */
export const ESSVI_MAX_ABS_RHO = 0.999;
/** Fewest valid quotes of the full 3-parameter fit; fewer borrow rho and phi from `ctx.lastFull` (sparse mode). */
export const ESSVI_MIN_QUOTES_FULL = 5;
/**
 * Shape of the sparse mode without any prior: rho = 0 and phi = ESSVI_DEFAULT_ETA / sqrt(theta) (the power law
 * phi(theta) = eta theta^-gamma of Gatheral-Jacquier 2014 eq. (4.5) with gamma = 1/2).
 */
export const ESSVI_DEFAULT_ETA = 0.5;
/** Relative margin kept inside the strict butterfly bound theta phi (1 + |rho|) < 4. */
const STRICT_MARGIN = 1e-9;

/**
 * eSSVI total variance w(k) (Gatheral-Jacquier 2014 eq. (4.1)); dimensionless. Defined for every finite k.
 */
export function essviTotalVariance(p: EssviParams, k: number): number {
  const x = p.phi * k + p.rho;
  return 0.5 * p.theta * (1 + p.rho * p.phi * k + Math.sqrt(x * x + 1 - p.rho * p.rho));
}

/** Analytic dw/dk of {@link essviTotalVariance}: theta/2 (rho phi + phi (phi k + rho) / sqrt((phi k + rho)^2 + 1 - rho^2)). */
export function essviTotalVarianceDk(p: EssviParams, k: number): number {
  const x = p.phi * k + p.rho;
  return 0.5 * p.theta * p.phi * (p.rho + x / Math.sqrt(x * x + 1 - p.rho * p.rho));
}

/**
 * Violations of the eSSVI parameter domain and of the butterfly conditions of Gatheral-Jacquier 2014 Theorem 4.2
 * (theta phi (1 + |rho|) < 4, theta phi^2 (1 + |rho|) <= 4, with a relative tolerance `tol`); empty when valid.
 */
export function essviParamViolations(p: EssviParams, tol = 1e-12): string[] {
  const out: string[] = [];
  if (!(Number.isFinite(p.theta) && p.theta > 0)) out.push(`theta must be finite > 0 (got ${p.theta})`);
  if (!(Number.isFinite(p.rho) && Math.abs(p.rho) < 1)) out.push(`rho must be in (-1, 1) (got ${p.rho})`);
  if (!(Number.isFinite(p.phi) && p.phi > 0)) out.push(`phi must be finite > 0 (got ${p.phi})`);
  if (out.length > 0) return out;
  const r = 1 + Math.abs(p.rho);
  if (!(p.theta * p.phi * r < 4)) out.push(`butterfly: theta phi (1 + |rho|) = ${p.theta * p.phi * r} must be < 4 (Gatheral-Jacquier 2014 Thm 4.2)`);
  if (p.theta * p.phi * p.phi * r > 4 * (1 + tol)) out.push(`butterfly: theta phi^2 (1 + |rho|) = ${p.theta * p.phi * p.phi * r} must be <= 4 (Gatheral-Jacquier 2014 Thm 4.2)`);
  return out;
}

/**
 * Calendar condition between an eSSVI slice `short` (theta1, rho1, psi1 = theta1 phi1) and a longer one `long`
 * (theta2, rho2, psi2), psi = theta phi:
 *   theta2 / theta1 >= psi2 / psi1 >= max((1 + rho1) / (1 + rho2), (1 - rho1) / (1 - rho2)),
 * i.e. |psi2 rho2 - psi1 rho1| <= psi2 - psi1 (the wings of the longer slice at least as steep: the necessary
 * condition of Hendriks-Martini 2019 sec. 3 on the asymptotic slopes psi (1 +- rho) / 2) together with phi2 <= phi1.
 * It is a SUFFICIENT condition for w_long(k) >= w_short(k) at every k (the sequential form of the two-slice
 * condition of Hendriks-Martini 2019 sec. 3, as in the slice-by-slice calibration of J. Corbetta, P. Cohort,
 * I. Laachir, C. Martini, "Robust calibration and arbitrage-free interpolation of SSVI slices", Decisions in
 * Economics and Finance 42, 2019, and the parametrization of A. Mingone, arXiv:2204.00312, 2022; L. Pasquazzi,
 * Theoretical Economics Letters 13(5), 2023, corrects the paper's necessary-and-sufficient statement, which is not
 * used here). Proof: with p = psi2/psi1, w is homogeneous of degree 1 in (theta, psi) at fixed rho and increasing in
 * theta at fixed (rho, psi) (dw/dtheta = (1 + (rho psi k + theta)/sqrt(...))/2 >= 0), so
 * w(k; theta2, rho2, psi2) >= w(k; p theta1, rho2, p psi1) = p w(k; theta1, rho2, psi1), and p G(x; rho2) >= G(x; rho1)
 * for G(x; rho) = (1 + rho x + sqrt(x^2 + 2 rho x + 1))/2 where p is at least the ratio of the wing limits
 * (the supremum of G(.; rho1)/G(.; rho2), reached in the wings; checked numerically in test/quant/essvi.test.ts).
 * @param tol relative tolerance of each inequality
 */
export function essviCalendarFree(short: EssviParams, long: EssviParams, tol = 1e-12): boolean {
  const psi1 = short.theta * short.phi;
  const psi2 = long.theta * long.phi;
  const p = psi2 / psi1;
  const wings = Math.max((1 + short.rho) / (1 + long.rho), (1 - short.rho) / (1 - long.rho));
  return long.theta / short.theta >= p * (1 - tol) && p >= wings * (1 - tol);
}

/** The calendar bounds of a slice fitted after `prior` (a shorter slice): phi <= phi1 and the wing ratio. */
interface CalendarPrior {
  readonly theta: number;
  readonly rho: number;
  readonly phi: number;
  readonly psi: number;
}

/** A quote of the fit: k, mark IV, objective weight. */
interface FitQuote {
  readonly k: number;
  readonly iv: number;
  readonly w: number;
}

/**
 * The admissible theta interval at fixed (rho, phi): the butterfly bounds of Gatheral-Jacquier 2014 Thm 4.2 above,
 * the calendar bound theta phi (1 +- rho) >= psi1 (1 +- rho1) below (when a prior is given); null when empty.
 */
function thetaBounds(rho: number, phi: number, cal: CalendarPrior | undefined): { lo: number; hi: number } | null {
  const r = 1 + Math.abs(rho);
  const hi = Math.min((4 * (1 - STRICT_MARGIN)) / (phi * r), 4 / (phi * phi * r));
  let lo = 0;
  if (cal) {
    if (phi > cal.phi * (1 + 1e-12)) return null;
    lo = (cal.psi * Math.max((1 + cal.rho) / (1 + rho), (1 - cal.rho) / (1 - rho))) / phi;
  }
  return lo <= hi ? { lo, hi } : null;
}

/**
 * The best theta at fixed (rho, phi): the objective sum W_i (sqrt(theta G_i / T) - m_i)^2 is quadratic in
 * s = sqrt(theta), minimized at s* = sum W h m / sum W h^2 (h_i = sqrt(G_i / T)), clamped to the admissible interval
 * (exact: a convex quadratic in s on an interval). Returns the theta and whether a bound binds.
 */
function bestTheta(q: readonly FitQuote[], T: number, rho: number, phi: number, cal: CalendarPrior | undefined): { theta: number; bound: 'none' | 'butterfly' | 'calendar' } | null {
  const b = thetaBounds(rho, phi, cal);
  if (b === null) return null;
  let num = 0;
  let den = 0;
  const unit = { theta: 1, rho, phi };
  for (const x of q) {
    const h = Math.sqrt(essviTotalVariance(unit, x.k) / T);
    num += x.w * h * x.iv;
    den += x.w * h * h;
  }
  if (!(den > 0)) return null;
  const s = Math.max(num / den, 0);
  const theta = s * s;
  if (theta > b.hi) return { theta: b.hi, bound: 'butterfly' };
  if (theta < b.lo) return { theta: b.lo, bound: cal ? 'calendar' : 'none' };
  if (!(theta > 0)) return null;
  return { theta, bound: 'none' };
}

/** Weighted IV residuals sqrt(W_i) (sigma(k_i) - m_i) of a slice. */
function residualsOf(q: readonly FitQuote[], T: number, p: EssviParams): number[] {
  return q.map((x) => Math.sqrt(x.w) * (Math.sqrt(essviTotalVariance(p, x.k) / T) - x.iv));
}

/** Result of {@link calibrateEssvi}. */
export interface EssviCalibration {
  readonly params: EssviParams;
  /** 'essvi-3p' (theta, rho, phi fitted) or 'essvi-sparse' (rho and phi from a prior or the default shape). */
  readonly mode: 'essvi-3p' | 'essvi-sparse';
  /** Which bound the optimum sits on: the calendar bound against the prior, the butterfly domain, or none. */
  readonly bound: 'none' | 'butterfly' | 'calendar';
  /** Weighted sum of squared IV residuals at the optimum (the objective). */
  readonly objective: number;
  readonly quotesUsed: number;
}

/** Options of {@link calibrateEssvi}. */
export interface EssviCalibrationOptions {
  /** A shorter slice the fit must not cross ({@link essviCalendarFree}); also the sparse mode's shape. */
  readonly prior?: EssviParams;
  /** Shape source of the sparse mode only (no calendar bound): used when `prior` is absent. */
  readonly shape?: EssviParams;
  /** Warm start: its (rho, phi) is one more start of the outer search (besides the grid's local minima). */
  readonly previous?: EssviParams;
  /** Objective weights per quote (same order as the quotes); default equal weights. */
  readonly weights?: ArrayLike<number>;
}

/**
 * Spread-weighted least-squares eSSVI fit of one expiry: min over (theta, rho, phi) of sum_i W_i (sigma(k_i) - m_i)^2
 * with sigma = sqrt(w / T), on the butterfly domain of Gatheral-Jacquier 2014 Thm 4.2 and, with `prior`, the calendar
 * bound of {@link essviCalendarFree}. theta is solved in closed form at each (rho, phi) (bestTheta: quadratic in
 * sqrt(theta), clamped to its admissible interval; the variable projection of Zeliade's quasi-explicit SVI
 * calibration, Zeliade white paper ZWP-0005, 2009, applied to eSSVI); (rho, ln phi) by projected Levenberg-Marquardt
 * (src/quant/lm.ts) from the local minima of a 7 x 10 grid (rho over its admissible interval, phi sqrt(theta_ATM) in
 * [0.01, 2] log-spaced, capped at the admissible phi),
 * from `previous` (warm) and from the prior's (rho, phi); the best of these local fits. With fewer than {@link ESSVI_MIN_QUOTES_FULL} quotes: sparse mode, rho and phi from
 * `prior` (or `shape`; else the default shape rho = 0, phi = ESSVI_DEFAULT_ETA / sqrt(theta)), phi following the
 * power law phi = phi1 sqrt(theta1 / theta) of Gatheral-Jacquier 2014 eq. (4.5) with gamma = 1/2, theta fitted.
 * @param quotes k = ln(K/F), iv the mark IV (fraction); quotes with non-finite k or iv <= 0 are left out
 * @param T years ACT/365
 * @throws RangeError when T is not finite > 0 or no quote is valid, or when no admissible point exists
 */
export function calibrateEssvi(quotes: ReadonlyArray<{ readonly k: number; readonly iv: number }>, T: number, o: EssviCalibrationOptions = {}): EssviCalibration {
  if (!(Number.isFinite(T) && T > 0)) throw new RangeError(`calibrateEssvi: T must be finite > 0, got ${T}`);
  const q = validQuotes(quotes, o.weights);
  const atmIv = marketAtmIv(q.map((x) => x.k), q.map((x) => x.iv)) ?? q.reduce((b, x) => (Math.abs(x.k) < Math.abs(b.k) ? x : b)).iv;
  const theta0 = atmIv * atmIv * T;
  const cal: CalendarPrior | undefined = o.prior ? { ...o.prior, psi: o.prior.theta * o.prior.phi } : undefined;
  const objective = (p: EssviParams): number => residualsOf(q, T, p).reduce((s, r) => s + r * r, 0);
  if (q.length < ESSVI_MIN_QUOTES_FULL) return sparseFit(q, T, theta0, cal, o.prior ?? o.shape, objective);
  return fullFit(q, T, searchBox(theta0, cal), cal, o.previous, objective);
}

/**
 * The quotes a fit uses, by k: finite k, iv > 0 and a finite positive weight (`weights[i]`, default 1).
 * @throws RangeError when none is left
 */
function validQuotes(quotes: ReadonlyArray<{ readonly k: number; readonly iv: number }>, weights: ArrayLike<number> | undefined): FitQuote[] {
  const q: FitQuote[] = [];
  quotes.forEach((x, i) => {
    const w = weights ? (weights[i] as number) : 1;
    if (Number.isFinite(x.k) && Number.isFinite(x.iv) && x.iv > 0 && Number.isFinite(w) && w > 0) q.push({ k: x.k, iv: x.iv, w });
  });
  if (q.length === 0) throw new RangeError('calibrateEssvi: no valid quote (need finite k and iv > 0)');
  return q.sort((a, b) => a.k - b.k);
}

/** The full fit's search box in (rho, u = ln(phi / phiMax(rho))): see {@link searchBox}. */
interface SearchBox {
  readonly rhoLo: number;
  readonly rhoHi: number;
  readonly theta0: number;
  /** The largest admissible phi at rho. */
  phiMax(rho: number): number;
}

/**
 * Outer variables x = (rho, u), u = ln(phi / phiMax(rho)) <= 0, on a box every point of which is admissible, so that
 * the local search never meets an undefined objective. Without a prior phiMax = 4 / sqrt(theta_ATM) (the butterfly
 * bounds then clamp theta). With a prior (calendar): theta is admissible at (rho, phi) iff
 * psiMin(rho) = psi1 max((1 + rho1)/(1 + rho), (1 - rho1)/(1 - rho)) satisfies psiMin (1 + |rho|) < 4 (the rho box,
 * an interval around rho1 found by bisection) and phi <= phiMax(rho) = min(phi1, 4 / ((1 + |rho|) psiMin(rho))).
 */
function searchBox(theta0: number, cal: CalendarPrior | undefined): SearchBox {
  const psiMin = (rho: number): number => (cal ? cal.psi * Math.max((1 + cal.rho) / (1 + rho), (1 - cal.rho) / (1 - rho)) : 0);
  const phiMax = (rho: number): number => (cal ? Math.min(cal.phi, (4 * (1 - STRICT_MARGIN)) / ((1 + Math.abs(rho)) * psiMin(rho))) : 4 / Math.sqrt(theta0));
  if (!cal) return { rhoLo: -ESSVI_MAX_ABS_RHO, rhoHi: ESSVI_MAX_ABS_RHO, theta0, phiMax };
  const ok = (rho: number): boolean => psiMin(rho) * (1 + Math.abs(rho)) < 4 * (1 - 1e-6);
  const edge = (to: number): number => {
    if (ok(to)) return to;
    let inside = cal.rho;
    let outside = to;
    for (let i = 0; i < 60; i++) {
      const mid = 0.5 * (inside + outside);
      if (ok(mid)) inside = mid;
      else outside = mid;
    }
    return inside;
  };
  return { rhoLo: edge(-ESSVI_MAX_ABS_RHO), rhoHi: edge(ESSVI_MAX_ABS_RHO), theta0, phiMax };
}

/** The full (3-parameter) mode of {@link calibrateEssvi}: projected Levenberg-Marquardt over `box` from several starts. */
function fullFit(q: readonly FitQuote[], T: number, box: SearchBox, cal: CalendarPrior | undefined, previous: EssviParams | undefined, objective: (p: EssviParams) => number): EssviCalibration {
  const { rhoLo, rhoHi, theta0, phiMax } = box;
  const U_MIN = -Math.log(1e6);
  const lower = [rhoLo, U_MIN];
  const upper = [rhoHi, 0];
  const clamp = (x: number[]): number[] => x.map((v, i) => Math.min(upper[i] as number, Math.max(lower[i] as number, v)));
  const toX = (rho: number, phi: number): number[] => {
    const r = Math.min(rhoHi, Math.max(rhoLo, rho));
    return clamp([r, Math.log(phi / phiMax(r))]);
  };
  const at = (x: readonly number[]): { p: EssviParams; bound: EssviCalibration['bound'] } | null => {
    const rho = x[0] as number;
    const phi = phiMax(rho) * Math.exp(x[1] as number);
    const t = bestTheta(q, T, rho, phi, cal);
    return t ? { p: { theta: t.theta, rho, phi }, bound: t.bound } : null;
  };
  const residuals = (x: readonly number[]): number[] => {
    const a = at(x);
    return a ? residualsOf(q, T, a.p) : q.map(() => Number.NaN);
  };
  // The grid's local minima are always starts, warm or cold (the grid costs 70 closed-form evaluations); `previous`
  // (warm) and the prior's own shape (always admissible) are more starts.
  const grid: Array<{ x: number[]; f: number }> = [];
  for (let i = 0; i < 7; i++) {
    const rho = rhoLo + ((rhoHi - rhoLo) * (i + 0.5)) / 7;
    for (let j = 0; j < 10; j++) {
      const x = toX(rho, (0.01 * Math.pow(200, j / 9)) / Math.sqrt(theta0));
      const a = at(x);
      grid.push({ x, f: a ? objective(a.p) : Number.POSITIVE_INFINITY });
    }
  }
  const starts = gridLocalMinima(grid, 10, 3).filter((x) => at(x) !== null);
  if (previous) starts.push(toX(previous.rho, previous.phi));
  if (cal) starts.push(toX(cal.rho, cal.phi));
  // Forward differences that step inwards at an upper bound: a step beyond phiMax or the rho box has no admissible
  // theta (the default forward difference then loses that column and the search stays on the bound).
  const jacobian = (x: readonly number[], r0: readonly number[]): number[][] =>
    x.map((xj, j) => {
      const h = 1e-7 * Math.max(1, Math.abs(xj));
      const step = xj + h <= (upper[j] as number) ? h : -h;
      const xp = [...x];
      xp[j] = xj + step;
      const rp = residuals(xp);
      return rp.map((v, i) => (v - (r0[i] as number)) / step);
    });
  let best: { x: number[]; cost: number } | null = null;
  for (const x0 of starts) {
    if (at(x0) === null) continue;
    const r = levenbergMarquardt(residuals, x0, { lower, upper, project: clamp, jacobian, maxIterations: 100, xTol: 1e-12, fTol: 1e-15 });
    if (best === null || r.cost < best.cost) best = { x: r.x, cost: r.cost };
  }
  const a = best ? at(best.x) : null;
  if (!best || !a) throw new RangeError('calibrateEssvi: no admissible starting point (butterfly and calendar bounds)');
  // phi on phiMax under a prior: phi = phi1, or the calendar and butterfly bounds meet
  const onPhiBound = cal !== undefined && (best.x[1] as number) >= -1e-12;
  return { params: a.p, mode: 'essvi-3p', bound: a.bound === 'none' && onPhiBound ? 'calendar' : a.bound, objective: objective(a.p), quotesUsed: q.length };
}

/** The sparse mode of {@link calibrateEssvi}: rho and the power-law phi from `shape`, theta fitted (1-D). */
function sparseFit(
  q: readonly FitQuote[],
  T: number,
  theta0: number,
  cal: CalendarPrior | undefined,
  shape: EssviParams | undefined,
  objective: (p: EssviParams) => number,
): EssviCalibration {
  const rho = shape ? shape.rho : 0;
  // phi(theta) = eta / sqrt(theta): eta from the shape (phi1 sqrt(theta1)) or the default
  const eta = shape ? shape.phi * Math.sqrt(shape.theta) : ESSVI_DEFAULT_ETA;
  const r = 1 + Math.abs(rho);
  // butterfly: theta phi^2 (1 + |rho|) = eta^2 (1 + |rho|) <= 4 (clamped by the eta of the default shape), and
  // theta phi (1 + |rho|) = eta sqrt(theta) (1 + |rho|) < 4
  const etaB = Math.min(eta, 2 / Math.sqrt(r));
  const thetaHi = Math.pow((4 * (1 - STRICT_MARGIN)) / (etaB * r), 2);
  // calendar: theta >= theta1 gives phi <= phi1 and psi = psi1 sqrt(theta / theta1) >= psi1 at the same rho
  const thetaLo = cal ? cal.theta : 0;
  const lo = Math.log(Math.max(thetaLo, 1e-16));
  const hi = Math.log(thetaHi);
  const params = (lnTheta: number): EssviParams => {
    const theta = Math.exp(lnTheta);
    return { theta, rho, phi: etaB / Math.sqrt(theta) };
  };
  const clamp = (x: number[]): number[] => [Math.min(hi, Math.max(lo, x[0] as number))];
  const fit = levenbergMarquardt((x) => residualsOf(q, T, params(x[0] as number)), clamp([Math.log(theta0)]), {
    lower: [lo],
    upper: [hi],
    project: clamp,
    xTol: 1e-12,
    fTol: 1e-15,
  });
  const x = fit.x[0] as number;
  const p = params(x);
  const bound = cal && x <= lo + 1e-12 ? 'calendar' : x >= hi - 1e-12 ? 'butterfly' : 'none';
  return { params: p, mode: 'essvi-sparse', bound, objective: objective(p), quotesUsed: q.length };
}

/**
 * eSSVI fit of one expiry for the pipeline (src/quant/chain/chainFit.ts): {@link calibrateEssvi} with issue 26's
 * spread-weighted objective (the weights of {@link essviModel}.objectiveWeights, fitKit.ts halfSpreadObjectiveWeights,
 * the same as SVI's and SABR's), warm from `ctx.previous`, then the density check of the served smile on servedGrid.
 *
 * Calendar, what is guaranteed: when `ctx.lastFull` is an eSSVI slice of a SHORTER expiry (ctx.lastFullT < T: the
 * last full fit of an expiry of at least 2 days before this one in the pipeline's increasing-T pass, chainFit.ts),
 * the fit is constrained by {@link essviCalendarFree} against it, so that w_T(k) >= w_lastFull(k) for every k at the
 * time of the fit. Not guaranteed by the model: against a shorter expiry that is not `lastFull` (expiries under 2
 * days, sparse or rejected ones in between, slices fitted by the sparse pass 2 on synthetic quotes without context),
 * and, on incremental passes, between a reused (carried) slice and a prior refitted since: there the pipeline's
 * calendar envelope max(w_i, W_{i-1}) (chainFit.ts calendarPass) keeps the served surface free of calendar arbitrage.
 * Carrying both slices to a later observation keeps the order (theta scales by T'/T, which shrinks less for the
 * longer expiry). `ctx.ceiling` is ignored (as SABR and Vanna-Volga do).
 * `repaired` is true when the calendar bound binds at the optimum (a constrained fit); `unconstrainedRmseVolPts` is
 * then the RMSE of the same fit without that bound (else the served fit's own).
 * @throws RangeError from calibrateEssvi (T not finite > 0; no valid quote)
 */
export function fitEssviSlice(g: SliceInput, ctx: FitContext<EssviParams>): SliceFit<EssviParams> {
  const priorT = ctx.lastFullT;
  const last = priorT !== undefined ? usableStart(essviModel, ctx.lastFull, priorT, g.forward) : undefined;
  const prior = last && priorT !== undefined && priorT < g.T ? last : undefined;
  const previous = usableStart(essviModel, ctx.previous, g.T, g.forward);
  const previousOk = previous && (!prior || (previous.phi <= prior.phi && essviParamViolations(previous).length === 0)) ? previous : undefined;
  const weights = halfSpreadObjectiveWeights(g.quotes);
  const r = calibrateEssvi(
    g.quotes.map((x) => ({ k: x.k, iv: x.markIv })),
    g.T,
    { weights, ...(prior ? { prior } : last ? { shape: last } : {}), ...(previousOk ? { previous: previousOk } : {}) },
  );
  const p = r.params;
  const w = (k: number): number => essviTotalVariance(p, k);
  // the model's own fit without the calendar bound, when the bound binds (diagnostics.referenceRmseVolPts: the
  // repair's cost); otherwise the served fit is that fit
  const free =
    r.bound === 'calendar'
      ? calibrateEssvi(
          g.quotes.map((x) => ({ k: x.k, iv: x.markIv })),
          g.T,
          { weights, ...(r.mode === 'essvi-sparse' && prior ? { shape: prior } : {}) },
        ).params
      : null;
  const chk = checkSmileDensity((K) => Math.sqrt(w(Math.log(K / g.forward)) / g.T), g.forward, g.T, servedGrid(g));
  const err = errorsAgainst(w, g);
  const sorted = [...g.quotes].filter((x) => Number.isFinite(x.k) && x.markIv > 0).sort((a, b) => a.k - b.k);
  const atm = marketAtmIv(sorted.map((x) => x.k), sorted.map((x) => x.markIv));
  const warnings: string[] = [];
  if (!chk.arbitrageFree) warnings.push(`butterfly arbitrage in the served smile: min density ${chk.minDensity.toExponential(3)}`);
  const method = [
    r.mode === 'essvi-3p'
      ? `eSSVI 3-parameter spread-weighted least squares (theta in closed form, rho and phi by projected LM${previousOk ? ', warm' : ''})`
      : `eSSVI sparse mode (${r.quotesUsed} quote${r.quotesUsed === 1 ? '' : 's'}): rho and phi ${prior || last ? 'from the last full fit' : 'default shape'}, theta fitted`,
    prior ? `calendar bound against the expiry of T = ${(priorT as number).toFixed(6)} (Hendriks-Martini 2019 sec. 3)${r.bound === 'calendar' ? ': binding' : ''}` : null,
    r.bound === 'butterfly' ? 'on the butterfly bound of Gatheral-Jacquier 2014 Thm 4.2' : null,
  ]
    .filter((x) => x !== null)
    .join('; ');
  return {
    params: { theta: p.theta, rho: p.rho, phi: p.phi },
    rmseVolPts: err.rmse,
    maxErrorVolPts: err.max,
    quotesUsed: r.quotesUsed,
    butterflyFree: chk.arbitrageFree,
    repaired: r.bound === 'calendar' && chk.arbitrageFree,
    method,
    minDensity: finiteOrNull(chk.minDensity),
    atmErrorVolPts: atm === null ? null : finiteOrNull(100 * (Math.sqrt(p.theta / g.T) - atm)),
    warnings,
    full: r.mode === 'essvi-3p',
    unconstrainedRmseVolPts: free ? errorsAgainst((k) => essviTotalVariance(free, k), g).rmse : err.rmse,
  };
}

/**
 * The eSSVI model of the registry (src/quant/models/index.ts): per expiry the parameters {theta, rho, phi} of
 * w(k) = theta/2 (1 + rho phi k + sqrt((phi k + rho)^2 + 1 - rho^2)) (w total implied variance, dimensionless; k =
 * ln(K/F); T in years ACT/365), fitted by {@link calibrateEssvi} inside the butterfly domain of Gatheral-Jacquier (2014)
 * Thm 4.2 and a sufficient calendar condition against the previous full slice (extended SSVI: Hendriks & Martini,
 * "The extended SSVI volatility surface", J. Comput. Finance 2019). `fromRecord` throws RangeError for a record
 * outside that domain or missing a parameter.
 */
export const essviModel: SmileModel<EssviParams> = {
  name: 'ESSVI',
  parameterNames: ['theta', 'rho', 'phi'],
  objectiveWeights: halfSpreadObjectiveWeights,
  trackingGate: true,
  optionalParameterNames: [],
  fromRecord(r) {
    const p: EssviParams = { theta: need('ESSVI', r, 'theta'), rho: need('ESSVI', r, 'rho'), phi: need('ESSVI', r, 'phi') };
    const bad = essviParamViolations(p, 1e-9);
    if (bad.length > 0) throw new RangeError(`invalid ESSVI parameters: ${bad.join('; ')}`);
    return p;
  },
  toRecord: (p) => ({ theta: p.theta, rho: p.rho, phi: p.phi }),
  totalVariance: (p) => (k) => essviTotalVariance(p, k),
  totalVarianceDk: (p) => (k) => essviTotalVarianceDk(p, k),
  // w = theta G(phi k; rho): scaling theta by newT/oldT at the same (rho, phi) scales w at every k, i.e. keeps the
  // implied vol at each k exactly (and stays in the butterfly domain when T shrinks).
  carryForward: (p, oldT, newT) => (oldT > 0 && newT > 0 ? { ...p, theta: (p.theta * newT) / oldT } : { ...p }),
  arbitrageCheck:
    'Gatheral-Jacquier 2014 Thm 4.2 parameter domain (theta phi (1 + |rho|) < 4, theta phi^2 (1 + |rho|) <= 4), and risk-neutral density >= 0 of the served smile on 401 strikes over 6 ATM standard deviations and the quoted range',
  wingRule: 'none needed: eSSVI is defined for every k and linear in |k| in both wings, slopes theta phi (1 +- rho) / 2 < 2 (Lee) on the butterfly domain',
  // The carry keeps the implied vol at every k exactly; a cold fit at the new T minimizes the same IV objective, so it
  // differs only where a bound binds (the butterfly domain and the calendar bound do not scale with T). Measured on the
  // three recorded Deribit chains (test/quant/essvi.test.ts, every expiry, at the quotes and |k| <= 1): T moved by
  // 0.1 %: worst 0.020 vp from a cold fit; by 1 %: 0.20 vp. 0.1 % keeps a reused slice within the tracking tolerance's
  // floor, 0.05 vp (issue 22), as SVI's.
  reuseMaxTChange: 1e-3,
  fit: (g, ctx) => fitEssviSlice(g, ctx),
  borrowsShape: (g) => g.quotes.length < ESSVI_MIN_QUOTES_FULL,
};
