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
  const lower = options.lower;
  const upper = options.upper;
  const n = x0.length;
  const costOf = (r: readonly number[]): number => {
    let s = 0;
    for (const v of r) s += v * v;
    return Number.isFinite(s) ? 0.5 * s : Number.POSITIVE_INFINITY;
  };
  let x = project([...x0]);
  let r = residuals(x);
  let cost = costOf(r);
  const m = r.length;
  let mu = 1e-3;
  let nu = 2;
  let it = 0;
  const frozen = new Array<boolean>(n).fill(false);
  while (it < maxIt) {
    it++;
    let J: number[][];
    if (options.jacobian) J = options.jacobian(x, r);
    else {
      J = [];
      for (let j = 0; j < n; j++) {
        const xj = x[j] as number;
        const h = fd * Math.max(Math.abs(xj), 1e-4);
        const xp = [...x];
        xp[j] = xj + h;
        const rp = residuals(xp);
        const col = new Array<number>(m);
        for (let i = 0; i < m; i++) col[i] = ((rp[i] as number) - (r[i] as number)) / h;
        J.push(col);
      }
    }
    // Rows whose Jacobian row is all zero (e.g. inactive hinge penalties) add nothing: skip them.
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
    for (let a = 0; a < n; a++) {
      const ca = J[a] as number[];
      const row: number[] = [];
      for (let b = 0; b < n; b++) {
        const cb = J[b] as number[];
        let s = 0;
        for (const i of rows) s += (ca[i] as number) * (cb[i] as number);
        row.push(Number.isFinite(s) ? s : 0);
      }
      JtJ.push(row);
      let s = 0;
      for (const i of rows) s += (ca[i] as number) * (r[i] as number);
      Jtr.push(Number.isFinite(s) ? s : 0);
    }
    let gMax = 0;
    for (let j = 0; j < n; j++) {
      const xj = x[j] as number;
      const gj = Jtr[j] as number;
      const lo = lower?.[j] ?? Number.NEGATIVE_INFINITY;
      const hi = upper?.[j] ?? Number.POSITIVE_INFINITY;
      const tolB = 1e-12 * (1 + Math.abs(xj));
      frozen[j] = (xj <= lo + tolB && gj > 0) || (xj >= hi - tolB && gj < 0);
      if (!frozen[j]) gMax = Math.max(gMax, Math.abs(gj));
    }
    if (gMax < gTol) break;
    const diag = JtJ.map((row, i) => Math.max(row[i] as number, 1e-12 * (1 + Math.abs(row[i] as number))));
    let accepted = false;
    let stop = false;
    for (let inner = 0; inner < 30; inner++) {
      const A = JtJ.map((row, i) => row.map((v, j) => (frozen[i] || frozen[j] ? (i === j ? 1 : 0) : i === j ? v + mu * (diag[i] as number) : v)));
      const step = solveLinearSystem(A, Jtr.map((v, i) => (frozen[i] ? 0 : -v)));
      if (step === null) {
        mu *= nu;
        nu *= 2;
        continue;
      }
      const xNew = project(x.map((v, i) => v + (step[i] as number)));
      const h = xNew.map((v, i) => v - (x[i] as number));
      let hNorm = 0;
      let xNorm = 0;
      for (let i = 0; i < n; i++) {
        hNorm += (h[i] as number) ** 2;
        xNorm += (x[i] as number) ** 2;
      }
      if (Math.sqrt(hNorm) <= xTol * (Math.sqrt(xNorm) + xTol)) {
        stop = true;
        break;
      }
      const rNew = residuals(xNew);
      const costNew = costOf(rNew);
      // Predicted reduction of the linear model for the (projected) step h.
      let pred = 0;
      for (let i = 0; i < n; i++) {
        let Jh = 0;
        for (let j = 0; j < n; j++) Jh += ((JtJ[i] as number[])[j] as number) * (h[j] as number);
        pred -= (h[i] as number) * ((Jtr[i] as number) + 0.5 * Jh);
      }
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
    const q = nE + W.length;
    const dim = n + q;
    if (dim > maxDim) {
      // More active rows than variables: drop the oldest inequality (degenerate vertex).
      inW[W.shift() as number] = 0;
      continue;
    }
    const cols = dim + 1;
    // KKT system [H C^T; C 0][p; mu] = [-(Hx - g); 0].
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
      let worst = -1;
      let worstVal = -1e-14;
      for (let j = 0; j < W.length; j++) {
        const mu = sol[n + nE + j] as number;
        if (mu < worstVal) {
          worstVal = mu;
          worst = j;
        }
      }
      if (worst < 0) break;
      inW[W[worst] as number] = 0;
      W.splice(worst, 1);
      continue;
    }
    let alpha = 1;
    let block = -1;
    for (let i = 0; i < mA; i++) {
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
    for (let i = 0; i < n; i++) x[i] = (x[i] as number) + alpha * (sol[i] as number);
    if (block >= 0) {
      W.push(block);
      inW[block] = 1;
    }
  }
  return { x: Array.from(x), active: W, iterations: it };
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
