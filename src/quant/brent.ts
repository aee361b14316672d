/**
 * Brent's root finder: bracketing, derivative-free, superlinear (inverse quadratic interpolation and
 * secant steps, falling back to bisection whenever they do not shrink the bracket fast enough), so it
 * never needs more than about (log2((b - a)/tol))^2 evaluations and usually far fewer.
 *
 * Source: R. P. Brent, "Algorithms for Minimization without Derivatives", Prentice-Hall (1973), chapter 4
 * "An algorithm with guaranteed convergence for finding a zero of a function" (ALGOL procedure zero);
 * the loop structure follows W. H. Press et al., "Numerical Recipes", 3rd ed. (2007), section 9.3.
 * Tested in test/quant/brent.test.ts.
 */

/** Options of {@link brentRoot}. */
export interface BrentOptions {
  /** Absolute tolerance on the root (x units). Default 0: stop at floating-point resolution. */
  readonly xTolerance?: number;
  /** Maximum number of function evaluations after the two end points. Default 1100 (pure bisection
   *  from a bracket of width 1 down to 1e-300 needs about 1000). */
  readonly maxIterations?: number;
  /** f(a) when the caller already has it (saves one evaluation). */
  readonly fa?: number;
  /** f(b) when the caller already has it (saves one evaluation). */
  readonly fb?: number;
}

/** Result of {@link brentRoot}. */
export interface BrentResult {
  /** The root estimate x, with f changing sign within [x - tol, x + tol] (or f(x) = 0). */
  readonly root: number;
  /** f(root). */
  readonly fRoot: number;
  /** Number of evaluations of f made inside the loop. */
  readonly iterations: number;
}

const EPS = Number.EPSILON;
/** Floor of the tolerance, so a root at exactly 0 with xTolerance 0 still terminates. */
const TINY = 1e-300;

/**
 * Finds x in [a, b] with f(x) = 0, given f(a) and f(b) of opposite signs (Brent 1973, ch. 4).
 * The tolerance at x is 2 * EPSILON * |x| + xTolerance / 2 (+ 1e-300), as in Brent's procedure zero.
 *
 * @param f continuous function of one real variable
 * @param a one end of the bracket
 * @param b other end of the bracket (a > b allowed)
 * @throws RangeError when f(a), f(b) do not bracket a root (same sign or NaN), or when maxIterations is
 *   exhausted (cannot happen with the default for a continuous f)
 */
export function brentRoot(f: (x: number) => number, a: number, b: number, options: BrentOptions = {}): BrentResult {
  const xTol = options.xTolerance ?? 0;
  const maxIter = options.maxIterations ?? 1100;
  let fa = options.fa ?? f(a);
  let fb = options.fb ?? f(b);
  if (Number.isNaN(fa) || Number.isNaN(fb)) {
    throw new RangeError(`brentRoot: f is NaN at a bracket end (f(${a}) = ${fa}, f(${b}) = ${fb})`);
  }
  if (fa === 0) return { root: a, fRoot: 0, iterations: 0 };
  if (fb === 0) return { root: b, fRoot: 0, iterations: 0 };
  if ((fa > 0) === (fb > 0)) {
    throw new RangeError(`brentRoot: f(a) and f(b) must have opposite signs (f(${a}) = ${fa}, f(${b}) = ${fb})`);
  }
  let c = b;
  let fc = fb;
  let d = b - a;
  let e = d;
  for (let iter = 1; iter <= maxIter; iter++) {
    if ((fb > 0) === (fc > 0)) {
      // Keep [b, c] a bracket: c takes the previous iterate a.
      c = a;
      fc = fa;
      d = b - a;
      e = d;
    }
    if (Math.abs(fc) < Math.abs(fb)) {
      // b is the best estimate so far.
      a = b;
      b = c;
      c = a;
      fa = fb;
      fb = fc;
      fc = fa;
    }
    const tol1 = 2 * EPS * Math.abs(b) + 0.5 * xTol + TINY;
    const xm = 0.5 * (c - b);
    if (Math.abs(xm) <= tol1 || fb === 0) return { root: b, fRoot: fb, iterations: iter - 1 };
    if (Math.abs(e) >= tol1 && Math.abs(fa) > Math.abs(fb)) {
      // Try interpolation: secant when only two distinct points, inverse quadratic otherwise.
      const s = fb / fa;
      let p: number;
      let q: number;
      if (a === c) {
        p = 2 * xm * s;
        q = 1 - s;
      } else {
        const qa = fa / fc;
        const r = fb / fc;
        p = s * (2 * xm * qa * (qa - r) - (b - a) * (r - 1));
        q = (qa - 1) * (r - 1) * (s - 1);
      }
      if (p > 0) q = -q;
      p = Math.abs(p);
      const min1 = 3 * xm * q - Math.abs(tol1 * q);
      const min2 = Math.abs(e * q);
      if (2 * p < Math.min(min1, min2)) {
        e = d;
        d = p / q;
      } else {
        d = xm;
        e = d;
      }
    } else {
      d = xm;
      e = d;
    }
    a = b;
    fa = fb;
    b += Math.abs(d) > tol1 ? d : xm > 0 ? tol1 : -tol1;
    fb = f(b);
    if (Number.isNaN(fb)) throw new RangeError(`brentRoot: f(${b}) is NaN`);
  }
  throw new RangeError(`brentRoot: no convergence in ${maxIter} iterations (bracket [${b}, ${c}])`);
}
