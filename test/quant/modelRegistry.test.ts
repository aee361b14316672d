/**
 * The model registry (src/quant/models): every model round-trips its stored parameters, carries a slice forward
 * keeping its implied vol at each log-moneyness (the rule of issue 4), rejects invalid parameters with a RangeError,
 * and its served smile equals the underlying formula (SVI closed form, Hagan's SABR inside the junctions,
 * vannaVolgaSmile). Each model also fits a slice behind the same interface (SmileModel.fit), and the pipeline in
 * streams/ never branches on a model's name (adding a model is one module plus its tests).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { VOLATILITY_MODELS } from '../../src/domain/volatilityModels.js';
import { MODEL_REGISTRY } from '../../src/quant/models/index.js';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import { vannaVolgaSmile } from '../../src/quant/vannaVolga.js';

const F = 100;
const T = 0.25;
const records = {
  SVI: { a: 0.01, b: 0.1, rho: -0.3, m: 0.01, sigma: 0.2 },
  SABR: { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.2, kWingL: -0.8, kWingR: 0.9 },
  VANNA_VOLGA: { K25P: 92, Katm: 100, K25C: 108, vol25P: 0.62, volAtm: 0.58, vol25C: 0.6, K10P: 85, K10C: 117, wingCurvL: 0.2, wingCurvR: 0.1, wingScaleL: 0.05, wingScaleR: 0.12 },
  ESSVI: { theta: 0.09, rho: -0.3, phi: 2 },
} as const;

describe('model registry', () => {
  for (const name of VOLATILITY_MODELS) {
    const m = MODEL_REGISTRY[name];
    it(`${name}: stored form round-trips, carry-forward keeps the vol at each k, invalid input throws`, () => {
      const p = m.fromRecord(records[name], T, F);
      expect(m.toRecord(p)).toEqual(records[name]);
      expect(Object.keys(m.toRecord(p)).sort()).toEqual([...m.parameterNames].sort());
      const w = m.totalVariance(p, T, F);
      const T2 = 0.2;
      const F2 = 103;
      const q = m.carryForward(p, T, T2, F, F2);
      const w2 = m.totalVariance(q, T2, F2);
      for (const k of [-0.3, -0.1, 0, 0.1, 0.3]) {
        const v1 = Math.sqrt(w(k) / T);
        const v2 = Math.sqrt(w2(k) / T2);
        // SVI and ESSVI exactly; SABR keeps its parameters (only Hagan's small T-correction moves) and Vanna-Volga its pillars at
        // their log-moneyness (the second-order formula between them depends on T): < 0.5 vol pt here.
        expect(Math.abs(v2 - v1)).toBeLessThan(name === 'SVI' || name === 'ESSVI' ? 1e-12 : 5e-3);
      }
      const broken = { ...records[name] } as Record<string, number>;
      delete broken[m.parameterNames[0]!];
      expect(() => m.fromRecord(broken, T, F)).toThrow(RangeError);
      for (const opt of m.optionalParameterNames) {
        const older = { ...records[name] } as Record<string, number>;
        delete older[opt];
        expect(() => m.fromRecord(older, T, F)).not.toThrow();
      }
    });
  }

  it('served smiles are the models\' formulas inside the core', () => {
    const svi = MODEL_REGISTRY.SVI;
    const s = records.SVI;
    const w = svi.totalVariance(svi.fromRecord(s, T, F), T, F);
    expect(w(0.05)).toBeCloseTo(s.a + s.b * (s.rho * (0.05 - s.m) + Math.sqrt((0.05 - s.m) ** 2 + s.sigma ** 2)), 14);
    const dk = svi.totalVarianceDk!(svi.fromRecord(s, T, F), T, F);
    expect(dk(0.05)).toBeCloseTo((w(0.05 + 1e-6) - w(0.05 - 1e-6)) / 2e-6, 7);
    const sabr = MODEL_REGISTRY.SABR;
    const ws = sabr.totalVariance(sabr.fromRecord(records.SABR, T, F), T, F);
    expect(Math.sqrt(ws(0.1) / T)).toBeCloseTo(sabrImpliedVol({ alpha: 0.6, beta: 1, rho: -0.3, nu: 1.2 }, F, F * Math.exp(0.1), T), 12);
    const vv = MODEL_REGISTRY.VANNA_VOLGA;
    const wv = vv.totalVariance(vv.fromRecord(records.VANNA_VOLGA, T, F), T, F);
    const smile = vannaVolgaSmile({ ...records.VANNA_VOLGA, order: 'second' }, F, T);
    for (const K of [70, 95, 100, 112, 140]) expect(Math.sqrt(wv(Math.log(K / F)) / T)).toBeCloseTo(smile(K), 12);
  });

  // A smile outside every served family: IV quadratic in k with a put-side skew, 21 quotes over +-2.5 ATM std devs.
  const fitT = 30 / 365;
  const fitF = 50_000;
  const marketIv = (k: number): number => 0.6 - 0.25 * k + 0.9 * k * k;
  const slice = {
    expirationTimestamp: 1_800_000_000,
    T: fitT,
    forward: fitF,
    quotes: Array.from({ length: 21 }, (_, i) => {
      const k = (-2.5 + (5 * i) / 20) * 0.6 * Math.sqrt(fitT);
      return { strike: fitF * Math.exp(k), k, markIv: marketIv(k), bidIv: marketIv(k) - 0.01, askIv: marketIv(k) + 0.01 };
    }),
  };

  for (const name of VOLATILITY_MODELS) {
    it(`${name}: fits a slice through the registry; its parameters, stored and read back, give the served smile whose errors it reports`, () => {
      const m = MODEL_REGISTRY[name];
      const ctx = { lastFull: undefined, lastFullT: undefined };
      const fit = m.fit(slice, ctx, {});
      expect(fit.butterflyFree).toBe(true);
      expect(fit.full).toBe(true);
      // the stored form has every parameter name, in order, and reads back to the same smile
      const stored = m.toRecord(fit.params);
      expect(Object.keys(stored)).toEqual(m.parameterNames);
      expect(m.toRecord(m.fromRecord(stored, fitT, fitF))).toEqual(stored);
      // the served smile of the stored parameters, errors recomputed here against the marks
      const w = m.totalVariance(m.fromRecord(stored, fitT, fitF), fitT, fitF);
      const errs = slice.quotes.map((q) => 100 * (Math.sqrt(w(q.k) / fitT) - q.markIv));
      const rmse = Math.sqrt(errs.reduce((a, e) => a + e * e, 0) / errs.length);
      expect(fit.rmseVolPts).toBeCloseTo(rmse, 6);
      expect(fit.maxErrorVolPts).toBeCloseTo(Math.max(...errs.map(Math.abs)), 6);
      // a smooth smile is fitted to within a vol point by every model but ESSVI (3 parameters, its curvature and wings
      // tied by Gatheral-Jacquier's butterfly domain: measured 1.12 vp on this strongly curved smile)
      expect(rmse).toBeLessThan(name === 'ESSVI' ? 1.2 : 1);
      // warm from its own parameters: the same fit (within 0.01 vp at every quote)
      const warm = m.fit(slice, { ...ctx, previous: fit.params }, {});
      const ww = m.totalVariance(warm.params, fitT, fitF);
      for (const q of slice.quotes) expect(Math.abs(100 * (Math.sqrt(ww(q.k) / fitT) - Math.sqrt(w(q.k) / fitT)))).toBeLessThan(0.01);
      // a stored record that is not valid for the model is refused by its fromRecord (a stored slice that cannot be read),
      // and a warm start that is not valid for the model is not used: the cold fit
      const broken = { ...stored, [m.parameterNames[0]!]: Number.NaN };
      expect(() => m.fromRecord(broken, fitT, fitF)).toThrow(RangeError);
      const brokenStart: unknown = { ...(fit.params as object), [m.parameterNames[0]!]: Number.NaN };
      expect(m.fit(slice, { ...ctx, previous: brokenStart }, {}).params).toEqual(fit.params);
      // SVI borrows a shape under 7 quotes, ESSVI under 5 (essvi.ts ESSVI_MIN_QUOTES_FULL), the others never
      const few = { ...slice, quotes: slice.quotes.filter((_, i) => i % 4 === 0) };
      expect(few.quotes.length).toBe(6);
      expect(m.borrowsShape(few)).toBe(name === 'SVI');
      expect(m.borrowsShape(slice)).toBe(false);
    });
  }

  it('the pipeline (streams/) never branches on a model name: every per-model rule comes from the registry', () => {
    const dir = new URL('../../streams/', import.meta.url);
    const literal = /(===|!==|case)\s*'(SVI|SABR|VANNA_VOLGA)'|'(SVI|SABR|VANNA_VOLGA)'\s*(===|!==|\?)/;
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.ts'))) {
      const lines = readFileSync(new URL(f, dir), 'utf8').split('\n');
      lines.forEach((line, i) => expect(literal.test(line), `streams/${f}:${i + 1}: ${line.trim()}`).toBe(false));
    }
  });
});
