/**
 * Small dense optimizers for calibration: projected Levenberg-Marquardt (nonlinear least squares)
 * and Nelder-Mead (derivative-free minimization). Deterministic, allocation-light, for a handful of
 * parameters (SVI has 5).
 *
 * Sources:
 * - K. Levenberg (1944), D. Marquardt (1963); the damping update and stopping rules follow
 *   K. Madsen, H.B. Nielsen, O. Tingleff, "Methods for non-linear least squares problems", 2nd ed.,
 *   DTU 2004, Algorithm 3.16 (with Marquardt's diagonal scaling, eq. (3.15) remark), with a
 *   projection onto the feasible set after each step (a projected LM as in Kanzow, Yamashita,
 *   Fukushima, J. Comput. Appl. Math. 172 (2004)).
 * - Geodesic acceleration of the LM step (option `geodesicAcceleration`): M.K. Transtrum, J.P. Sethna,
 *   "Improvements to the Levenberg-Marquardt algorithm for nonlinear least-squares minimization",
 *   arXiv:1201.5885 (2012), sec. 4 (second directional derivative by finite differences, acceptance 2|a|/|v| <= 0.75).
 * - Active-set enumeration of a 3-variable QP ({@link solveQp3}): Nocedal-Wright 2006, Theorem 16.4 and eq. (16.17).
 * - J.A. Nelder, R. Mead, "A simplex method for function minimization", Computer Journal 7 (1965);
 *   standard coefficients (reflection 1, expansion 2, contraction 1/2, shrink 1/2) as in Lagarias,
 *   Reeds, Wright, Wright, SIAM J. Optim. 9(1) (1998).
 */

/** Solves the dense linear system A x = b (n x n, row-major arrays) by Gaussian elimination with
 * partial pivoting. Returns null when A is singular to working precision. Does not modify inputs. */
export function solveLinearSystem(A: readonly (readonly number[])[], b: readonly number[]): number[] | null {
  const n = b.length;
  const M = A.map((row, i) => [...row, b[i] as number]);
  let scale = 0;
  for (const row of A) for (const v of row) scale = Math.max(scale, Math.abs(v));
  const eps = 1e-14 * (scale > 0 ? scale : 1);
  for (let col = 0; col < n; col++) {
    let piv = col;
    for (let r = col + 1; r < n; r++) {
      if (Math.abs((M[r] as number[])[col] as number) > Math.abs((M[piv] as number[])[col] as number)) piv = r;
    }
    const pr = M[piv] as number[];
    const pv = pr[col] as number;
    if (!(Math.abs(pv) > eps)) return null;
    if (piv !== col) {
      M[piv] = M[col] as number[];
      M[col] = pr;
    }
    for (let r = col + 1; r < n; r++) {
      const row = M[r] as number[];
      const f = (row[col] as number) / pv;
      if (f === 0) continue;
      for (let c = col; c <= n; c++) row[c] = (row[c] as number) - f * (pr[c] as number);
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    const row = M[r] as number[];
    let s = row[n] as number;
    for (let c = r + 1; c < n; c++) s -= (row[c] as number) * (x[c] as number);
    x[r] = s / (row[r] as number);
  }
  return x.every(Number.isFinite) ? x : null;
}

/** Options of {@link levenbergMarquardt}. */
export interface LmOptions {
  /** Maximal number of iterations (accepted or rejected steps). Default 100. */
  readonly maxIterations?: number;
  /** Projection onto the feasible set, applied to every trial point (returns the projected point). */
  readonly project?: (x: number[]) => number[];
  /** Box bounds (used to freeze a coordinate sitting on its bound when the gradient pushes outward;
   * `project` must enforce them). Default unbounded. */
  readonly lower?: readonly number[];
  readonly upper?: readonly number[];
  /** Analytic Jacobian: returns the columns dr/dx_j (each of the residual vector's length). Default:
   * forward differences. */
  readonly jacobian?: (x: readonly number[], r: readonly number[]) => number[][];
  /** Geodesic acceleration (Transtrum-Sethna 2012): one more residual evaluation per trial step, for long curved
   * valleys. Default false. */
  readonly geodesicAcceleration?: boolean;
  /** Relative finite-difference step for the forward-difference Jacobian. Default 1e-7. */
  readonly fdStep?: number;
  /** Stop when the step is smaller than this times (|x| + this). Default 1e-10. */
  readonly xTol?: number;
  /** Stop when the gradient's max-norm over free coordinates is below this. Default 1e-14. */
  readonly gTol?: number;
  /** Stop when an accepted step lowers the cost by less than this fraction. Default 1e-12. */
  readonly fTol?: number;
}

/** Result of {@link levenbergMarquardt}. */
export interface LmResult {
  /** Best point found (feasible if `project` is given). */
  readonly x: number[];
  /** Half the sum of squared residuals at `x`. */
  readonly cost: number;
  /** Iterations done (Jacobian evaluations). */
  readonly iterations: number;
}

/**
 * Projected Levenberg-Marquardt for min ½‖r(x)‖²: Marquardt-scaled damping (JᵀJ + mu·diag(JᵀJ)),
 * Nielsen's damping update, a projection after every step and coordinates on an active box bound
 * frozen for the step. Never throws on a bad step: non-finite residuals count as an infinite cost
 * and the step is rejected. Source: Madsen-Nielsen-Tingleff 2004, Algorithm 3.16.
 */
export function levenbergMarquardt(
  residuals: (x: readonly number[]) => number[],
  x0: readonly number[],
  options: LmOptions = {},
): LmResult {
  const maxIt = options.maxIterations ?? 100;
  const project = options.project ?? ((x: number[]) => x);
  const fd = options.fdStep ?? 1e-7;
  const xTol = options.xTol ?? 1e-10;
  const gTol = options.gTol ?? 1e-14;
  const fTol = options.fTol ?? 1e-12;
  const n = x0.length;
  let x = project([...x0]);
  let r = residuals(x);
  let cost = lmCost(r);
  const m = r.length;
  let mu = 1e-3;
  let nu = 2;
  let it = 0;
  const frozen = new Array<boolean>(n).fill(false);
  while (it < maxIt) {
    it++;
    const J = options.jacobian ? options.jacobian(x, r) : forwardDifferenceJacobian(residuals, x, r, fd, m);
    const { JtJ, Jtr } = normalEquations(J, r, n, m);
    const gMax = freezeActiveBounds(x, Jtr, options.lower, options.upper, frozen);
    if (gMax < gTol) break;
    const diag = JtJ.map((row, i) => Math.max(row[i] as number, 1e-12 * (1 + Math.abs(row[i] as number))));
    let accepted = false;
    let stop = false;
    for (let inner = 0; inner < 30; inner++) {
      const A = JtJ.map((row, i) => row.map((v, j) => (frozen[i] || frozen[j] ? (i === j ? 1 : 0) : i === j ? v + mu * (diag[i] as number) : v)));
      const step = solveLinearSystem(A, Jtr.map((v, i) => (frozen[i] ? 0 : -v)));
      if (step === null || (options.geodesicAcceleration && !accelerate(residuals, x, r, J, A, frozen, step, m))) {
        mu *= nu;
        nu *= 2;
        continue;
      }
      const xNew = project(x.map((v, i) => v + (step[i] as number)));
      const h = xNew.map((v, i) => v - (x[i] as number));
      if (stepBelowTolerance(h, x, xTol)) {
        stop = true;
        break;
      }
      const rNew = residuals(xNew);
      const costNew = lmCost(rNew);
      const pred = predictedReduction(JtJ, Jtr, h);
      const gain = pred > 0 ? (cost - costNew) / pred : cost > costNew ? 1 : -1;
      if (costNew < cost && gain > 0) {
        const relDrop = (cost - costNew) / Math.max(cost, 1e-300);
        x = xNew;
        r = rNew;
        cost = costNew;
        mu *= Math.max(1 / 3, 1 - (2 * gain - 1) ** 3);
        nu = 2;
        accepted = true;
        if (relDrop < fTol) stop = true;
        break;
      }
      mu *= nu;
      nu *= 2;
    }
    if (stop || !accepted) break;
  }
  return { x, cost, iterations: it };
}

/** ½‖r‖², or +infinity when a residual is not finite (the step is then rejected). */
function lmCost(r: readonly number[]): number {
  let s = 0;
  for (const v of r) s += v * v;
  return Number.isFinite(s) ? 0.5 * s : Number.POSITIVE_INFINITY;
}

/** The Jacobian by forward differences, one column per coordinate (step fd·max(|x_j|, 1e-4)). */
function forwardDifferenceJacobian(residuals: (x: readonly number[]) => number[], x: readonly number[], r: readonly number[], fd: number, m: number): number[][] {
  const J: number[][] = [];
  for (let j = 0; j < x.length; j++) {
    const xj = x[j] as number;
    const h = fd * Math.max(Math.abs(xj), 1e-4);
    const xp = [...x];
    xp[j] = xj + h;
    const rp = residuals(xp);
    const col = new Array<number>(m);
    for (let i = 0; i < m; i++) col[i] = ((rp[i] as number) - (r[i] as number)) / h;
    J.push(col);
  }
  return J;
}

/**
 * JᵀJ and Jᵀr over the rows whose Jacobian row is not all zero (e.g. inactive hinge penalties add nothing); JᵀJ is
 * symmetric: the upper triangle, mirrored (the same sums in the same order). Non-finite sums count as 0.
 */
function normalEquations(J: readonly (readonly number[])[], r: readonly number[], n: number, m: number): { JtJ: number[][]; Jtr: number[] } {
  const rows: number[] = [];
  for (let i = 0; i < m; i++) {
    for (let a = 0; a < n; a++) {
      if ((J[a] as number[])[i] !== 0) {
        rows.push(i);
        break;
      }
    }
  }
  const JtJ: number[][] = [];
  const Jtr: number[] = [];
  for (let a = 0; a < n; a++) JtJ.push(new Array<number>(n).fill(0));
  for (let a = 0; a < n; a++) {
    const ca = J[a] as number[];
    const row = JtJ[a] as number[];
    for (let b = a; b < n; b++) {
      const cb = J[b] as number[];
      let s = 0;
      for (let t = 0; t < rows.length; t++) {
        const i = rows[t] as number;
        s += (ca[i] as number) * (cb[i] as number);
      }
      const v = Number.isFinite(s) ? s : 0;
      row[b] = v;
      (JtJ[b] as number[])[a] = v;
    }
    let s = 0;
    for (let t = 0; t < rows.length; t++) {
      const i = rows[t] as number;
      s += (ca[i] as number) * (r[i] as number);
    }
    Jtr.push(Number.isFinite(s) ? s : 0);
  }
  return { JtJ, Jtr };
}

/**
 * Marks in `frozen` the coordinates on a box bound whose gradient points out of the box (frozen for this step).
 * @returns the largest gradient magnitude of the free coordinates
 */
function freezeActiveBounds(x: readonly number[], Jtr: readonly number[], lower: LmOptions['lower'], upper: LmOptions['upper'], frozen: boolean[]): number {
  let gMax = 0;
  for (let j = 0; j < x.length; j++) {
    const xj = x[j] as number;
    const gj = Jtr[j] as number;
    const lo = lower?.[j] ?? Number.NEGATIVE_INFINITY;
    const hi = upper?.[j] ?? Number.POSITIVE_INFINITY;
    const tolB = 1e-12 * (1 + Math.abs(xj));
    frozen[j] = (xj <= lo + tolB && gj > 0) || (xj >= hi - tolB && gj < 0);
    if (!frozen[j]) gMax = Math.max(gMax, Math.abs(gj));
  }
  return gMax;
}

/**
 * Transtrum-Sethna (2012) geodesic acceleration: the second directional derivative of r along the velocity
 * v = step by a finite difference, r'' = (2/t)((r(x + t v) - r(x))/t - J v), t = 0.1; the acceleration a solves
 * (JᵀJ + mu D) a = -Jᵀ r''; the step v + a/2 is taken when 2|a|/|v| <= 0.75.
 * @returns true with `step` replaced by v + a/2; false (step unchanged) when the acceleration is too large or singular
 */
function accelerate(
  residuals: (x: readonly number[]) => number[],
  x: readonly number[],
  r: readonly number[],
  J: readonly (readonly number[])[],
  A: readonly (readonly number[])[],
  frozen: readonly boolean[],
  step: number[],
  m: number,
): boolean {
  const n = x.length;
  const t = 0.1;
  const rv = residuals(x.map((v, i) => v + t * (step[i] as number)));
  const Jtrpp = new Array<number>(n).fill(0);
  for (let i = 0; i < m; i++) {
    let Jv = 0;
    for (let j = 0; j < n; j++) Jv += ((J[j] as number[])[i] as number) * (step[j] as number);
    const rpp = (2 / t) * (((rv[i] as number) - (r[i] as number)) / t - Jv);
    if (!Number.isFinite(rpp)) continue;
    for (let j = 0; j < n; j++) Jtrpp[j] = (Jtrpp[j] as number) + ((J[j] as number[])[i] as number) * rpp;
  }
  const acc = solveLinearSystem(A, Jtrpp.map((v, i) => (frozen[i] ? 0 : -v)));
  let aN = 0;
  let vN = 0;
  for (let i = 0; i < n; i++) {
    aN += ((acc?.[i] ?? 0) as number) ** 2;
    vN += (step[i] as number) ** 2;
  }
  if (acc === null || 2 * Math.sqrt(aN) > 0.75 * Math.sqrt(vN)) return false;
  for (let i = 0; i < n; i++) step[i] = (step[i] as number) + 0.5 * (acc[i] as number);
  return true;
}

/** True when the (projected) step h is below xTol relative to x: the iteration has converged. */
function stepBelowTolerance(h: readonly number[], x: readonly number[], xTol: number): boolean {
  let hNorm = 0;
  let xNorm = 0;
  for (let i = 0; i < h.length; i++) {
    hNorm += (h[i] as number) ** 2;
    xNorm += (x[i] as number) ** 2;
  }
  return Math.sqrt(hNorm) <= xTol * (Math.sqrt(xNorm) + xTol);
}

/** Predicted reduction of the linear model for the step h: -hᵀ(Jᵀr + ½ JᵀJ h). */
function predictedReduction(JtJ: readonly (readonly number[])[], Jtr: readonly number[], h: readonly number[]): number {
  let pred = 0;
  for (let i = 0; i < h.length; i++) {
    let Jh = 0;
    for (let j = 0; j < h.length; j++) Jh += ((JtJ[i] as number[])[j] as number) * (h[j] as number);
    pred -= (h[i] as number) * ((Jtr[i] as number) + 0.5 * Jh);
  }
  return pred;
}

/** Options of {@link nelderMead}. */
export interface NelderMeadOptions {
  /** Maximal number of function evaluations. Default 400. */
  readonly maxEvaluations?: number;
  /** Initial simplex edge per coordinate. Default 0.5 for every coordinate. */
  readonly initialStep?: readonly number[] | number;
  /** Stop when max |f_i - f_best| <= fTol·(|f_best| + 1e-300) and the simplex is smaller than xTol. */
  readonly fTol?: number;
  readonly xTol?: number;
}

/** Result of {@link nelderMead}. */
export interface NelderMeadResult {
  readonly x: number[];
  readonly f: number;
  readonly evaluations: number;
  readonly iterations: number;
}

/**
 * Nelder-Mead simplex minimization of f over R^n, deterministic (axis-aligned initial simplex).
 * Non-finite f values are treated as +Infinity. Source: Nelder & Mead 1965; Lagarias et al. 1998.
 */
export function nelderMead(f: (x: readonly number[]) => number, x0: readonly number[], options: NelderMeadOptions = {}): NelderMeadResult {
  const n = x0.length;
  const maxEval = options.maxEvaluations ?? 400;
  const fTol = options.fTol ?? 1e-10;
  const xTol = options.xTol ?? 1e-8;
  const steps = typeof options.initialStep === 'number' || options.initialStep === undefined
    ? new Array<number>(n).fill((options.initialStep as number | undefined) ?? 0.5)
    : [...options.initialStep];
  let evals = 0;
  const F = (x: readonly number[]): number => {
    evals++;
    const v = f(x);
    return Number.isFinite(v) ? v : Number.POSITIVE_INFINITY;
  };
  const simplex: { x: number[]; f: number }[] = [{ x: [...x0], f: F(x0) }];
  for (let i = 0; i < n; i++) {
    const x = [...x0];
    x[i] = (x[i] as number) + (steps[i] as number);
    simplex.push({ x, f: F(x) });
  }
  let iterations = 0;
  while (evals < maxEval) {
    iterations++;
    simplex.sort((p, q) => p.f - q.f);
    const best = simplex[0] as { x: number[]; f: number };
    const worst = simplex[n] as { x: number[]; f: number };
    let fSpread = 0;
    let xSpread = 0;
    for (let i = 1; i <= n; i++) {
      const s = simplex[i] as { x: number[]; f: number };
      fSpread = Math.max(fSpread, Math.abs(s.f - best.f));
      for (let j = 0; j < n; j++) xSpread = Math.max(xSpread, Math.abs((s.x[j] as number) - (best.x[j] as number)));
    }
    if (fSpread <= fTol * (Math.abs(best.f) + 1e-300) && xSpread <= xTol) break;
    if (xSpread <= xTol * 1e-3) break;
    const c = new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) c[j] = (c[j] as number) + ((simplex[i] as { x: number[] }).x[j] as number) / n;
    const along = (t: number): number[] => c.map((cj, j) => cj + t * (cj - (worst.x[j] as number)));
    const xr = along(1);
    const fr = F(xr);
    const second = simplex[n - 1] as { f: number };
    if (fr < best.f) {
      const xe = along(2);
      const fe = F(xe);
      simplex[n] = fe < fr ? { x: xe, f: fe } : { x: xr, f: fr };
      continue;
    }
    if (fr < second.f) {
      simplex[n] = { x: xr, f: fr };
      continue;
    }
    const outside = fr < worst.f;
    const xc = along(outside ? 0.5 : -0.5);
    const fc = F(xc);
    if (outside ? fc <= fr : fc < worst.f) {
      simplex[n] = { x: xc, f: fc };
      continue;
    }
    for (let i = 1; i <= n; i++) {
      const s = simplex[i] as { x: number[]; f: number };
      const x = s.x.map((v, j) => (best.x[j] as number) + 0.5 * (v - (best.x[j] as number)));
      simplex[i] = { x, f: F(x) };
    }
  }
  simplex.sort((p, q) => p.f - q.f);
  const b = simplex[0] as { x: number[]; f: number };
  return { x: b.x, f: b.f, evaluations: evals, iterations };
}

/**
 * Multi-start selection on a grid of starting points: the points no worse than any of their (up to 8) neighbours on
 * the grid, best first, a point equal to an earlier one (same x) counted once, at most `max`. Adjacent grid points lie
 * in one basin and converge to the same optimum, so a local optimizer started from each does the same work again.
 * @param points the grid in row-major order, `cols` per row, each with its coordinates x and objective f (may be
 *   +Infinity); an empty grid gives no starts
 * @param cols points per grid row (> 0)
 * @param max most starts returned
 * @returns the selected points' x, best (lowest f) first
 * @throws RangeError when points.length is not a multiple of cols
 */
export function gridLocalMinima(points: ReadonlyArray<{ readonly x: readonly number[]; readonly f: number }>, cols: number, max: number): number[][] {
  if (!(cols > 0) || points.length % cols !== 0) throw new RangeError(`gridLocalMinima: ${points.length} points do not fill rows of ${cols}`);
  const rows = points.length / cols;
  const at = (i: number, j: number): number => (i < 0 || j < 0 || i >= rows || j >= cols ? Number.POSITIVE_INFINITY : points[i * cols + j]!.f);
  const minima = points.filter((c, t) => {
    const i = Math.floor(t / cols);
    const j = t % cols;
    for (let di = -1; di <= 1; di++) for (let dj = -1; dj <= 1; dj++) if ((di !== 0 || dj !== 0) && at(i + di, j + dj) < c.f) return false;
    return true;
  });
  minima.sort((p, q) => p.f - q.f);
  const distinct = minima.filter((c, i) => minima.findIndex((o) => o.x.every((v, j) => v === c.x[j])) === i);
  return distinct.slice(0, max).map((c) => [...c.x]);
}

/** Result of {@link solveQpActiveSet}. */
export interface QpResult {
  readonly x: number[];
  /** Active inequality indices at the solution. */
  readonly active: number[];
  readonly iterations: number;
}

/**
 * Small dense convex QP by the primal active-set method:
 *   minimize ½ xᵀHx - gᵀx  subject to  A x <= b (rows of A), E x = e.
 * `x0` must be feasible (ideally strictly inside the inequalities). H must be positive definite on
 * the null space of the active constraints (add a tiny ridge otherwise). Returns the last feasible
 * iterate after `maxIterations` if the method has not converged (never throws).
 * Source: J. Nocedal, S.J. Wright, "Numerical Optimization", 2nd ed., Springer 2006, Algorithm 16.3.
 */
export function solveQpActiveSet(
  H: readonly (readonly number[])[],
  g: readonly number[],
  A: readonly (readonly number[])[],
  b: readonly number[],
  E: readonly (readonly number[])[],
  e: readonly number[],
  x0: readonly number[],
  maxIterations = 60,
): QpResult {
  const n = g.length;
  const nE = E.length;
  const mA = A.length;
  const x = Float64Array.from(x0);
  const W: number[] = [];
  const inW = new Uint8Array(mA);
  const maxDim = n + nE + Math.min(mA, n);
  const K = new Float64Array(maxDim * (maxDim + 1));
  const sol = new Float64Array(maxDim);
  let it = 0;
  while (it < maxIterations) {
    it++;
    const dim = n + nE + W.length;
    if (dim > maxDim) {
      // More active rows than variables: drop the oldest inequality (degenerate vertex).
      inW[W.shift() as number] = 0;
      continue;
    }
    fillKkt(K, H, g, A, E, W, x);
    if (!gaussSolveInPlace(K, dim, sol)) {
      if (W.length === 0) break;
      inW[W.pop() as number] = 0;
      continue;
    }
    let pNorm = 0;
    let xNorm = 0;
    for (let i = 0; i < n; i++) {
      pNorm = Math.max(pNorm, Math.abs(sol[i] as number));
      xNorm = Math.max(xNorm, Math.abs(x[i] as number));
    }
    if (pNorm <= 1e-13 * (1 + xNorm)) {
      // no move: optimal unless an active inequality has a negative multiplier (the most negative one is dropped)
      if (!dropMostNegativeMultiplier(sol, n + nE, W, inW)) break;
      continue;
    }
    const { alpha, block } = stepToBlocking(A, b, inW, sol, x, n);
    for (let i = 0; i < n; i++) x[i] = (x[i] as number) + alpha * (sol[i] as number);
    if (block >= 0) {
      W.push(block);
      inW[block] = 1;
    }
  }
  return { x: Array.from(x), active: W, iterations: it };
}

/**
 * Writes into `K` (row-major, dim + 1 columns) the KKT system of the working set W (equality rows first):
 * [H Cᵀ; C 0][p; mu] = [-(Hx - g); 0].
 */
function fillKkt(
  K: Float64Array,
  H: readonly (readonly number[])[],
  g: readonly number[],
  A: readonly (readonly number[])[],
  E: readonly (readonly number[])[],
  W: readonly number[],
  x: Float64Array,
): void {
  const n = g.length;
  const nE = E.length;
  const q = nE + W.length;
  const dim = n + q;
  const cols = dim + 1;
  for (let r = 0; r < n; r++) {
    const Hr = H[r] as readonly number[];
    let hx = 0;
    for (let c = 0; c < n; c++) {
      K[r * cols + c] = Hr[c] as number;
      hx += (Hr[c] as number) * (x[c] as number);
    }
    for (let t = 0; t < q; t++) {
      const row = (t < nE ? E[t] : A[W[t - nE] as number]) as readonly number[];
      K[r * cols + n + t] = row[r] as number;
    }
    K[r * cols + dim] = -(hx - (g[r] as number));
  }
  for (let t = 0; t < q; t++) {
    const row = (t < nE ? E[t] : A[W[t - nE] as number]) as readonly number[];
    const base = (n + t) * cols;
    for (let c = 0; c < n; c++) K[base + c] = row[c] as number;
    for (let c = n; c < dim; c++) K[base + c] = 0;
    K[base + dim] = 0;
  }
}

/**
 * Drops from the working set the inequality with the most negative multiplier (below -1e-14; the multipliers of W
 * start at `sol[first]`).
 * @returns false when there is none: the iterate is optimal
 */
function dropMostNegativeMultiplier(sol: Float64Array, first: number, W: number[], inW: Uint8Array): boolean {
  let worst = -1;
  let worstVal = -1e-14;
  for (let j = 0; j < W.length; j++) {
    const mu = sol[first + j] as number;
    if (mu < worstVal) {
      worstVal = mu;
      worst = j;
    }
  }
  if (worst < 0) return false;
  inW[W[worst] as number] = 0;
  W.splice(worst, 1);
  return true;
}

/** The longest fraction (at most 1) of the step `sol` that keeps the inequalities outside W, and the first row that blocks it (or -1). */
function stepToBlocking(A: readonly (readonly number[])[], b: readonly number[], inW: Uint8Array, sol: Float64Array, x: Float64Array, n: number): { alpha: number; block: number } {
  let alpha = 1;
  let block = -1;
  for (let i = 0; i < A.length; i++) {
    if (inW[i]) continue;
    const Ai = A[i] as readonly number[];
    let ap = 0;
    let ax = 0;
    for (let c = 0; c < n; c++) {
      ap += (Ai[c] as number) * (sol[c] as number);
      ax += (Ai[c] as number) * (x[c] as number);
    }
    if (ap > 1e-15) {
      const t = Math.max(0, (b[i] as number) - ax) / ap;
      if (t < alpha) {
        alpha = t;
        block = i;
      }
    }
  }
  return { alpha, block };
}

/**
 * The same convex QP in exactly three variables and without equality rows,
 *   minimize ½ xᵀHx - gᵀx  subject to  A x <= b,
 * solved by enumerating active sets of size 0, 1, 2, 3 in that order and returning the first that satisfies the
 * KKT conditions (primal feasibility, multipliers >= 0). For a strictly convex objective the KKT point is the
 * unique minimizer (Nocedal-Wright 2006, Theorem 16.4), so the answer is the active-set method's, found in a few
 * closed-form steps instead of a dozen Gaussian eliminations: with H⁻¹ once, the unconstrained minimizer
 * x_u = H⁻¹g, u_j = H⁻¹A_jᵀ and r_j = A_j x_u - b_j, the set S has multipliers μ = (A_S u_S)⁻¹ r_S and
 * x = x_u - Σ_S μ_j u_j (the range-space form, Nocedal-Wright 2006 eq. (16.17)). A single row can only be the
 * active set when x_u violates it (μ = r_j / A_j u_j > 0), which prunes most of the work.
 * @param H symmetric positive definite 3x3; @param g length 3; @param A rows of length 3; @param b one per row.
 * @returns the minimizer, or null when H is ill-conditioned (relative determinant < 1e-8) or no active set of at most three rows
 *   satisfies the KKT conditions within rounding (degenerate; the caller falls back to {@link solveQpActiveSet}).
 */
export function solveQp3(H: readonly (readonly number[])[], g: readonly number[], A: readonly (readonly number[])[], b: readonly number[]): number[] | null {
  const h0 = H[0] as readonly number[];
  const h1 = H[1] as readonly number[];
  const h2 = H[2] as readonly number[];
  const a = h0[0] as number, bb = h0[1] as number, c = h0[2] as number;
  const e = h1[1] as number, f = h1[2] as number, i = h2[2] as number;
  // Adjugate of the symmetric H (Cramer's rule).
  const c00 = e * i - f * f, c01 = c * f - bb * i, c02 = bb * f - c * e;
  const c11 = a * i - c * c, c12 = c * bb - a * f, c22 = a * e - bb * bb;
  const det = a * c00 + bb * c01 + c * c02;
  // An ill-conditioned H (relative determinant below 1e-8) is left to the active-set method, whose elimination on
  // the KKT system does not form H⁻¹.
  if (!(Math.abs(det) > 1e-8 * Math.abs(a * e * i)) || !Number.isFinite(det)) return null;
  const m = A.length;
  const w = qp3Scratch(m);
  const inv = w.inv;
  inv[0] = c00 / det; inv[1] = c01 / det; inv[2] = c02 / det;
  inv[3] = c01 / det; inv[4] = c11 / det; inv[5] = c12 / det;
  inv[6] = c02 / det; inv[7] = c12 / det; inv[8] = c22 / det;
  const g0 = g[0] as number, g1 = g[1] as number, g2 = g[2] as number;
  const xu0 = inv[0]! * g0 + inv[1]! * g1 + inv[2]! * g2;
  const xu1 = inv[3]! * g0 + inv[4]! * g1 + inv[5]! * g2;
  const xu2 = inv[6]! * g0 + inv[7]! * g1 + inv[8]! * g2;
  const { U, r, M } = w;
  let feasible = true;
  for (let j = 0; j < m; j++) {
    const Aj = A[j] as readonly number[];
    const A0 = Aj[0] as number, A1 = Aj[1] as number, A2 = Aj[2] as number;
    r[j] = A0 * xu0 + A1 * xu1 + A2 * xu2 - (b[j] as number);
    if (r[j]! > qp3RowTol(Aj, b[j] as number, xu0, xu1, xu2, xu0, xu1, xu2)) feasible = false;
  }
  if (feasible) return [xu0, xu1, xu2]; // the unconstrained minimizer is feasible
  for (let j = 0; j < m; j++) {
    const Aj = A[j] as readonly number[];
    for (let t = 0; t < 3; t++) U[3 * j + t] = inv[3 * t]! * (Aj[0] as number) + inv[3 * t + 1]! * (Aj[1] as number) + inv[3 * t + 2]! * (Aj[2] as number);
  }
  const S = w.S;
  const mu = w.mu;
  // M = A H⁻¹ Aᵀ, needed only once x_u is infeasible.
  for (let j = 0; j < m; j++) {
    const Aj = A[j] as readonly number[];
    for (let k = 0; k < m; k++) M[j * m + k] = (Aj[0] as number) * U[3 * k]! + (Aj[1] as number) * U[3 * k + 1]! + (Aj[2] as number) * U[3 * k + 2]!;
  }
  for (let j = 0; j < m; j++) {
    if (!(r[j]! > 0)) continue; // a single active row must be violated by x_u (its multiplier r_j / M_jj > 0)
    S[0] = j;
    mu[0] = r[j]! / M[j * m + j]!;
    if (qp3Accept(A, b, m, xu0, xu1, xu2, U, S, mu, 1, w.x)) return Array.from(w.x);
  }
  for (let j = 0; j < m; j++) {
    for (let k = j + 1; k < m; k++) {
      const p = M[j * m + j]!, q = M[j * m + k]!, s = M[k * m + k]!;
      const dt = p * s - q * q;
      if (!(Math.abs(dt) > 1e-12 * Math.abs(p * s))) continue;
      S[0] = j;
      S[1] = k;
      mu[0] = (s * r[j]! - q * r[k]!) / dt;
      mu[1] = (p * r[k]! - q * r[j]!) / dt;
      if (qp3Accept(A, b, m, xu0, xu1, xu2, U, S, mu, 2, w.x)) return Array.from(w.x);
    }
  }
  for (let j = 0; j < m; j++) {
    for (let k = j + 1; k < m; k++) {
      for (let l = k + 1; l < m; l++) {
        const idx = [j, k, l];
        const sol = solveLinearSystem(idx.map((x) => idx.map((y) => M[x * m + y]!)), [r[j]!, r[k]!, r[l]!]);
        if (sol === null) continue;
        S[0] = j;
        S[1] = k;
        S[2] = l;
        mu[0] = sol[0]!;
        mu[1] = sol[1]!;
        mu[2] = sol[2]!;
        if (qp3Accept(A, b, m, xu0, xu1, xu2, U, S, mu, 3, w.x)) return Array.from(w.x);
      }
    }
  }
  return null;
}

interface Qp3Scratch {
  readonly inv: Float64Array;
  readonly U: Float64Array;
  readonly r: Float64Array;
  readonly M: Float64Array;
  readonly S: Int32Array;
  readonly mu: Float64Array;
  readonly x: Float64Array;
}
let qp3Buffers: Qp3Scratch | null = null;

/** Work arrays of {@link solveQp3} for m rows, reused between calls (it is called thousands of times per fit). */
function qp3Scratch(m: number): Qp3Scratch {
  if (qp3Buffers === null || qp3Buffers.r.length < m) {
    qp3Buffers = { inv: new Float64Array(9), U: new Float64Array(3 * m), r: new Float64Array(m), M: new Float64Array(m * m), S: new Int32Array(3), mu: new Float64Array(3), x: new Float64Array(3) };
  }
  return qp3Buffers;
}

/**
 * Rounding tolerance of row A_j x <= b_j at x = x_u - sum mu u: 1e-12 of the row's own magnitudes, |b_j|, |A_j x| and
 * |A_j x_u| (x is a difference from x_u, so its rounding error is relative to x_u), not of the largest row's.
 */
function qp3RowTol(Aj: readonly number[], bj: number, x0: number, x1: number, x2: number, xu0: number, xu1: number, xu2: number): number {
  const a0 = Math.abs(Aj[0] as number);
  const a1 = Math.abs(Aj[1] as number);
  const a2 = Math.abs(Aj[2] as number);
  const s = Math.abs(bj) + a0 * (Math.abs(x0) + Math.abs(xu0)) + a1 * (Math.abs(x1) + Math.abs(xu1)) + a2 * (Math.abs(x2) + Math.abs(xu2));
  return 1e-12 * (s > 0 ? s : 1e-300);
}

/**
 * KKT test of one active set of {@link solveQp3}: multipliers mu[0..q) >= 0 (up to rounding: a zero multiplier at a
 * degenerate vertex may come out as -1e-17), and x = x_u - sum mu_t u_{S_t} feasible within each row's rounding
 * tolerance ({@link qp3RowTol}). Writes x into `out`.
 */
function qp3Accept(
  A: readonly (readonly number[])[],
  b: readonly number[],
  m: number,
  xu0: number,
  xu1: number,
  xu2: number,
  U: Float64Array,
  S: Int32Array,
  mu: Float64Array,
  q: number,
  out: Float64Array,
): boolean {
  let muMax = 0;
  for (let t = 0; t < q; t++) muMax = Math.max(muMax, Math.abs(mu[t]!));
  for (let t = 0; t < q; t++) if (!(mu[t]! >= -1e-9 * muMax)) return false;
  let x0 = xu0, x1 = xu1, x2 = xu2;
  for (let t = 0; t < q; t++) {
    const j = S[t]!;
    x0 -= mu[t]! * U[3 * j]!;
    x1 -= mu[t]! * U[3 * j + 1]!;
    x2 -= mu[t]! * U[3 * j + 2]!;
  }
  for (let j = 0; j < m; j++) {
    const Aj = A[j] as readonly number[];
    if ((Aj[0] as number) * x0 + (Aj[1] as number) * x1 + (Aj[2] as number) * x2 - (b[j] as number) > qp3RowTol(Aj, b[j] as number, x0, x1, x2, xu0, xu1, xu2)) return false;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  return true;
}

/** Gaussian elimination with partial pivoting on an augmented row-major dim x (dim+1) matrix, in place. */
function gaussSolveInPlace(M: Float64Array, dim: number, out: Float64Array): boolean {
  const cols = dim + 1;
  let scale = 0;
  for (let r = 0; r < dim; r++) for (let c = 0; c < dim; c++) scale = Math.max(scale, Math.abs(M[r * cols + c] as number));
  const eps = 1e-14 * (scale > 0 ? scale : 1);
  for (let col = 0; col < dim; col++) {
    let piv = col;
    for (let r = col + 1; r < dim; r++) if (Math.abs(M[r * cols + col] as number) > Math.abs(M[piv * cols + col] as number)) piv = r;
    const pv = M[piv * cols + col] as number;
    if (!(Math.abs(pv) > eps)) return false;
    if (piv !== col) {
      for (let c = 0; c < cols; c++) {
        const t = M[piv * cols + c] as number;
        M[piv * cols + c] = M[col * cols + c] as number;
        M[col * cols + c] = t;
      }
    }
    for (let r = col + 1; r < dim; r++) {
      const f = (M[r * cols + col] as number) / pv;
      if (f === 0) continue;
      for (let c = col; c < cols; c++) M[r * cols + c] = (M[r * cols + c] as number) - f * (M[col * cols + c] as number);
    }
  }
  for (let r = dim - 1; r >= 0; r--) {
    let s = M[r * cols + dim] as number;
    for (let c = r + 1; c < dim; c++) s -= (M[r * cols + c] as number) * (out[c] as number);
    out[r] = s / (M[r * cols + r] as number);
    if (!Number.isFinite(out[r] as number)) return false;
  }
  return true;
}
