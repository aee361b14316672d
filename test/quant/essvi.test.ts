/**
 * eSSVI (src/quant/models/essvi.ts) against INDEPENDENT references computed here: the closed forms of
 * Gatheral-Jacquier 2014 (the symmetric slice, the raw-SVI form of an SSVI slice through src/quant/svi.ts), central
 * finite differences, the density check of src/quant/smileArbitrage.ts and the g(k) of svi.ts, a synthetic eSSVI
 * chain, and on the recorded Deribit chains (data/replay) a plain multi-start Nelder-Mead written here over the same
 * spread-weighted objective. Also: the calendar condition on random pairs, no calendar arbitrage across the served
 * slices of real chains where the fit guarantees it, and the measurement behind essviModel.reuseMaxTChange.
 */
import { describe, expect, it } from 'vitest';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import { groupByExpiry, MIN_EXPIRY_SECONDS, YEAR_S, type EligibleGroup } from '../../src/quant/chain/expiryGroups.js';
import { SPARSE_MAX_QUOTES, SHAPE_SOURCE_MIN_T } from '../../src/quant/chain/sparse.js';
import { sviModel } from '../../src/quant/models/svi.js';
import { sabrModel } from '../../src/quant/models/sabr.js';
import {
  ESSVI_MIN_QUOTES_FULL,
  calibrateEssvi,
  essviCalendarFree,
  essviModel,
  essviParamViolations,
  essviTotalVariance,
  fitEssviSlice,
  type EssviParams,
} from '../../src/quant/models/essvi.js';
import { MODEL_REGISTRY } from '../../src/quant/models/index.js';
import { checkSmileDensity } from '../../src/quant/smileArbitrage.js';
import { butterflyG, sviTotalVariance } from '../../src/quant/svi.js';
import { replayChainView } from '../calibration/chainQuality.js';

const CHAINS = ['maksm05', 'pitspa', 'schepal'] as const;

/** Deterministic uniform [0, 1) generator (LCG), for reproducible random cases. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** The slice formula written again here in the (theta, rho, psi) form of Hendriks-Martini 2019 sec. 2. */
function wPsi(k: number, theta: number, rho: number, psi: number): number {
  return 0.5 * (theta + rho * psi * k + Math.sqrt((psi * k + theta * rho) ** 2 + theta * theta * (1 - rho * rho)));
}

/** The eligible expiries of a recorded chain, as the pipeline groups them. */
function groupsOf(id: (typeof CHAINS)[number]): EligibleGroup[] {
  const v = replayChainView(id);
  return groupByExpiry(v.options, v.observationTimestamp).filter((g) => g.T * YEAR_S >= MIN_EXPIRY_SECONDS && g.quotes.length > 0) as EligibleGroup[];
}

/** Issue 26's objective weights written again here: 1/h^2, h = max(half-spread, 0.25 vp), no two-sided market: widest h, >= 2 vp. */
function weightsHere(g: EligibleGroup): number[] {
  const h = g.quotes.map((q) => (q.bidIv !== null && q.askIv !== null && q.bidIv > 0 && q.askIv > q.bidIv ? Math.max((q.askIv - q.bidIv) / 2, 0.0025) : Number.NaN));
  const widest = Math.max(0.02, ...h.filter((x) => !Number.isNaN(x)));
  return h.map((x) => 1 / (Number.isNaN(x) ? widest : x) ** 2);
}

/** Weighted RMS of the IV residuals, vol points: 100 sqrt(sum W r^2 / sum W). */
function weightedRmse(g: EligibleGroup, W: readonly number[], w: (k: number) => number): number {
  let s = 0;
  let sw = 0;
  g.quotes.forEach((q, i) => {
    const r = Math.sqrt(w(q.k) / g.T) - q.markIv;
    s += W[i]! * r * r;
    sw += W[i]!;
  });
  return 100 * Math.sqrt(s / sw);
}

/** A plain Nelder-Mead (Nelder-Mead 1965, standard coefficients), written here independently of src/quant/lm.ts. */
function nelderMeadHere(f: (x: number[]) => number, x0: number[], step: number, iters: number): { x: number[]; f: number } {
  const n = x0.length;
  let pts = [x0, ...x0.map((_, i) => x0.map((v, j) => (i === j ? v + step : v)))].map((x) => ({ x, f: f(x) }));
  for (let it = 0; it < iters; it++) {
    pts.sort((a, b) => a.f - b.f);
    const c = new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) c[j]! += pts[i]!.x[j]! / n;
    const worst = pts[n]!;
    const along = (t: number) => c.map((v, j) => v + t * (worst.x[j]! - v));
    const r = { x: along(-1), f: 0 };
    r.f = f(r.x);
    if (r.f < pts[0]!.f) {
      const e = { x: along(-2), f: 0 };
      e.f = f(e.x);
      pts[n] = e.f < r.f ? e : r;
    } else if (r.f < pts[n - 1]!.f) pts[n] = r;
    else {
      const k = { x: along(r.f < worst.f ? -0.5 : 0.5), f: 0 };
      k.f = f(k.x);
      if (k.f < Math.min(r.f, worst.f)) pts[n] = k;
      else pts = pts.map((p, i) => (i === 0 ? p : { x: p.x.map((v, j) => pts[0]!.x[j]! + 0.5 * (v - pts[0]!.x[j]!)), f: 0 })).map((p, i) => (i === 0 ? p : { x: p.x, f: f(p.x) }));
    }
  }
  pts.sort((a, b) => a.f - b.f);
  return pts[0]!;
}

/**
 * Independent reference fit of one expiry: multi-start Nelder-Mead (restarted) over (ln theta, atanh(rho/0.999), ln phi)
 * of the same objective sum W (sigma - m)^2 on the Gatheral-Jacquier Thm 4.2 domain (+inf outside).
 */
function referenceFit(g: EligibleGroup, W: readonly number[]): { p: EssviParams; rmse: number } {
  const near = g.quotes.reduce((b, q) => (Math.abs(q.k) < Math.abs(b.k) ? q : b));
  const theta0 = near.markIv ** 2 * g.T;
  const toP = (x: number[]): EssviParams => ({ theta: Math.exp(x[0]!), rho: 0.999 * Math.tanh(x[1]!), phi: Math.exp(x[2]!) });
  const obj = (x: number[]): number => {
    const p = toP(x);
    const r = 1 + Math.abs(p.rho);
    if (!(p.theta * p.phi * r < 4 && p.theta * p.phi * p.phi * r <= 4)) return Number.POSITIVE_INFINITY;
    let s = 0;
    g.quotes.forEach((q, i) => {
      const v = Math.sqrt(wPsi(q.k, p.theta, p.rho, p.theta * p.phi) / g.T) - q.markIv;
      s += W[i]! * v * v;
    });
    return Number.isFinite(s) ? s : Number.POSITIVE_INFINITY;
  };
  let best = { x: [Math.log(theta0), 0, Math.log(0.1 / Math.sqrt(theta0))], f: Number.POSITIVE_INFINITY };
  for (const rho of [-0.6, -0.2, 0.2, 0.6]) {
    for (const e of [0.05, 0.2, 0.8]) {
      let r = nelderMeadHere(obj, [Math.log(theta0), Math.atanh(rho / 0.999), Math.log(e / Math.sqrt(theta0))], 0.3, 400);
      for (let k = 0; k < 3; k++) r = nelderMeadHere(obj, r.x, 0.05, 400);
      if (r.f < best.f) best = r;
    }
  }
  const p = toP(best.x);
  return { p, rmse: weightedRmse(g, W, (k) => essviTotalVariance(p, k)) };
}

describe('eSSVI closed forms (Gatheral-Jacquier 2014)', () => {
  it('rho = 0 is the symmetric slice theta/2 (1 + sqrt(phi^2 k^2 + 1))', () => {
    for (const theta of [1e-4, 0.02, 0.5]) {
      for (const phi of [0.3, 2, 40]) {
        for (let k = -3; k <= 3; k += 0.05) {
          const sym = 0.5 * theta * (1 + Math.sqrt(phi * phi * k * k + 1));
          expect(Math.abs(essviTotalVariance({ theta, rho: 0, phi }, k) - sym)).toBeLessThanOrEqual(1e-14 * sym);
        }
      }
    }
  });

  it('an SSVI slice is the raw SVI slice a = theta/2 (1 - rho^2), b = theta phi/2, m = -rho/phi, sigma = sqrt(1 - rho^2)/phi (src/quant/svi.ts) to 1e-12', () => {
    const rnd = rng(7);
    let worst = 0;
    let worstPsi = 0;
    for (let c = 0; c < 200; c++) {
      const p: EssviParams = { theta: 1e-4 + 0.5 * rnd(), rho: -0.98 + 1.96 * rnd(), phi: 0.2 + 50 * rnd() };
      const raw = { a: (p.theta / 2) * (1 - p.rho * p.rho), b: (p.theta * p.phi) / 2, rho: p.rho, m: -p.rho / p.phi, sigma: Math.sqrt(1 - p.rho * p.rho) / p.phi };
      for (let k = -2; k <= 2; k += 0.01) {
        const w = essviTotalVariance(p, k);
        worst = Math.max(worst, Math.abs(w - sviTotalVariance(raw, k)) / Math.max(w, p.theta));
        // and the (theta, rho, psi) form of Hendriks-Martini 2019
        worstPsi = Math.max(worstPsi, Math.abs(w - wPsi(k, p.theta, p.rho, p.theta * p.phi)) / Math.max(w, p.theta));
      }
      expect(essviTotalVariance(p, 0)).toBeCloseTo(p.theta, 15);
    }
    expect(worst).toBeLessThanOrEqual(1e-12);
    expect(worstPsi).toBeLessThanOrEqual(1e-12);
  });

  it('dw/dk is the central finite difference; the wings are linear with slopes psi (1 +- rho)/2', () => {
    const rnd = rng(11);
    const dk = MODEL_REGISTRY.ESSVI.totalVarianceDk!;
    for (let c = 0; c < 100; c++) {
      const p: EssviParams = { theta: 1e-3 + 0.3 * rnd(), rho: -0.95 + 1.9 * rnd(), phi: 0.5 + 20 * rnd() };
      const d = dk(p, 1, 1);
      for (let k = -2; k <= 2; k += 0.037) {
        const h = 1e-6;
        const fd = (essviTotalVariance(p, k + h) - essviTotalVariance(p, k - h)) / (2 * h);
        expect(Math.abs(d(k) - fd)).toBeLessThanOrEqual(1e-7 * Math.max(1, Math.abs(fd)));
      }
      const psi = p.theta * p.phi;
      expect(d(1e6)).toBeCloseTo((psi * (1 + p.rho)) / 2, 6);
      expect(d(-1e6)).toBeCloseTo((-psi * (1 - p.rho)) / 2, 6);
    }
  });

  it('fromRecord validates (RangeError), toRecord round-trips, carryForward keeps the implied vol at every k', () => {
    const m = essviModel;
    const p = m.fromRecord({ theta: 0.02, rho: -0.3, phi: 3 }, 0.1, 100);
    expect(m.toRecord(p)).toEqual({ theta: 0.02, rho: -0.3, phi: 3 });
    expect(() => m.fromRecord({ theta: 0.02, rho: -0.3 }, 0.1, 100)).toThrow(RangeError);
    expect(() => m.fromRecord({ theta: 0.02, rho: Number.NaN, phi: 3 }, 0.1, 100)).toThrow(RangeError);
    expect(() => m.fromRecord({ theta: -0.02, rho: 0, phi: 3 }, 0.1, 100)).toThrow(RangeError);
    expect(() => m.fromRecord({ theta: 0.02, rho: 1, phi: 3 }, 0.1, 100)).toThrow(RangeError);
    // butterfly domain: theta phi^2 (1 + |rho|) = 0.02 * 400 * 1.3 > 4
    expect(() => m.fromRecord({ theta: 0.02, rho: -0.3, phi: 20 }, 0.1, 100)).toThrow(RangeError);
    const c = m.carryForward(p, 0.1, 0.09, 100, 101);
    for (let k = -2; k <= 2; k += 0.1) {
      expect(Math.sqrt(essviTotalVariance(c, k) / 0.09)).toBeCloseTo(Math.sqrt(essviTotalVariance(p, k) / 0.1), 14);
    }
  });
});

describe('eSSVI calendar condition (Hendriks-Martini 2019 sec. 3)', () => {
  it('sufficient: slices meeting essviCalendarFree never cross (random pairs, k in [-10, 10])', () => {
    const rnd = rng(3);
    let checked = 0;
    const crossings: string[] = [];
    for (let c = 0; c < 4000; c++) {
      const s: EssviParams = { theta: 1e-4 + 0.3 * rnd(), rho: -0.98 + 1.96 * rnd(), phi: 0.1 + 30 * rnd() };
      const rho2 = -0.98 + 1.96 * rnd();
      const pMin = Math.max((1 + s.rho) / (1 + rho2), (1 - s.rho) / (1 - rho2));
      const p = pMin * (1 + 2 * rnd() * rnd());
      const theta2 = s.theta * p * (1 + 3 * rnd() * rnd());
      const l: EssviParams = { theta: theta2, rho: rho2, phi: (p * s.theta * s.phi) / theta2 };
      expect(essviCalendarFree(s, l, 1e-12)).toBe(true);
      for (let k = -10; k <= 10; k += 0.05) {
        const w1 = essviTotalVariance(s, k);
        if (essviTotalVariance(l, k) < w1 * (1 - 1e-12)) crossings.push(`${JSON.stringify(s)} ${JSON.stringify(l)} at k = ${k}`);
      }
      checked++;
    }
    expect(checked).toBe(4000);
    expect(crossings).toEqual([]);
  });

  it('the supremum of G(x; rho1)/G(x; rho2) is the wing ratio (the step of the proof)', () => {
    const G = (x: number, rho: number) => 0.5 * (1 + rho * x + Math.sqrt(x * x + 2 * rho * x + 1));
    const rnd = rng(5);
    let worst = -Infinity;
    for (let c = 0; c < 2000; c++) {
      const r1 = -0.99 + 1.98 * rnd();
      const r2 = -0.99 + 1.98 * rnd();
      const sup = Math.max((1 + r1) / (1 + r2), (1 - r1) / (1 - r2));
      // x = +-10^e for e in [-6, 4], and 0
      for (let e = -6; e <= 4; e += 0.02) {
        for (const x of [-(10 ** e), 10 ** e, 0]) worst = Math.max(worst, G(x, r1) / G(x, r2) / sup - 1);
      }
    }
    expect(worst).toBeLessThanOrEqual(1e-12);
  });

  it('necessary: a longer slice with flatter wings or lower ATM variance crosses', () => {
    const s: EssviParams = { theta: 0.01, rho: -0.3, phi: 5 };
    const flatter: EssviParams = { theta: 0.02, rho: -0.3, phi: 2 }; // psi 0.04 < 0.05: wings below far out
    expect(essviCalendarFree(s, flatter)).toBe(false);
    expect(essviTotalVariance(flatter, -50)).toBeLessThan(essviTotalVariance(s, -50));
    const lower: EssviParams = { theta: 0.009, rho: -0.3, phi: 5 };
    expect(essviCalendarFree(s, lower)).toBe(false);
  });
});

describe('eSSVI fit', () => {
  it('recovers known parameters from a synthetic eSSVI chain to 1e-6 (cold, warm, under a non-binding calendar prior)', () => {
    const T = 0.1;
    const truth: EssviParams = { theta: 0.6 ** 2 * T, rho: -0.35, phi: 4 };
    const qs = Array.from({ length: 25 }, (_, i) => {
      const k = -0.6 + (1.2 * i) / 24;
      return { k, iv: Math.sqrt(essviTotalVariance(truth, k) / T) };
    });
    const prior: EssviParams = { theta: truth.theta * 0.5, rho: -0.3, phi: 6 };
    expect(essviCalendarFree(prior, truth)).toBe(true);
    for (const o of [{}, { previous: { theta: 0.03, rho: 0, phi: 2 } }, { prior }]) {
      const r = calibrateEssvi(qs, T, o);
      expect(r.mode).toBe('essvi-3p');
      expect(Math.abs(r.params.theta / truth.theta - 1)).toBeLessThan(1e-6);
      expect(Math.abs(r.params.rho - truth.rho)).toBeLessThan(1e-6);
      expect(Math.abs(r.params.phi / truth.phi - 1)).toBeLessThan(1e-6);
    }
  });

  it('a binding calendar prior is met exactly; the sparse mode borrows rho from the prior and stays above it', () => {
    const T = 0.1;
    const truth: EssviParams = { theta: 0.036, rho: -0.35, phi: 4 };
    const qs = Array.from({ length: 25 }, (_, i) => ({ k: -0.6 + (1.2 * i) / 24, iv: Math.sqrt(essviTotalVariance(truth, -0.6 + (1.2 * i) / 24) / T) }));
    const prior: EssviParams = { theta: 0.03, rho: 0.2, phi: 3 }; // steeper right wing than the truth: binds
    expect(essviCalendarFree(prior, truth)).toBe(false);
    const r = calibrateEssvi(qs, T, { prior });
    expect(r.bound).toBe('calendar');
    expect(essviCalendarFree(prior, r.params, 1e-9)).toBe(true);
    const sparse = calibrateEssvi(qs.filter((_, i) => i % 8 === 4), T, { prior });
    expect(sparse.mode).toBe('essvi-sparse');
    expect(sparse.quotesUsed).toBeLessThan(ESSVI_MIN_QUOTES_FULL);
    expect(sparse.params.rho).toBe(prior.rho);
    expect(essviCalendarFree(prior, sparse.params, 1e-9)).toBe(true);
    expect(essviModel.borrowsShape({ expirationTimestamp: 0, T, forward: 1, quotes: [] })).toBe(true);
  });

  it('uses the spread-weighted objective weights of issue 26 (the same as SVI and SABR)', () => {
    const g = groupsOf('maksm05')[4]!;
    const W = essviModel.objectiveWeights!(g.quotes);
    expect([...W]).toEqual([...sviModel.objectiveWeights!(g.quotes)]);
    expect([...W]).toEqual([...sabrModel.objectiveWeights!(g.quotes)]);
    const here = weightsHere(g);
    W.forEach((x, i) => expect(Math.abs(x - here[i]!)).toBeLessThanOrEqual(1e-9 * here[i]!));
  });

  it('on the real Deribit chains: within 0.05 vol pt of an independent Nelder-Mead reference fit of the same objective', () => {
    const rows: string[] = [];
    let worst = -Infinity;
    for (const id of CHAINS) {
      for (const g of groupsOf(id)) {
        if (g.quotes.length < ESSVI_MIN_QUOTES_FULL) continue;
        const W = weightsHere(g);
        const svc = calibrateEssvi(g.quotes.map((q) => ({ k: q.k, iv: q.markIv })), g.T, { weights: W });
        const mine = weightedRmse(g, W, (k) => essviTotalVariance(svc.params, k));
        const ref = referenceFit(g, W);
        worst = Math.max(worst, mine - ref.rmse);
        rows.push(`${id} T ${g.T.toFixed(4)} n ${String(g.quotes.length).padStart(3)}: service ${mine.toFixed(4)} reference ${ref.rmse.toFixed(4)} vp (weighted RMS), gap ${(mine - ref.rmse).toFixed(4)}`);
        expect(mine, `${id} T ${g.T}`).toBeLessThanOrEqual(ref.rmse + 0.05);
      }
    }
    console.log(`eSSVI vs independent Nelder-Mead reference (same objective), worst gap ${worst.toFixed(4)} vp\n${rows.join('\n')}`);
  }, 120_000);
});

describe('eSSVI served by the chain fit (real Deribit chains)', () => {
  it('every served slice is in the Thm 4.2 domain with g(k) >= 0 and passes the density check; the surface is calendar-free', () => {
    for (const id of CHAINS) {
      const m = fitChain(replayChainView(id)).models.find((x) => x.model === 'ESSVI')!;
      expect(m.slices.length).toBeGreaterThan(3);
      for (const s of m.slices) {
        const p = essviModel.fromRecord(s.params, s.T, s.forward);
        const r = 1 + Math.abs(p.rho);
        expect(p.theta * p.phi * r).toBeLessThan(4);
        expect(p.theta * p.phi * p.phi * r).toBeLessThanOrEqual(4 * (1 + 1e-12));
        expect(essviParamViolations(p)).toEqual([]);
        // g(k) of Gatheral-Jacquier eq. (2.1) with the analytic w' and a finite-difference w''
        const d = essviModel.totalVarianceDk!(p, s.T, s.forward);
        for (let k = -3; k <= 3; k += 0.01) {
          const h = 1e-4;
          const w2 = (essviTotalVariance(p, k + h) - 2 * essviTotalVariance(p, k) + essviTotalVariance(p, k - h)) / (h * h);
          expect(butterflyG(k, essviTotalVariance(p, k), d(k), w2)).toBeGreaterThan(-1e-6);
        }
        const chk = checkSmileDensity((K) => Math.sqrt(essviTotalVariance(p, Math.log(K / s.forward)) / s.T), s.forward, s.T, { nStd: 8 });
        expect(chk.arbitrageFree, `${id} T ${s.T}`).toBe(true);
        expect(s.fit.butterflyFree).toBe(true);
      }
      expect(m.arbitrage?.calendarFree).toBe(true);
    }
  });

  it('no calendar arbitrage between consecutive full slices of at least 2 days (w_T2(k) >= w_T1(k), raw slices, k in [-3, 3])', () => {
    let pairs = 0;
    for (const id of CHAINS) {
      const m = fitChain(replayChainView(id)).models.find((x) => x.model === 'ESSVI')!;
      // the slices the fit constrains each other: full fits (more than the sparse pass's quotes and the model's own
      // sparse minimum) of at least 2 days, fitted in this pass
      const full = m.slices.filter((s) => s.T >= SHAPE_SOURCE_MIN_T && s.quotes.length > SPARSE_MAX_QUOTES && s.quotes.length >= ESSVI_MIN_QUOTES_FULL && s.fit.status !== 'kept-previous');
      for (let i = 1; i < full.length; i++) {
        const a = essviModel.fromRecord(full[i - 1]!.params, full[i - 1]!.T, full[i - 1]!.forward);
        const b = essviModel.fromRecord(full[i]!.params, full[i]!.T, full[i]!.forward);
        expect(essviCalendarFree(a, b, 1e-9), `${id} ${full[i - 1]!.T} -> ${full[i]!.T}`).toBe(true);
        for (let k = -3; k <= 3; k += 0.01) expect(essviTotalVariance(b, k)).toBeGreaterThanOrEqual(essviTotalVariance(a, k) * (1 - 1e-9));
        pairs++;
      }
    }
    expect(pairs).toBeGreaterThan(10);
  });

  it('reuseMaxTChange: a slice carried by that share of T stays within 0.05 vol pt of a cold fit (quotes and |k| <= 1)', () => {
    const out: string[] = [];
    for (const share of [essviModel.reuseMaxTChange, 1e-2]) {
      let worst = 0;
      for (const id of CHAINS) {
        const groups = groupsOf(id).filter((g) => g.quotes.length > SPARSE_MAX_QUOTES);
        let prior: EssviParams | undefined;
        let priorT: number | undefined;
        for (const g of groups) {
          const ctx = { lastFull: prior, lastFullT: priorT };
          const a = fitEssviSlice(g, ctx);
          const Tn = g.T * (1 - share);
          const carried = essviModel.carryForward(a.params, g.T, Tn, g.forward, g.forward);
          const ctxN = { lastFull: prior && priorT ? essviModel.carryForward(prior, priorT, priorT - share * g.T, g.forward, g.forward) : undefined, lastFullT: priorT ? priorT - share * g.T : undefined };
          const cold = fitEssviSlice({ ...g, T: Tn }, ctxN).params;
          const ks = [...g.quotes.map((q) => q.k), ...Array.from({ length: 21 }, (_, j) => -1 + j / 10)];
          for (const k of ks) worst = Math.max(worst, 100 * Math.abs(Math.sqrt(essviTotalVariance(carried, k) / Tn) - Math.sqrt(essviTotalVariance(cold, k) / Tn)));
          if (a.full && g.T >= SHAPE_SOURCE_MIN_T) {
            prior = a.params;
            priorT = g.T;
          }
        }
      }
      out.push(`T moved by ${share}: worst |carried - cold| ${worst.toFixed(5)} vp`);
      if (share === essviModel.reuseMaxTChange) expect(worst).toBeLessThanOrEqual(0.05);
    }
    console.log(`eSSVI reuse measurement (real chains): ${out.join('; ')}`);
  }, 120_000);
});
