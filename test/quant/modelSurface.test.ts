/**
 * Model slices and the calendar rule (src/quant/chain/modelSurface.ts): each model's w(k) is the model's own formula,
 * a crossing pair of slices is caught by the calendar checks and repaired by the envelope without creating
 * butterfly arbitrage, and carried parameters keep the implied vol per log-moneyness.
 */
import { describe, expect, it } from 'vitest';
import { buildModelSurface, rawCalendarCheck, sliceTotalVariance } from '../../src/quant/chain/modelSurface.js';
import { modelOf } from '../../src/quant/models/index.js';
import { MAX_WING_SLOPE, sabrWingJunctions } from '../../src/quant/models/sabr.js';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import { checkSmileDensity } from '../../src/quant/smileArbitrage.js';
import { sviTotalVariance, type SviParams } from '../../src/quant/svi.js';
import { VolSurface } from '../../src/quant/surface.js';
import { vannaVolgaImpliedVol, vannaVolgaWingStrikes, type VannaVolgaParams } from '../../src/quant/vannaVolga.js';

const F = 60_000;

describe('sliceTotalVariance', () => {
  it('is the model formula: raw SVI, Hagan SABR squared times T, the Vanna-Volga smile squared times T', () => {
    const svi = { a: 0.01, b: 0.1, rho: -0.3, m: 0.02, sigma: 0.2 };
    const wSvi = sliceTotalVariance('SVI', { T: 0.1, forward: F, params: svi });
    for (const k of [-1, -0.1, 0, 0.3]) expect(wSvi(k)).toBe(sviTotalVariance(svi, k));

    const sabr = { alpha: 0.6, beta: 1, rho: -0.25, nu: 1.8 };
    const T = 0.08;
    const wSabr = sliceTotalVariance('SABR', { T, forward: F, params: sabr });
    for (const K of [40_000, 60_000, 75_000]) expect(wSabr(Math.log(K / F))).toBeCloseTo(sabrImpliedVol(sabr, F, K, T) ** 2 * T, 14);

    const base: VannaVolgaParams = { K25P: 55_000, Katm: F, K25C: 65_000, vol25P: 0.62, volAtm: 0.55, vol25C: 0.57 };
    const wings = vannaVolgaWingStrikes(base, F, T);
    const vv: Record<string, number> = { K25P: base.K25P, Katm: base.Katm, K25C: base.K25C, vol25P: base.vol25P, volAtm: base.volAtm, vol25C: base.vol25C, K10P: wings.K10P, K10C: wings.K10C };
    const wVv = sliceTotalVariance('VANNA_VOLGA', { T, forward: F, params: vv });
    for (const K of [45_000, 55_000, 60_000, 63_000, 80_000]) expect(wVv(Math.log(K / F))).toBeCloseTo(vannaVolgaImpliedVol({ ...base, ...wings }, F, K, T) ** 2 * T, 14);

    expect(() => sliceTotalVariance('SABR', { T, forward: F, params: { alpha: 0.5, beta: 1, rho: 1.5, nu: 1 } })).toThrow(RangeError);
    expect(() => sliceTotalVariance('SVI', { T, forward: F, params: { a: 0.01 } })).toThrow(/missing/);
  });
});

describe('SABR wing rule', () => {
  it('is Hagan between the junctions and linear in total variance beyond, within Lee\'s bound', () => {
    // a steep short-dated smile: Hagan's beta = 1 wings grow faster than 2|k| (Lee's bound) further out
    const p = { alpha: 0.8, beta: 1, rho: 0.1, nu: 6 };
    const T = 0.02;
    const hagan = (k: number) => sabrImpliedVol(p, F, F * Math.exp(k), T) ** 2 * T;
    const { kWingL, kWingR } = sabrWingJunctions(p, F, T, -0.3, 0.3);
    expect(kWingL).toBeLessThan(0);
    expect(kWingR).toBeGreaterThan(0);
    const w = sliceTotalVariance('SABR', { T, forward: F, params: { ...p, kWingL, kWingR } });
    for (const k of [kWingL * 0.99, -0.1, 0, 0.1, kWingR * 0.99]) expect(w(k)).toBeCloseTo(hagan(k), 14);
    // beyond: linear with the junction's slope, at most 1.8 outward; Hagan itself exceeds 2|k| far out
    const slopeR = (w(kWingR + 2) - w(kWingR + 1)) / 1;
    expect(slopeR).toBeGreaterThanOrEqual(0);
    expect(slopeR).toBeLessThanOrEqual(MAX_WING_SLOPE + 1e-12);
    expect((w(kWingR + 0.001) - w(kWingR)) / 0.001).toBeCloseTo(slopeR, 2);
    expect(hagan(200)).toBeGreaterThan(2 * 200);
    expect(w(200)).toBeLessThan(2 * 200);
    const slopeL = (w(kWingL - 2) - w(kWingL - 1)) / 1;
    expect(slopeL).toBeGreaterThanOrEqual(0);
    expect(slopeL).toBeLessThanOrEqual(MAX_WING_SLOPE + 1e-12);
    // the served smile is butterfly-free on a wide grid (8 ATM standard deviations)
    const iv = (K: number) => Math.sqrt(w(Math.log(K / F)) / T);
    expect(checkSmileDensity(iv, F, T, { nStd: 8, points: 801 }).arbitrageFree).toBe(true);
    // parameters without junctions (older documents) get the default ones (4 ATM standard deviations)
    const d = sabrWingJunctions(p, F, T);
    expect(sliceTotalVariance('SABR', { T, forward: F, params: p })(3)).toBeCloseTo(sliceTotalVariance('SABR', { T, forward: F, params: { ...p, ...d } })(3), 14);
  });
});

describe('calendar rule', () => {
  // Two SVI slices: the later one has more ATM variance but flatter wings, so it crosses below the earlier one
  // for |k| large (w_1(+-1) > w_2(+-1)).
  const early: SviParams = { a: 0.002, b: 0.08, rho: -0.2, m: 0, sigma: 0.1 };
  const late: SviParams = { a: 0.012, b: 0.03, rho: -0.2, m: 0, sigma: 0.2 };
  const T1 = 7 / 365;
  const T2 = 30 / 365;
  const slices = [
    { expirationTimestamp: 1, T: T1, forward: F, params: { ...early } },
    { expirationTimestamp: 2, T: T2, forward: F * 1.002, params: { ...late } },
  ];

  it('catches a crossing pair: raw check, and VolSurface.calendarArbitrageFree on the unrepaired surface', () => {
    expect(sviTotalVariance(late, 0)).toBeGreaterThan(sviTotalVariance(early, 0));
    expect(sviTotalVariance(late, -1)).toBeLessThan(sviTotalVariance(early, -1));
    const raw = rawCalendarCheck(slices.map((s) => sliceTotalVariance('SVI', s)));
    expect(raw[0]).toEqual({ calendarFree: true, violations: 0 });
    expect(raw[1]!.calendarFree).toBe(false);
    expect(raw[1]!.violations).toBeGreaterThan(50);
    const plain = new VolSurface(slices.map((s) => ({ ...s, params: s.params as SviParams })));
    const chk = plain.calendarArbitrageFree();
    expect(chk.arbitrageFree).toBe(false);
    expect(chk.violations.length).toBe(raw[1]!.violations);
    expect(Math.min(...chk.violations.map((v) => Math.abs(v.k)))).toBeGreaterThan(0.2);
    // a non-crossing pair passes
    expect(rawCalendarCheck([sliceTotalVariance('SVI', slices[0]!), sliceTotalVariance('SVI', { ...slices[0]!, T: T2, params: { ...early, a: early.a + 0.01 } })])[1]!.calendarFree).toBe(true);
  });

  it('the envelope max(w_2, w_1) makes the surface calendar-free, changes w_2 only where it crossed, and keeps it butterfly-free', () => {
    const repaired = buildModelSurface('SVI', [slices[0]!, { ...slices[1]!, fit: { calendarRepaired: true } }]);
    expect(repaired.calendarArbitrageFree().arbitrageFree).toBe(true);
    for (const k of [-2, -1, -0.5, 0, 0.5, 1, 2]) {
      const w1 = sviTotalVariance(early, k);
      const w2 = sviTotalVariance(late, k);
      expect(repaired.totalVariance(T2, k)).toBeCloseTo(Math.max(w1, w2), 15);
      // between the expiries: linear in T, so calendar-free too
      const mid = repaired.totalVariance(0.5 * (T1 + T2), k);
      expect(mid).toBeGreaterThanOrEqual(w1 - 1e-15);
      expect(mid).toBeLessThanOrEqual(Math.max(w1, w2) + 1e-15);
    }
    // both raw slices are butterfly-free, and so is their envelope (density check on a strike grid)
    const F2 = F * 1.002;
    const iv = (w: (k: number) => number) => (K: number) => Math.sqrt(w(Math.log(K / F2)) / T2);
    expect(checkSmileDensity(iv((k) => sviTotalVariance(late, k)), F2, T2, { kMin: -2, kMax: 2 }).arbitrageFree).toBe(true);
    expect(checkSmileDensity(iv((k) => sviTotalVariance(early, k)), F2, T2, { kMin: -2, kMax: 2 }).arbitrageFree).toBe(true);
    const env = checkSmileDensity(iv((k) => repaired.totalVariance(T2, k)), F2, T2, { kMin: -2, kMax: 2, points: 2001 });
    expect(env.arbitrageFree).toBe(true);
    // without the flag the surface is the raw one (and not calendar-free)
    expect(buildModelSurface('SVI', slices).calendarArbitrageFree().arbitrageFree).toBe(false);
  });
});

describe('carryForward (each model\'s rule, src/quant/models)', () => {
  it('keeps the implied vol at each log-moneyness when a slice is carried to a later observation', () => {
    const T0 = 0.05;
    const T1 = 0.049;
    const carried = (name: 'SVI' | 'SABR' | 'VANNA_VOLGA', stored: Record<string, number>): Record<string, number> => {
      const m = modelOf(name);
      return m.toRecord(m.carryForward(m.fromRecord(stored, T0, F), T0, T1, F, F * 1.01));
    };
    const svi = { a: 0.004, b: 0.05, rho: -0.3, m: 0.01, sigma: 0.15 };
    const c = carried('SVI', svi);
    for (const k of [-0.5, 0, 0.4]) expect(Math.sqrt(sviTotalVariance(c as unknown as SviParams, k) / T1)).toBeCloseTo(Math.sqrt(sviTotalVariance(svi, k) / T0), 14);
    const base = { K25P: 55_000, Katm: F, K25C: 65_000, vol25P: 0.62, volAtm: 0.55, vol25C: 0.57, K10P: 50_000, K10C: 71_000 };
    const v = carried('VANNA_VOLGA', base);
    expect(v.Katm).toBeCloseTo(F * 1.01, 9);
    expect(v.K25P! / v.Katm!).toBeCloseTo(base.K25P / base.Katm, 14);
    expect(v.vol25P).toBe(base.vol25P);
    const sabr = { alpha: 0.6, beta: 1, rho: -0.2, nu: 2, kWingL: -1, kWingR: 1 };
    expect(carried('SABR', sabr)).toEqual(sabr);
  });
});
