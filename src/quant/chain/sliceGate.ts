/**
 * Refit only what moved (issue 22): the tracking tolerance of a served slice and the gate that decides, from the
 * quotes alone and without refitting, whether a refit of an expiry would move its served smile by more than that
 * tolerance.
 *
 * Tolerance (docs/conventions.md "Tracking tolerance"): at every quote and on a grid of log-moneyness |k| <= 1, the
 * served slice must stay within eps of a cold fit of the current quotes, eps = max(0.05 vol pt, 10 % of the quote's
 * half-spread in IV) ({@link trackingToleranceIv}); between quotes the tolerance of the nearest quote, outside the
 * quoted range 0.05 vol pt ({@link trackingGrid}).
 *
 * The gate is one Gauss-Newton step (Nocedal and Wright, "Numerical Optimization", 2nd ed., 2006, sec. 10.3) of the
 * weighted least-squares smile fit min sum_i W_i (sigma(k_i; p) - m_i)^2 linearized at the fitted parameters p0:
 * with J the Jacobian of the fitted implied vols at the quotes with respect to the model's free parameters
 * (SmileModel.freeParameterNames; central finite differences), a change dr of the residuals r_i = sigma(k_i) - m_i
 * since the fit moves the optimum by dp = -(J^T W J)^{-1} J^T W dr and the served smile at any k by J_k dp. The
 * matrix M = J_G (J^T W J)^{-1} J^T W (the change is -M dr; only its size is used) from residual changes to smile
 * changes on the check grid G (the quotes and the 21 points of |k| <= 1, {@link trackingGrid}) is computed once
 * per fit; a check is then one pass over the quotes (the carried smile at their current log-moneyness) and one
 * matrix-vector product. A change dW of the weights (a quote's spread) enters the same step as the term dW r0 (the
 * stationarity condition J^T (W + dW)(r0 + J dp + dr) = 0 to first order): each residual counts as moved by
 * (dW_i / W_i) r0_i besides its own move; when a weight moved by more than 50 % the check answers null (refit). Residuals are taken against the fitted smile carried
 * to the current T and forward (SmileModel.carryForward: the implied vol at each log-moneyness kept, sticky
 * moneyness), so forward moves that the marks follow in log-moneyness change nothing, and forward moves the marks do
 * not follow (sticky strike) show up as residual changes like any mark move. The difference dr (not r itself) is
 * projected, so a fit that ended on a constraint (a repaired slice) is judged by what moved since, not by its
 * distance to the unconstrained optimum. W: the model's own objective weights (SmileModel.objectiveWeights; SVI and
 * SABR the spread-weighted objective of issue 26), equal weights when it names none.
 */
import type { SmileModel, SliceQuote, StoredParams } from '../models/types.js';

/** Floor of the tracking tolerance, vol points. */
export const TRACKING_MIN_VOL_PTS = 0.05;
/** Share of a quote's half-spread (in IV) in its tracking tolerance. */
export const TRACKING_SPREAD_SHARE = 0.1;
/** Half-width of the log-moneyness range the served smile is checked on, besides the quotes. */
export const TRACKING_K_RANGE = 1;
/**
 * Beyond the quoted range the gate holds its predicted change to this share of the tolerance: the linear prediction
 * is least reliable in the extrapolated wing (on the simulator a 3-month SVI slice confirmed at the full share moved
 * 3.4 tolerances at k = -1 under a cold refit; test/calibration/tracking.test.ts).
 */
const EXTRAPOLATION_SHARE = 0.5;
/** Largest relative change of a quote's objective weight the gate's first-order re-weighting is trusted for. */
const WEIGHT_CHANGE = 0.5;
/** Points of the log-moneyness grid over [-TRACKING_K_RANGE, TRACKING_K_RANGE]. */
const GRID_POINTS = 21;
/**
 * The log-moneyness grid the tracking tolerance is checked on besides the quotes: {@link GRID_POINTS} points evenly
 * over |k| <= {@link TRACKING_K_RANGE} (every point, quoted or not: the range; measured, the gate holds the
 * extrapolated wing too, test/calibration/tracking.test.ts).
 */
export function trackingGrid(): number[] {
  const out: number[] = [];
  for (let j = 0; j < GRID_POINTS; j++) out.push(-TRACKING_K_RANGE + (2 * TRACKING_K_RANGE * j) / (GRID_POINTS - 1));
  return out;
}

/**
 * The tracking tolerance of one quote, IV fraction: max(0.05 vol pt, 10 % of its half-spread in IV) when it has a
 * two-sided market (0 < bid < ask), else 0.05 vol pt.
 * @param bidIv best bid IV (fraction; null or <= 0: none) @param askIv best ask IV (fraction; null: none)
 */
export function trackingToleranceIv(bidIv: number | null | undefined, askIv: number | null | undefined): number {
  const floor = TRACKING_MIN_VOL_PTS / 100;
  if (bidIv == null || askIv == null || !(bidIv > 0) || !(askIv > bidIv) || !Number.isFinite(askIv)) return floor;
  return Math.max(floor, (TRACKING_SPREAD_SHARE * (askIv - bidIv)) / 2);
}

/** What a {@link SliceGate} check found. */
export interface GateCheck {
  /** Largest |predicted change of the served smile| / tolerance over the check grid (<= 1: inside). */
  readonly ratio: number;
  /** That largest predicted change, vol points. */
  readonly worstVolPts: number;
  /** Largest |residual change| / tolerance at a quote: how far one mark moved against the served smile. */
  readonly localRatio: number;
}

/**
 * The confirm-or-refit gate of one fitted slice (module docstring). Built from the fit (model, stored parameters, T,
 * forward and the quotes it was fitted to); {@link check} compares the current quotes of the expiry with them.
 */
export class SliceGate {
  private constructor(
    private readonly smile: SmileModel<unknown>,
    /** The fit's typed parameters. */
    private readonly params: unknown,
    private readonly T: number,
    private readonly forward: number,
    /** Strikes of the fitted quotes, ascending as given. */
    private readonly strikes: Float64Array,
    /** Residuals sigma(k_i) - m_i of the fit, IV fraction. */
    private readonly residual0: Float64Array,
    /** Rows: the check grid (the quotes, then the k grid); columns: the quotes. */
    private readonly M: Float64Array,
    /** Tolerance per grid row, IV fraction. */
    private readonly tolerance: Float64Array,
    /** The objective weights of the fitted quotes (W). */
    private readonly weights: Float64Array,
  ) {}

  /**
   * The gate of a fitted slice; null when it cannot be built (no quotes, parameters the model rejects, a singular
   * normal matrix), in which case the caller refits.
   * @param quotes the quotes the slice was fitted to (log-moneyness against `forward`)
   */
  static build<P>(smile: SmileModel<P>, fitted: P, T: number, forward: number, quotes: readonly SliceQuote[]): SliceGate | null {
    const n = quotes.length;
    if (n === 0 || !(T > 0) || !(forward > 0)) return null;
    const params = smile.toRecord(fitted); // named numbers: each free one is bumped, read back by fromRecord
    const free = (smile.freeParameterNames ?? smile.parameterNames).filter((name) => typeof params[name] === 'number');
    const p = free.length;
    const ivAt = (rec: StoredParams): ((k: number) => number) | null => {
      try {
        const w = smile.totalVariance(smile.fromRecord(rec, T, forward), T, forward);
        return (k) => Math.sqrt(Math.max(w(k), 0) / T);
      } catch (err) {
        if (err instanceof RangeError) return null;
        throw err;
      }
    };
    const base = ivAt(params);
    if (!base) return null;
    const gridK: number[] = quotes.map((q) => q.k);
    gridK.push(...trackingGrid());
    const G = gridK.length;
    // Jacobians at the quotes (n x p) and on the grid (G x p), central differences (one-sided at a bound)
    const Jq = new Float64Array(n * p);
    const Jg = new Float64Array(G * p);
    for (let c = 0; c < p; c++) {
      const name = free[c]!;
      const v = params[name]!;
      const h = 1e-6 * Math.max(Math.abs(v), 1e-3);
      const up = ivAt({ ...params, [name]: v + h });
      const dn = ivAt({ ...params, [name]: v - h });
      const lo = dn ?? base;
      const hi = up ?? base;
      const span = (up ? h : 0) + (dn ? h : 0);
      if (span === 0) continue;
      for (let i = 0; i < n; i++) Jq[i * p + c] = (hi(quotes[i]!.k) - lo(quotes[i]!.k)) / span;
      for (let g = 0; g < G; g++) Jg[g * p + c] = (hi(gridK[g]!) - lo(gridK[g]!)) / span;
    }
    const W = smile.objectiveWeights ? smile.objectiveWeights(quotes) : new Float64Array(n).fill(1);
    // A = J^T W J (+ a small ridge for conditioning), B = J^T W (p x n)
    const A = new Float64Array(p * p);
    const B = new Float64Array(p * n);
    for (let i = 0; i < n; i++) {
      for (let a = 0; a < p; a++) {
        const ja = Jq[i * p + a]! * W[i]!;
        B[a * n + i] = ja;
        for (let b = 0; b < p; b++) A[a * p + b]! += ja * Jq[i * p + b]!;
      }
    }
    let trace = 0;
    for (let a = 0; a < p; a++) trace += A[a * p + a]!;
    for (let a = 0; a < p; a++) A[a * p + a]! += 1e-10 * (trace / Math.max(p, 1)) + 1e-300;
    const X = solveInPlace(A, B, p, n); // (J^T W J)^{-1} J^T W, p x n
    if (!X) return null;
    const M = new Float64Array(G * n);
    for (let g = 0; g < G; g++) {
      for (let c = 0; c < p; c++) {
        const jg = Jg[g * p + c]!;
        if (jg === 0) continue;
        for (let i = 0; i < n; i++) M[g * n + i]! += jg * X[c * n + i]!;
      }
    }
    const tolerance = new Float64Array(G);
    const tolQ = quotes.map((q) => trackingToleranceIv(q.bidIv, q.askIv));
    const kLo = Math.min(...gridK.slice(0, n));
    const kHi = Math.max(...gridK.slice(0, n));
    for (let g = 0; g < G; g++) {
      if (g < n) tolerance[g] = tolQ[g]!;
      else {
        const k = gridK[g]!;
        if (k < kLo || k > kHi) tolerance[g] = (EXTRAPOLATION_SHARE * TRACKING_MIN_VOL_PTS) / 100;
        else {
          let best = 0;
          for (let i = 1; i < n; i++) if (Math.abs(quotes[i]!.k - k) < Math.abs(quotes[best]!.k - k)) best = i;
          tolerance[g] = tolQ[best]!;
        }
      }
    }
    const strikes = Float64Array.from(quotes, (q) => q.strike);
    const residual0 = Float64Array.from(quotes, (q) => base(q.k) - q.markIv);
    return new SliceGate(smile, fitted, T, forward, strikes, residual0, M, tolerance, W);
  }

  /**
   * The predicted change of the served smile if the expiry were refitted to `quotes` at (`T`, `forward`), against
   * the tolerance (module docstring); null when the quotes are not those fitted (another set of strikes): refit.
   * @param quotes the expiry's current quotes, one per strike in the fit's order (log-moneyness against `forward`)
   */
  check(T: number, forward: number, quotes: readonly SliceQuote[]): GateCheck | null {
    const n = this.strikes.length;
    if (quotes.length !== n) return null;
    for (let i = 0; i < n; i++) if (quotes[i]!.strike !== this.strikes[i]) return null;
    // a quote's weight that moved (its spread widened or narrowed, or the expiry's widest spread that no-bid quotes
    // take) re-weights the fit: to first order its residual counts as if it had moved by (dW_i / W_i) r0_i (the
    // dW r0 term of the step); beyond WEIGHT_CHANGE the first order is not trusted: refit
    const dWrel = new Float64Array(n);
    if (this.smile.objectiveWeights) {
      const w = this.smile.objectiveWeights(quotes);
      for (let i = 0; i < n; i++) {
        dWrel[i] = w[i]! / this.weights[i]! - 1;
        if (!(Math.abs(dWrel[i]!) <= WEIGHT_CHANGE)) return null;
      }
    }
    let iv: (k: number) => number;
    try {
      const carried = this.smile.carryForward(this.params, this.T, T, this.forward, forward);
      const w = this.smile.totalVariance(carried, T, forward);
      iv = (k) => Math.sqrt(Math.max(w(k), 0) / T);
    } catch (err) {
      if (err instanceof RangeError) return null;
      throw err;
    }
    const dr = new Float64Array(n);
    let local = 0;
    // at the quotes, the tolerance of their current market (the smaller of it and the fit's)
    const tolQ = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const q = quotes[i]!;
      tolQ[i] = Math.min(this.tolerance[i]!, trackingToleranceIv(q.bidIv, q.askIv));
      const moved = iv(q.k) - q.markIv - this.residual0[i]!;
      local = Math.max(local, Math.abs(moved) / tolQ[i]!);
      dr[i] = moved + dWrel[i]! * this.residual0[i]!;
    }
    const G = this.tolerance.length;
    let ratio = 0;
    let worst = 0;
    for (let g = 0; g < G; g++) {
      let d = 0;
      const row = g * n;
      for (let i = 0; i < n; i++) d += this.M[row + i]! * dr[i]!;
      const r = Math.abs(d) / (g < n ? tolQ[g]! : this.tolerance[g]!);
      if (r > ratio) {
        ratio = r;
        worst = Math.abs(d) * 100;
      }
    }
    return { ratio, worstVolPts: worst, localRatio: local };
  }
}

/**
 * The gate of a sparse expiry (1 to 4 quotes, its shape borrowed from its neighbours: chainFit.ts sparse pass): true
 * when every quote's residual against the fitted smile carried to (`T`, `forward`) moved since the fit by at most
 * its tracking tolerance (the level and tilt of a sparse slice come from its quotes alone, so a refit would move it by
 * about that much). False when the quotes are not those fitted or the model's smile cannot be evaluated (RangeError).
 * @param quotes0 the quotes fitted at (`T0`, `forward0`); @param quotes the current ones, same strikes in order
 * @param share the share of each quote's tolerance the residual change may use (default 1)
 */
export function residualsWithinTracking<P>(
  smile: SmileModel<P>,
  params: P,
  T0: number,
  forward0: number,
  quotes0: readonly SliceQuote[],
  T: number,
  forward: number,
  quotes: readonly SliceQuote[],
  share = 1,
): boolean {
  if (quotes.length !== quotes0.length) return false;
  try {
    const p0 = params;
    const w0 = smile.totalVariance(p0, T0, forward0);
    const w = smile.totalVariance(smile.carryForward(p0, T0, T, forward0, forward), T, forward);
    for (let i = 0; i < quotes.length; i++) {
      const a = quotes0[i]!;
      const b = quotes[i]!;
      if (a.strike !== b.strike) return false;
      const dr = Math.sqrt(Math.max(w(b.k), 0) / T) - b.markIv - (Math.sqrt(Math.max(w0(a.k), 0) / T0) - a.markIv);
      if (!(Math.abs(dr) <= share * trackingToleranceIv(b.bidIv, b.askIv))) return false;
    }
    return true;
  } catch (err) {
    if (err instanceof RangeError) return false;
    throw err;
  }
}

/**
 * Solve A X = B for X (A p x p symmetric positive definite, B p x n), Gaussian elimination with partial pivoting
 * (Golub and Van Loan, "Matrix Computations", 4th ed., 2013, sec. 3.4); A and B are overwritten, X returned (B's
 * storage). Null when A is singular.
 */
function solveInPlace(A: Float64Array, B: Float64Array, p: number, n: number): Float64Array | null {
  for (let col = 0; col < p; col++) {
    let piv = col;
    for (let r = col + 1; r < p; r++) if (Math.abs(A[r * p + col]!) > Math.abs(A[piv * p + col]!)) piv = r;
    const d = A[piv * p + col]!;
    if (!(Math.abs(d) > 0) || !Number.isFinite(d)) return null;
    if (piv !== col) {
      for (let c = 0; c < p; c++) [A[col * p + c], A[piv * p + c]] = [A[piv * p + c]!, A[col * p + c]!];
      for (let c = 0; c < n; c++) [B[col * n + c], B[piv * n + c]] = [B[piv * n + c]!, B[col * n + c]!];
    }
    for (let r = 0; r < p; r++) {
      if (r === col) continue;
      const f = A[r * p + col]! / A[col * p + col]!;
      if (f === 0) continue;
      for (let c = col; c < p; c++) A[r * p + c]! -= f * A[col * p + c]!;
      for (let c = 0; c < n; c++) B[r * n + c]! -= f * B[col * n + c]!;
    }
  }
  for (let r = 0; r < p; r++) {
    const d = A[r * p + r]!;
    for (let c = 0; c < n; c++) B[r * n + c]! /= d;
  }
  return B;
}
