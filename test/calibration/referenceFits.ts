/**
 * Independent reference fits for the calibration-quality tests (test/calibration/referenceGap.test.ts) and the
 * calibration-quality benchmark (bench/calibrationQuality.ts). Nothing here imports the service's fitters,
 * optimizers or model formulas: the SVI total variance, Hagan's SABR formula, the linear solver and the
 * Nelder-Mead simplex are written again from their sources, so that a bug in src/quant cannot hide in its own
 * reference.
 *
 * - Objective (issue 26): sum_i ((iv_fit(k_i) - iv_i) / h_i)^2 with each quote's scale h_i ({@link refHalfSpreads}:
 *   the spread-weighted least squares; h = 1 everywhere is the plain least squares). RMSEs are reported unweighted.
 * - SVI reference: the best UNCONSTRAINED raw-SVI least-squares fit to the OTM mark IVs of one expiry, i.e.
 *   minimize sum_i ((sqrt(w(k_i)/T) - iv_i) / h_i)^2 over (a, b, rho, m, sigma) with only b >= 0, |rho| < 1,
 *   sigma > 0, min_k w(k) >= 0 and the Lee moment bound b (1 + |rho|) <= 2 (Lee 2004; a fit beyond it has
 *   arbitrage in the wings whatever the data). Algorithm: Zeliade Systems, "Quasi-explicit calibration of
 *   Gatheral's SVI model", ZWP-0005 (2009): for fixed (m, sigma) the model w = a + d y + c sqrt(y^2 + 1),
 *   y = (k - m)/sigma, is linear in (a, d, c); the weighted least squares over the polytope
 *   {c >= 0, |d| <= c, c + |d| <= 2 sigma, a <= max w_i} is solved exactly by enumerating active sets (the
 *   paper's "interior, then faces, edges, vertices"). The weights 1/(2 iv_i T) make variance residuals
 *   approximate IV residuals. The outer (m, sigma) problem is scanned on a 36 x 30 grid; the 6 best grid
 *   points are refined by Nelder-Mead in (m, ln sigma), and every refined point is polished by Nelder-Mead
 *   on all five parameters with the EXACT IV residuals (multi-start: the lowest RMSE wins).
 * - SABR reference: Hagan, Kumar, Lesniewski, Woodward, "Managing smile risk", Wilmott (2002), eq. (2.17a)
 *   with the given beta; (alpha, rho, nu) minimize the (weighted) IV least squares, Nelder-Mead on
 *   (ln alpha, atanh rho, ln nu) from a 7 x 8 x 3 grid of (rho, nu sqrt T, alpha / ATM-quote alpha), the 8
 *   best polished with restarts.
 * - Nelder-Mead: Nelder and Mead, Computer Journal 7 (1965); coefficients 1, 2, 0.5, 0.5 (Lagarias et al.,
 *   SIAM J. Optim. 9 (1998)), restarted from the best vertex until it stops improving.
 */

/**
 * One OTM quote of an expiry: log-moneyness ln(K/F) and mark IV (fraction); `h` (IV fraction, > 0) is the scale of
 * its residual in the objective, sum ((iv_fit - iv) / h)^2 (absent: 1, the plain least squares).
 */
export interface RefQuote {
  readonly k: number;
  readonly iv: number;
  readonly h?: number;
}

/**
 * The residual scales of issue 26's spread-weighted objective, written here again from the issue's words (not from
 * src/quant/quoteWeights.ts): h = max((ask IV - bid IV) / 2, 0.25 vol pt) for a quote with both a bid and an ask IV
 * (bid < ask); every other quote (no bid) gets the widest h of its expiry, at least 2 vol pts.
 * @param quotes one expiry's quotes with their bid and ask IVs (fractions; null when absent)
 * @returns h per quote, IV fraction
 */
export function refHalfSpreads(quotes: ReadonlyArray<{ readonly bidIv: number | null; readonly askIv: number | null }>): number[] {
  const two = quotes.map((q) => q.bidIv !== null && q.askIv !== null && q.bidIv > 0 && q.askIv > q.bidIv && Number.isFinite(q.askIv));
  const own = quotes.map((q, i) => (two[i] ? Math.max((q.askIv! - q.bidIv!) / 2, 0.0025) : 0));
  const widest = Math.max(0.02, ...own);
  return own.map((h, i) => (two[i] ? h : widest));
}

/** Unweighted RMSE of a fit against the marks and the value of its weighted objective. */
function scoreOf(iv: (k: number) => number, quotes: readonly RefQuote[]): number {
  return 100 * Math.sqrt(quotes.reduce((a, q) => a + (iv(q.k) - q.iv) ** 2, 0) / quotes.length);
}

/** Raw SVI (Gatheral 2004): w(k) = a + b (rho (k - m) + sqrt((k - m)^2 + sigma^2)), total variance. */
export interface RefSvi {
  readonly a: number;
  readonly b: number;
  readonly rho: number;
  readonly m: number;
  readonly sigma: number;
}

/** Total variance of raw SVI at k. */
export function refSviW(p: RefSvi, k: number): number {
  const x = k - p.m;
  return p.a + p.b * (p.rho * x + Math.sqrt(x * x + p.sigma * p.sigma));
}

/** Gatheral-Jacquier (2014) eq. (2.1) g(k) of raw SVI, analytic derivatives. */
export function refSviG(p: RefSvi, k: number): number {
  const x = k - p.m;
  const r = Math.sqrt(x * x + p.sigma * p.sigma);
  const w = refSviW(p, k);
  const w1 = p.b * (p.rho + x / r);
  const w2 = (p.b * p.sigma * p.sigma) / (r * r * r);
  return (1 - (k * w1) / (2 * w)) ** 2 - ((w1 * w1) / 4) * (1 / w + 0.25) + w2 / 2;
}

/** Minimum of g over [kLo, kHi] on a 2001-point grid (positive: no butterfly arbitrage there). */
export function refSviMinG(p: RefSvi, kLo: number, kHi: number): number {
  let mn = Infinity;
  for (let i = 0; i <= 2000; i++) mn = Math.min(mn, refSviG(p, kLo + ((kHi - kLo) * i) / 2000));
  return mn;
}

/** RMSE in vol points of a smile iv(k) over the quotes. */
export function rmseVolPts(iv: (k: number) => number, quotes: readonly RefQuote[]): number {
  let ss = 0;
  for (const q of quotes) ss += (100 * (iv(q.k) - q.iv)) ** 2;
  return Math.sqrt(ss / quotes.length);
}

// ---------------------------------------------------------------------------------------------------------
// Nelder-Mead

function nelderMeadOnce(f: (x: number[]) => number, x0: readonly number[], step: readonly number[], maxIter: number): { x: number[]; f: number } {
  const n = x0.length;
  let simplex: Array<{ x: number[]; f: number }> = [{ x: [...x0], f: f([...x0]) }];
  for (let i = 0; i < n; i++) {
    const x = [...x0];
    x[i]! += step[i]!;
    simplex.push({ x, f: f(x) });
  }
  for (let it = 0; it < maxIter; it++) {
    simplex.sort((u, v) => u.f - v.f);
    const best = simplex[0]!;
    const worst = simplex[n]!;
    if (Math.abs(worst.f - best.f) <= 1e-13 * (1 + Math.abs(best.f))) break;
    const c = new Array<number>(n).fill(0);
    for (let j = 0; j < n; j++) for (let i = 0; i < n; i++) c[i]! += simplex[j]!.x[i]! / n;
    const at = (t: number): { x: number[]; f: number } => {
      const x = c.map((ci, i) => ci + t * (worst.x[i]! - ci));
      return { x, f: f(x) };
    };
    const r = at(-1);
    if (r.f < best.f) {
      const e = at(-2);
      simplex[n] = e.f < r.f ? e : r;
    } else if (r.f < simplex[n - 1]!.f) {
      simplex[n] = r;
    } else {
      const k = r.f < worst.f ? at(-0.5) : at(0.5);
      if (k.f < Math.min(r.f, worst.f)) simplex[n] = k;
      else {
        simplex = simplex.map((v, j) => {
          if (j === 0) return v;
          const x = v.x.map((xi, i) => best.x[i]! + 0.5 * (xi - best.x[i]!));
          return { x, f: f(x) };
        });
      }
    }
  }
  simplex.sort((u, v) => u.f - v.f);
  return simplex[0]!;
}

/** Nelder-Mead restarted from the best vertex (step halved) until the value stops improving. */
export function nelderMead(f: (x: number[]) => number, x0: readonly number[], step: readonly number[], maxIter = 1500): { x: number[]; f: number } {
  let r = nelderMeadOnce(f, x0, step, maxIter);
  let s = [...step];
  for (let k = 0; k < 6; k++) {
    s = s.map((v) => v * 0.5);
    const r2 = nelderMeadOnce(f, r.x, s, maxIter);
    const done = r.f - r2.f <= 1e-12 * (1 + Math.abs(r.f));
    if (r2.f < r.f) r = r2;
    if (done) break;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------------
// Zeliade inner problem

/** Solve the dense linear system A x = b (Gaussian elimination, partial pivoting); null when singular. */
function solve(A: number[][], b: number[]): number[] | null {
  const n = b.length;
  const M = A.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r]![c]!) > Math.abs(M[p]![c]!)) p = r;
    if (Math.abs(M[p]![c]!) < 1e-14) return null;
    [M[c], M[p]] = [M[p]!, M[c]!];
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = M[r]![c]! / M[c]![c]!;
      for (let j = c; j <= n; j++) M[r]![j]! -= f * M[c]![j]!;
    }
  }
  return M.map((row, i) => row[n]! / row[i]!);
}

interface Inner {
  readonly a: number;
  readonly d: number;
  readonly c: number;
  readonly cost: number;
}

/**
 * Zeliade's inner problem for fixed (m, sigma): weighted least squares of w_i ~ a + d y_i + c z_i over the
 * polytope G x <= h, x = (a, d, c); every active set of at most 3 constraints is tried (KKT equality
 * system), the feasible minimizer with the lowest cost wins.
 */
function zeliadeInner(k: Float64Array, w: Float64Array, wt: Float64Array, m: number, sigma: number, wMax: number): Inner | null {
  // Normal equations H x = g.
  const H = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  const g = [0, 0, 0];
  let c0 = 0;
  for (let i = 0; i < k.length; i++) {
    const y = (k[i]! - m) / sigma;
    const f = [1, y, Math.sqrt(y * y + 1)];
    const q = wt[i]! * wt[i]!;
    for (let r = 0; r < 3; r++) {
      g[r]! += q * f[r]! * w[i]!;
      for (let s = 0; s < 3; s++) H[r]![s]! += q * f[r]! * f[s]!;
    }
    c0 += q * w[i]! * w[i]!;
  }
  const G = [
    [0, 0, -1], // c >= 0
    [0, 1, -1], // d <= c
    [0, -1, -1], // -d <= c
    [0, 1, 1], // c + d <= 2 sigma (Lee)
    [0, -1, 1], // c - d <= 2 sigma
    [1, 0, 0], // a <= max w (Zeliade)
  ];
  const h = [0, 0, 0, 2 * sigma, 2 * sigma, wMax];
  const cost = (x: number[]): number => {
    let v = c0;
    for (let r = 0; r < 3; r++) {
      v -= 2 * g[r]! * x[r]!;
      for (let s = 0; s < 3; s++) v += x[r]! * H[r]![s]! * x[s]!;
    }
    return v;
  };
  let best: Inner | null = null;
  const sets: number[][] = [[]];
  for (let i = 0; i < 6; i++) {
    sets.push([i]);
    for (let j = i + 1; j < 6; j++) {
      sets.push([i, j]);
      for (let l = j + 1; l < 6; l++) sets.push([i, j, l]);
    }
  }
  for (const act of sets) {
    const n = 3 + act.length;
    const A: number[][] = [];
    const b: number[] = [];
    for (let r = 0; r < 3; r++) {
      A.push([...H[r]!, ...act.map((j) => G[j]![r]!)]);
      b.push(g[r]!);
    }
    for (const j of act) {
      A.push([...G[j]!, ...new Array<number>(act.length).fill(0)]);
      b.push(h[j]!);
    }
    const sol = solve(A, b);
    if (!sol || sol.length !== n) continue;
    const x = sol.slice(0, 3);
    if (G.some((row, j) => row[0]! * x[0]! + row[1]! * x[1]! + row[2]! * x[2]! > h[j]! + 1e-12)) continue;
    const v = cost(x);
    if (!best || v < best.cost) best = { a: x[0]!, d: x[1]!, c: x[2]!, cost: v };
  }
  return best;
}

function toRaw(inner: Inner, m: number, sigma: number): RefSvi {
  const b = inner.c / sigma;
  const rho = inner.c > 0 ? Math.max(-0.999999, Math.min(0.999999, inner.d / inner.c)) : 0;
  return { a: inner.a, b, rho, m, sigma };
}

/** The reference raw-SVI fit of one expiry and its RMSE (vol points) against the quotes. */
export interface RefSviFit {
  readonly params: RefSvi;
  /** RMSE against the marks (unweighted), vol points. */
  readonly rmseVolPts: number;
  /** The minimized objective sum ((iv_fit - iv) / h)^2. */
  readonly objective: number;
}

/**
 * Best unconstrained raw-SVI least-squares fit to the quotes of one expiry (module docstring).
 * @param quotes OTM quotes (>= 5, distinct k)
 * @param T years to expiry (> 0)
 */
export function referenceSvi(quotes: readonly RefQuote[], T: number): RefSviFit {
  const k = Float64Array.from(quotes, (q) => q.k);
  const w = Float64Array.from(quotes, (q) => q.iv * q.iv * T);
  const wt = Float64Array.from(quotes, (q) => 1 / (2 * q.iv * T * (q.h ?? 1)));
  const wMax = Math.max(...w);
  const kMin = Math.min(...k);
  const kMax = Math.max(...k);
  const span = Math.max(kMax - kMin, 0.05);
  const outer = (m: number, sigma: number): number => {
    const r = zeliadeInner(k, w, wt, m, sigma, wMax);
    return r ? r.cost : Infinity;
  };
  const grid: Array<{ m: number; s: number; f: number }> = [];
  for (let i = 0; i < 36; i++) {
    const m = kMin - 0.5 * span + (2 * span * i) / 35;
    for (let j = 0; j < 30; j++) {
      const s = Math.exp(Math.log(1e-3 * span) + ((Math.log(2 * span) - Math.log(1e-3 * span)) * j) / 29);
      grid.push({ m, s, f: outer(m, s) });
    }
  }
  grid.sort((u, v) => u.f - v.f);
  const exact = (p: RefSvi): number => {
    if (!(p.b >= 0) || !(Math.abs(p.rho) < 1) || !(p.sigma > 0)) return Infinity;
    if (p.b * (1 + Math.abs(p.rho)) > 2 + 1e-12) return Infinity;
    if (p.a + p.b * p.sigma * Math.sqrt(1 - p.rho * p.rho) < 0) return Infinity;
    let ss = 0;
    for (const q of quotes) {
      const wq = refSviW(p, q.k);
      if (!(wq > 0)) return Infinity;
      ss += ((Math.sqrt(wq / T) - q.iv) / (q.h ?? 1)) ** 2;
    }
    return ss;
  };
  // Parametrization of the polish: a, ln b, atanh(rho), m, ln sigma; the Lee bound enters as b <= 2/(1+|rho|)
  // via b = 2/(1+|rho|) * logistic(u).
  const enc = (p: RefSvi): number[] => {
    const rho = Math.max(-0.999, Math.min(0.999, p.rho));
    const frac = Math.max(1e-9, Math.min(1 - 1e-9, (p.b * (1 + Math.abs(rho))) / 2));
    return [p.a, Math.log(frac / (1 - frac)), Math.atanh(rho), p.m, Math.log(p.sigma)];
  };
  const dec = (x: number[]): RefSvi => {
    const rho = Math.tanh(x[2]!);
    return { a: x[0]!, b: (2 / (1 + Math.abs(rho))) / (1 + Math.exp(-x[1]!)), rho, m: x[3]!, sigma: Math.exp(x[4]!) };
  };
  let best: RefSvi | null = null;
  let bestF = Infinity;
  const seen: Array<{ m: number; s: number }> = [];
  for (const start of grid) {
    if (seen.length >= 6) break;
    if (!Number.isFinite(start.f)) break;
    if (seen.some((v) => Math.abs(v.m - start.m) < 0.1 * span && Math.abs(Math.log(v.s / start.s)) < 0.5)) continue;
    seen.push(start);
    const r = nelderMead((x) => outer(x[0]!, Math.exp(x[1]!)), [start.m, Math.log(start.s)], [0.05 * span, 0.3], 400);
    const m = r.x[0]!;
    const s = Math.exp(r.x[1]!);
    const inner = zeliadeInner(k, w, wt, m, s, wMax);
    if (!inner) continue;
    let p0 = toRaw(inner, m, s);
    // Pull a valid starting point inside the polish domain (min w >= 0).
    const minW = p0.a + p0.b * p0.sigma * Math.sqrt(1 - p0.rho * p0.rho);
    if (minW < 0) p0 = { ...p0, a: p0.a - minW + 1e-8 };
    if (p0.b <= 0) p0 = { ...p0, b: 1e-6 };
    const x0 = enc(p0);
    const pol = nelderMead((x) => exact(dec(x)), x0, [0.1 * Math.max(Math.abs(p0.a), 1e-3), 0.5, 0.2, 0.05 * span, 0.3], 3000);
    if (pol.f < bestF) {
      bestF = pol.f;
      best = dec(pol.x);
    }
  }
  if (!best) throw new Error('referenceSvi: no feasible start');
  const p = best;
  return { params: p, rmseVolPts: scoreOf((k) => Math.sqrt(refSviW(p, k) / T), quotes), objective: bestF };
}

// ---------------------------------------------------------------------------------------------------------
// SABR (Hagan 2002)

/** SABR parameters (Hagan 2002): alpha, beta, rho, nu. */
export interface RefSabr {
  readonly alpha: number;
  readonly beta: number;
  readonly rho: number;
  readonly nu: number;
}

/** Hagan et al. (2002) eq. (2.17a) Black implied vol at strike K, forward F, T years. */
export function hagan2002(p: RefSabr, F: number, K: number, T: number): number {
  const { alpha, beta, rho, nu } = p;
  const omb = 1 - beta;
  const lfk = Math.log(F / K);
  const fk = Math.pow(F * K, omb / 2);
  const denom = fk * (1 + (omb * omb * lfk * lfk) / 24 + (omb ** 4 * lfk ** 4) / 1920);
  const z = (nu / alpha) * fk * lfk;
  let zx: number;
  if (Math.abs(z) < 1e-7) zx = 1 - 0.5 * rho * z;
  else {
    const x = Math.log((Math.sqrt(1 - 2 * rho * z + z * z) + z - rho) / (1 - rho));
    zx = z / x;
  }
  const corr = 1 + ((omb * omb * alpha * alpha) / (24 * fk * fk) + (rho * beta * nu * alpha) / (4 * fk) + ((2 - 3 * rho * rho) * nu * nu) / 24) * T;
  return (alpha / denom) * zx * corr;
}

/** The reference SABR fit of one expiry and its RMSE (vol points). */
export interface RefSabrFit {
  readonly params: RefSabr;
  /** RMSE against the marks (unweighted), vol points. */
  readonly rmseVolPts: number;
  /** The minimized objective sum ((iv_fit - iv) / h)^2. */
  readonly objective: number;
}

/**
 * Best (weighted: RefQuote.h) least-squares SABR fit (Hagan 2002, beta fixed) to the quotes of one expiry.
 * @param quotes OTM quotes (k = ln(K/F), iv)
 * @param F forward; @param T years; @param beta CEV exponent in [0, 1]
 */
export function referenceSabr(quotes: readonly RefQuote[], F: number, T: number, beta: number): RefSabrFit {
  const atm = [...quotes].sort((u, v) => Math.abs(u.k) - Math.abs(v.k))[0]!.iv;
  const obj = (p: RefSabr): number => {
    let ss = 0;
    for (const q of quotes) {
      const v = hagan2002(p, F, F * Math.exp(q.k), T);
      if (!Number.isFinite(v)) return Infinity;
      ss += ((v - q.iv) / (q.h ?? 1)) ** 2;
    }
    return ss;
  };
  const dec = (x: number[]): RefSabr => ({ alpha: Math.exp(x[0]!), beta, rho: 0.9999 * Math.tanh(x[1]!), nu: Math.exp(x[2]!) });
  const starts: Array<{ x: number[]; f: number }> = [];
  for (const rho of [-0.9, -0.6, -0.3, 0, 0.3, 0.6, 0.9]) {
    for (const nuSqrtT of [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8]) {
      for (const level of [0.8, 1, 1.25]) {
        const alpha = level * atm * Math.pow(F, 1 - beta);
        const x = [Math.log(alpha), Math.atanh(rho / 0.9999), Math.log(nuSqrtT / Math.sqrt(T))];
        starts.push({ x, f: obj(dec(x)) });
      }
    }
  }
  starts.sort((u, v) => u.f - v.f);
  let best = { x: starts[0]!.x, f: starts[0]!.f };
  for (const s of starts.slice(0, 8)) {
    const r = nelderMead((x) => obj(dec(x)), s.x, [0.1, 0.3, 0.3], 2000);
    if (r.f < best.f) best = r;
  }
  const p = dec(best.x);
  return { params: p, rmseVolPts: scoreOf((k) => hagan2002(p, F, F * Math.exp(k), T), quotes), objective: best.f };
}
