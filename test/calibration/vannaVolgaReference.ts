/**
 * Independent Vanna-Volga reference fit for the calibration-quality tests (issue 26: "a reference computed in the test,
 * an unconstrained multi-start fit of the same weighted objective, written independently of the service's fitter").
 * Nothing here imports src/quant: the normal distribution, the Castagna-Mercurio formula, the pillar strikes, the
 * Black call price of the convexity check are written again below; the objective's scales come from
 * referenceFits.ts `refHalfSpreads` (itself written from the words) and the minimizer is referenceFits.ts
 * `nelderMead` (Nelder and Mead 1965, written in the test helpers, not the service's lm.ts).
 *
 * Model (Castagna and Mercurio, "The vanna-volga method for implied volatilities", Risk, January 2007, pp. 106-111;
 * working paper "Consistent pricing of FX options", 2005/2006, eq. (14) for the second-order formula): pillar strikes
 * K1 < K2 < K3 (25-delta put, ATM, 25-delta call) with vols s1, s2, s3, the log-strike Lagrange weights
 *   y1(K) = ln(K2/K) ln(K3/K) / (ln(K2/K1) ln(K3/K1)),
 *   y2(K) = ln(K/K1) ln(K3/K) / (ln(K2/K1) ln(K3/K2)),
 *   y3(K) = ln(K/K1) ln(K/K2) / (ln(K3/K1) ln(K3/K2)),
 * and the second-order approximation of the VV implied vol
 *   sigma(K) = s2 + (-s2 + sqrt(s2^2 + d1(K) d2(K) (2 s2 D1(K) + D2(K)))) / (d1(K) d2(K)),
 *   D1(K) = y1 s1 + y2 s2 + y3 s3 - s2,
 *   D2(K) = y1 d1(K1) d2(K1) (s1 - s2)^2 + y3 d1(K3) d2(K3) (s3 - s2)^2,
 *   d1(x) = (ln(F/x) + s2^2 T/2) / (s2 sqrt T), d2(x) = d1(x) - s2 sqrt T  (r = 0: Black-76 on the forward F),
 * i.e. d1, d2 at the ATM vol s2. Checked against an independent public implementation: OpenSourceRisk ORE,
 * QuantExt/qle/termstructures/fxvannavolgasmilesection.cpp `VannaVolgaSmileSection::volatility` ("eq(14). Note sigma =
 * sigma_ATM here"), which has the same D1, D2 (no middle term since sigma = sigma_ATM) and the same square root, and
 * refuses a negative square-root argument. Here too: where the argument is negative the formula does not exist and
 * the reference returns NaN (an objective that meets one is +infinity; no first-order fallback: the reference is the
 * article's second-order smile, nothing else).
 *
 * Pillar strikes (identical in DEFINITION to the service's, which documents it in src/quant/vannaVolga.ts and
 * src/quant/strikeFromDelta.ts, decisions.md "Quant conventions"; NOT Castagna-Mercurio's FX convention of a
 * delta-neutral straddle ATM and spot/premium-adjusted deltas): ATM is the forward, K2 = F; the 25-delta call K3 is the
 * strike whose PLAIN forward Black-76 call delta N(d1) (r = 0, no premium adjustment) is 0.25, computed with the
 * smile's own vol there, which is the pillar's vol s3 since the smile passes through its pillars:
 *   K3 = F exp(-N^-1(0.25) s3 sqrt T + s3^2 T/2);
 * the 25-delta put K1: put delta -0.25, i.e. call delta N(d1) = 0.75 at s1: K1 = F exp(-N^-1(0.75) s1 sqrt T + s1^2 T/2)
 * (Reiswich and Wystup, "A guide to FX options quoting conventions", J. Derivatives 18(2), 2010: forward delta without
 * premium adjustment, its closed-form inversion). The pillars move with their vols. The service's own fit keeps that
 * definition where its read-off strike is the delta strike of its vol (fitPillarVols `moveP`, `moveC`) and fixes the
 * strike in its fallbacks (no delta root on the market smile; put strike mirrored): the reference has no fallback.
 *
 * Objective (issue 26): sum over the core quotes of ((sigma(k_i) - iv_i) / h_i)^2, h_i by `refHalfSpreads` over ALL the
 * expiry's quotes (a no-bid quote gets the expiry's widest h, at least 2 vp). The core quotes: those whose own mark's
 * plain forward call delta N(d1(k, iv)) lies in [0.10, 0.90], the range between the 10-delta strikes where the service
 * serves the VV formula itself (beyond them its own wing rule, which is not Castagna-Mercurio's). The service picks its
 * fitted quotes by the same rule (src/quant/vannaVolga.ts inTenDeltaBand, written separately; until 2026-11-27 it took
 * the 10-delta strikes of its read-off VV smile, which differed by a quote or two at the band edges: the two measured
 * exceptions of that time, vannaVolgaReference.test.ts); the service drops its Hampel outliers before fitting, the
 * reference keeps every quote.
 * Minimizer: unconstrained in (ln s1, ln s2, ln s3) (vols > 0 is the only restriction, and K1 < F, which the put delta
 * needs), 49 starts: the marks' own read-off pillars (linear interpolation of the core marks at k = 0 and at the
 * flat-ATM-vol 25-delta strikes) and a 3 x 4 x 4 grid (ATM level 0.9, 1, 1.1 times the marks' ATM vol; put and call
 * pillar vols -10 %, 0, +10 %, +30 % from that level); the 6 with the lowest objective polished by Nelder-Mead
 * (referenceFits.ts, restarted from its best vertex until it stops improving); the lowest objective wins, and how many
 * of the 6 reach it is reported (`agreeing`).
 */
import { nelderMead, refHalfSpreads } from './referenceFits.js';

// ---------------------------------------------------------------------------------------------------------
// Normal distribution

/**
 * Standard normal CDF: G. Marsaglia, "Evaluating the normal distribution", J. Statistical Software 11(4), 2004:
 * Phi(x) = 1/2 + phi(x) (x + x^3/3 + x^5/(3*5) + ...), summed until the terms vanish (double precision for |x| <= 8;
 * 0 or 1 beyond).
 */
export function vvNormCdf(x: number): number {
  if (x < -8) return 0;
  if (x > 8) return 1;
  let s = x;
  let t = x;
  const q = x * x;
  for (let i = 3; i < 500; i += 2) {
    t = (t * q) / i;
    const s2 = s + t;
    if (s2 === s) break;
    s = s2;
  }
  return 0.5 + s * Math.exp(-0.5 * q - 0.91893853320467274178);
}

/**
 * Inverse standard normal CDF: P. J. Acklam's rational approximation (2003, relative error 1.15e-9), then one Halley
 * step on {@link vvNormCdf} (full precision). p in (0, 1).
 */
export function vvNormInv(p: number): number {
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const pl = 0.02425;
  let x: number;
  if (p < pl) {
    const q = Math.sqrt(-2 * Math.log(p));
    x = (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  } else if (p <= 1 - pl) {
    const q = p - 0.5;
    const r = q * q;
    x = ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) / (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x = -(((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  }
  const e = vvNormCdf(x) - p;
  const u = e * Math.sqrt(2 * Math.PI) * Math.exp(0.5 * x * x);
  return x - u / (1 + 0.5 * x * u);
}

// ---------------------------------------------------------------------------------------------------------
// The Castagna-Mercurio smile

/** Three pillar vols (fractions): 25-delta put, ATM, 25-delta call. */
export interface RefVvPillars {
  readonly s1: number;
  readonly s2: number;
  readonly s3: number;
}

/** Pillar strikes of the module docstring's convention: K1 (call delta 0.75 at s1), K2 = F, K3 (call delta 0.25 at s3). */
export function refVvStrikes(p: RefVvPillars, F: number, T: number): { K1: number; K2: number; K3: number } {
  const rt = Math.sqrt(T);
  return {
    K1: F * Math.exp(-vvNormInv(0.75) * p.s1 * rt + 0.5 * p.s1 * p.s1 * T),
    K2: F,
    K3: F * Math.exp(-vvNormInv(0.25) * p.s3 * rt + 0.5 * p.s3 * p.s3 * T),
  };
}

/**
 * The second-order Castagna-Mercurio implied vol at log-moneyness k = ln(K/F) (module docstring), or NaN where the
 * square-root argument is negative. Where d1(K) d2(K) x u is tiny (|x| < 1e-6 s2^2, x = d1 d2 (2 s2 D1 + D2)) the
 * quotient is its Taylor expansion s2 + u/(2 s2) - d1 d2 u^2/(8 s2^3) (the same limit; the quotient itself would
 * cancel): at K = F exp(+-s2^2 T/2) d1 d2 = 0 and the formula's 0/0 is that limit.
 */
export function refVvVol(p: RefVvPillars, F: number, T: number, k: number): number {
  const { K1, K2, K3 } = refVvStrikes(p, F, T);
  const K = F * Math.exp(k);
  const y1 = (Math.log(K2 / K) * Math.log(K3 / K)) / (Math.log(K2 / K1) * Math.log(K3 / K1));
  const y2 = (Math.log(K / K1) * Math.log(K3 / K)) / (Math.log(K2 / K1) * Math.log(K3 / K2));
  const y3 = (Math.log(K / K1) * Math.log(K / K2)) / (Math.log(K3 / K1) * Math.log(K3 / K2));
  const sd = p.s2 * Math.sqrt(T);
  const d1 = (x: number): number => (Math.log(F / x) + 0.5 * p.s2 * p.s2 * T) / sd;
  const d1d2 = (x: number): number => d1(x) * (d1(x) - sd);
  const D1 = y1 * p.s1 + y2 * p.s2 + y3 * p.s3 - p.s2;
  const D2 = y1 * d1d2(K1) * (p.s1 - p.s2) ** 2 + y3 * d1d2(K3) * (p.s3 - p.s2) ** 2;
  const u = 2 * p.s2 * D1 + D2;
  const dd = d1d2(K);
  const x = dd * u;
  const arg = p.s2 * p.s2 + x;
  if (!(arg >= 0)) return Number.NaN;
  if (Math.abs(x) < 1e-6 * p.s2 * p.s2) return p.s2 + u / (2 * p.s2) - (dd * u * u) / (8 * p.s2 ** 3);
  return p.s2 + (-p.s2 + Math.sqrt(arg)) / dd;
}

// ---------------------------------------------------------------------------------------------------------
// Butterfly check (call-price convexity), written here

/** Undiscounted Black-76 call per unit forward (F = 1) at strike x, total vol v sqrt T (Black 1976). */
function callPerForward(x: number, T: number, v: number): number {
  const s = v * Math.sqrt(T);
  const d1 = (-Math.log(x) + 0.5 * s * s) / s;
  return vvNormCdf(d1) - x * vvNormCdf(d1 - s);
}

/**
 * No butterfly arbitrage of a smile iv(k) on [kLo, kHi] (Breeden and Litzenberger 1978; Carr and Madan 2005): call
 * prices per unit forward at 401 strikes uniform in k, every vol finite > 0, slope in [-1, 0] and convex (second
 * divided difference >= -1e-7, the tolerance of the service's density check). Returns the smallest second divided
 * difference too (NaN where the smile does not exist).
 */
export function refButterflyCheck(iv: (k: number) => number, T: number, kLo: number, kHi: number): { free: boolean; minSecond: number } {
  const n = 401;
  const x: number[] = [];
  const c: number[] = [];
  for (let i = 0; i < n; i++) {
    const k = kLo + ((kHi - kLo) * i) / (n - 1);
    const v = iv(k);
    if (!(v > 0) || !Number.isFinite(v)) return { free: false, minSecond: Number.NaN };
    x.push(Math.exp(k));
    c.push(callPerForward(Math.exp(k), T, v));
  }
  let free = true;
  let minSecond = Infinity;
  for (let i = 1; i + 1 < n; i++) {
    const s1 = (c[i]! - c[i - 1]!) / (x[i]! - x[i - 1]!);
    const s2 = (c[i + 1]! - c[i]!) / (x[i + 1]! - x[i]!);
    const second = (s2 - s1) / (0.5 * (x[i + 1]! - x[i - 1]!));
    minSecond = Math.min(minSecond, second);
    if (s1 > 1e-9 || s1 < -1 - 1e-9 || second < -1e-7) free = false;
  }
  return { free, minSecond };
}

// ---------------------------------------------------------------------------------------------------------
// The reference fit

/** One quote of an expiry for the VV reference: log-moneyness, mark IV, bid and ask IVs (fractions; null: absent). */
export interface RefVvQuote {
  readonly k: number;
  readonly iv: number;
  readonly bidIv: number | null;
  readonly askIv: number | null;
}

/** The core band of the module docstring: plain forward call delta of the quote's own mark in [0.10, 0.90]. */
export function refVvInCore(q: { readonly k: number; readonly iv: number }, T: number): boolean {
  const s = q.iv * Math.sqrt(T);
  const delta = vvNormCdf(-q.k / s + 0.5 * s);
  return delta >= 0.1 && delta <= 0.9;
}

/** The reference VV fit of one expiry. */
export interface RefVvFit {
  readonly pillars: RefVvPillars;
  /** Indices (into the input) of the core quotes the objective runs over. */
  readonly core: readonly number[];
  /** Unweighted RMSE against the marks over the core quotes, vol points. */
  readonly rmseVolPts: number;
  /** The minimized objective sum ((sigma - iv) / h)^2 over the core quotes. */
  readonly objective: number;
  /** The smile (NaN where the second-order formula does not exist). */
  readonly iv: (k: number) => number;
  /** Starts tried, and how many of the polished ones reached the best objective within 1e-9 relative. */
  readonly starts: number;
  readonly agreeing: number;
}

/** Linear interpolation in k of sorted points, flat beyond the ends (the marks' own read-off). */
function interp(ks: readonly number[], vs: readonly number[], k: number): number {
  if (k <= ks[0]!) return vs[0]!;
  if (k >= ks[ks.length - 1]!) return vs[vs.length - 1]!;
  let i = 1;
  while (ks[i]! < k) i++;
  const t = (k - ks[i - 1]!) / (ks[i]! - ks[i - 1]!);
  return vs[i - 1]! + t * (vs[i]! - vs[i - 1]!);
}

/**
 * Best unconstrained spread-weighted fit of the three pillar vols of the Castagna-Mercurio second-order smile to the
 * core quotes of one expiry (module docstring). Null when fewer than 5 core quotes (3 parameters).
 * @param quotes all the expiry's OTM quotes (the h of a no-bid quote is the widest of the expiry)
 * @param F the expiry's forward; @param T years
 */
export function referenceVannaVolga(quotes: readonly RefVvQuote[], F: number, T: number): RefVvFit | null {
  const hs = refHalfSpreads(quotes);
  const core = quotes.map((q, i) => (refVvInCore(q, T) ? i : -1)).filter((i) => i >= 0);
  if (core.length < 5) return null;
  const cq = core.map((i) => ({ k: quotes[i]!.k, iv: quotes[i]!.iv, h: hs[i]! }));
  const obj = (p: RefVvPillars): number => {
    if (!(p.s1 > 0 && p.s2 > 0 && p.s3 > 0) || !(refVvStrikes(p, F, T).K1 < F)) return Infinity;
    let ss = 0;
    for (const q of cq) {
      const v = refVvVol(p, F, T, q.k);
      if (!Number.isFinite(v)) return Infinity;
      ss += ((v - q.iv) / q.h) ** 2;
    }
    return ss;
  };
  const dec = (x: readonly number[]): RefVvPillars => ({ s1: Math.exp(x[0]!), s2: Math.exp(x[1]!), s3: Math.exp(x[2]!) });
  // the marks' own pillars: linear interpolation of the core marks at k = 0 and at the flat-vol 25-delta strikes
  const sorted = [...cq].sort((a, b) => a.k - b.k);
  const ks = sorted.map((q) => q.k);
  const vs = sorted.map((q) => q.iv);
  const a0 = interp(ks, vs, 0);
  const sd = a0 * Math.sqrt(T);
  const p0 = interp(ks, vs, -vvNormInv(0.75) * sd + 0.5 * sd * sd);
  const c0 = interp(ks, vs, -vvNormInv(0.25) * sd + 0.5 * sd * sd);
  const starts: Array<{ x: number[]; f: number }> = [];
  const push = (p: RefVvPillars): void => {
    const x = [Math.log(p.s1), Math.log(p.s2), Math.log(p.s3)];
    starts.push({ x, f: obj(p) });
  };
  push({ s1: p0, s2: a0, s3: c0 });
  for (const level of [0.9, 1, 1.1]) {
    for (const put of [-0.1, 0, 0.1, 0.3]) {
      for (const call of [-0.1, 0, 0.1, 0.3]) push({ s1: level * a0 * (1 + put), s2: level * a0, s3: level * a0 * (1 + call) });
    }
  }
  starts.sort((u, v) => u.f - v.f);
  const polished: Array<{ x: number[]; f: number }> = [];
  for (const s of starts.slice(0, 6)) {
    if (!Number.isFinite(s.f)) break;
    polished.push(nelderMead((x) => obj(dec(x)), s.x, [0.05, 0.05, 0.05], 1500));
  }
  if (polished.length === 0) return null;
  polished.sort((u, v) => u.f - v.f);
  const best = polished[0]!;
  const pillars = dec(best.x);
  const iv = (k: number): number => refVvVol(pillars, F, T, k);
  const rmse = 100 * Math.sqrt(cq.reduce((a, q) => a + (iv(q.k) - q.iv) ** 2, 0) / cq.length);
  return {
    pillars,
    core,
    rmseVolPts: rmse,
    objective: best.f,
    iv,
    starts: starts.length,
    agreeing: polished.filter((r) => r.f <= best.f * (1 + 1e-9) + 1e-15).length,
  };
}
