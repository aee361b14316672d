import { describe, expect, it } from 'vitest';
import { black76Greeks, black76Price } from '../../src/quant/black76.js';
import { deltaConvention, valueVanilla, type VanillaInput, type VanillaResult } from '../../src/quant/vanilla.js';

const DAY = 1 / 365;

const base: VanillaInput = {
  F: 31000,
  S: 30000,
  K: 33000,
  T: 0.1,
  sigma: 0.7,
  type: 'CALL',
  inverse: true,
  priceMethod: 'DERIBIT',
  amount: 1,
};
const v = (over: Partial<VanillaInput>): VanillaResult => valueVanilla({ ...base, ...over });

/** Independent forward roll: F' = S exp(b (T - dt)), b = ln(F/S)/T (the code uses S (F/S)^(T'/T)). */
const roll = (F: number, S: number, T: number, Tn: number): number => S * Math.exp((Math.log(F / S) / T) * Tn);

const configs: Array<Partial<VanillaInput>> = [
  { type: 'CALL', inverse: true, priceMethod: 'DERIBIT' },
  { type: 'PUT', inverse: true, priceMethod: 'DERIBIT', K: 28000 },
  { type: 'CALL', inverse: true, priceMethod: 'OKX', K: 29000 },
  { type: 'PUT', inverse: false, priceMethod: 'BYBIT', K: 34000 },
  { type: 'CALL', inverse: false, priceMethod: 'DERIBIT', K: 31000, T: 0.7 },
  { type: 'PUT', inverse: true, priceMethod: 'BYBIT' },
];

describe('valueVanilla: value conventions', () => {
  it('inverse value = Black-76 / F, linear value = Black-76 / S, times amount', () => {
    const inv = v({ amount: 3 });
    expect(inv.valueBase).toBeCloseTo((3 * black76Price(31000, 33000, 0.1, 0.7, 'C')) / 31000, 14);
    const lin = v({ inverse: false, priceMethod: 'BYBIT', amount: 3 });
    expect(lin.valueBase).toBeCloseTo((3 * black76Price(31000, 33000, 0.1, 0.7, 'C')) / 30000, 14);
  });

  it('value = intrinsic + time value, intrinsic on the forward', () => {
    for (const c of configs) {
      const r = v(c);
      expect(r.valueBase).toBeCloseTo(r.intrinsicValueBase + r.timeValueBase, 14);
      const K = c.K ?? base.K!;
      const F = base.F;
      const iq = (c.type ?? 'CALL') === 'CALL' ? Math.max(F - K, 0) : Math.max(K - F, 0);
      expect(r.intrinsicValueBase).toBeCloseTo(iq / (c.inverse ? F : base.S), 14);
      expect(r.timeValueBase).toBeGreaterThan(0);
    }
  });

  it('every figure scales linearly with amount (including short positions)', () => {
    const one = v({});
    const short = v({ amount: -2.5 });
    for (const k of Object.keys(one) as Array<keyof VanillaResult>) expect(short[k]).toBeCloseTo(-2.5 * one[k], 12);
  });
});

describe('valueVanilla: Greeks against finite differences of valueBase / deltaBase', () => {
  for (const c of configs) {
    const label = `${c.type} inverse=${c.inverse} ${c.priceMethod} K=${c.K ?? base.K}`;
    it(label, () => {
      const r = v(c);
      const T = c.T ?? base.T;
      const hF = 1e-5 * base.F;
      const hS = 1e-4;
      // deltaBase: F d(valueBase)/dF for inverse premium-adjusted; S d(valueBase)/dF otherwise (a linear
      // valueBase is quote/S; an inverse valueBase with the plain convention is the quote delta N(d1)).
      const dValdF = (v({ ...c, F: base.F + hF }).valueBase - v({ ...c, F: base.F - hF }).valueBase) / (2 * hF);
      const conv = deltaConvention(c.priceMethod!, c.inverse!);
      if (conv === 'PREMIUM_ADJUSTED') expect(r.deltaBase).toBeCloseTo(base.F * dValdF, 7);
      else if (!c.inverse) expect(r.deltaBase).toBeCloseTo(base.S * dValdF, 7);
      else expect(r.deltaBase).toBeCloseTo(black76Greeks(base.F, c.K ?? base.K!, T, base.sigma, c.type === 'CALL' ? 'C' : 'P').delta, 14);
      // gammaBase = d(deltaBase)/dF.
      const dDeltadF = (v({ ...c, F: base.F + hF }).deltaBase - v({ ...c, F: base.F - hF }).deltaBase) / (2 * hF);
      expect(Math.abs(r.gammaBase - dDeltadF)).toBeLessThan(1e-6 * Math.abs(r.gammaBase) + 1e-12);
      // vegaBase, volgaBase per 0.01 and 0.01^2; vannaBase = d(deltaBase)/dsigma per 0.01.
      const up = v({ ...c, sigma: base.sigma + hS });
      const dn = v({ ...c, sigma: base.sigma - hS });
      expect(Math.abs(r.vegaBase - ((up.valueBase - dn.valueBase) / (2 * hS)) * 0.01)).toBeLessThan(1e-7 * Math.abs(r.vegaBase) + 1e-14);
      const fdVolga = ((up.valueBase - 2 * r.valueBase + dn.valueBase) / (hS * hS)) * 1e-4;
      expect(Math.abs(r.volgaBase - fdVolga)).toBeLessThan(1e-5 * Math.abs(r.volgaBase) + 1e-12);
      expect(Math.abs(r.vannaBase - ((up.deltaBase - dn.deltaBase) / (2 * hS)) * 0.01)).toBeLessThan(1e-7 * Math.abs(r.vannaBase) + 1e-12);
    });
  }
});

describe('valueVanilla: one-day figures and rho against direct recomputation', () => {
  for (const c of configs) {
    it(`${c.type} inverse=${c.inverse} ${c.priceMethod}`, () => {
      const r = v(c);
      const T = c.T ?? base.T;
      const K = c.K ?? base.K!;
      const t = c.type === 'CALL' ? 'C' : 'P';
      const { F, S, sigma } = base;
      const unit = (f: number): number => (c.inverse ? 1 / f : 1 / S);
      const val = (f: number, tt: number): number => black76Price(f, K, tt, sigma, t) * unit(f);
      const pa = deltaConvention(c.priceMethod!, c.inverse!) === 'PREMIUM_ADJUSTED';
      const del = (f: number, tt: number): number => {
        const g = black76Greeks(f, K, tt, sigma, t);
        return pa ? g.delta - g.price / f : g.delta;
      };
      const Fr = roll(F, S, T, T - DAY);
      expect(r.thetaBase).toBeCloseTo(val(F, T - DAY) - val(F, T), 12);
      expect(r.deltaDecayBase).toBeCloseTo(del(F, T - DAY) - del(F, T), 12);
      expect(r.carryBase).toBeCloseTo(val(Fr, T - DAY) - val(F, T - DAY), 12);
      expect(r.totalThetaBase).toBeCloseTo(val(Fr, T - DAY) - val(F, T), 12);
      expect(r.totalThetaBase).toBeCloseTo(r.thetaBase + r.carryBase, 14);
      expect(r.rhoBase).toBeCloseTo(val(F * Math.exp(0.01 * T), T) - val(F, T), 12);
      // rho ~ d(value)/db * 0.01 = F T d(value)/dF * 0.01 (first order in the bump).
      const h = 1e-5 * F;
      const dVdF = (val(F + h, T) - val(F - h, T)) / (2 * h);
      expect(Math.abs(r.rhoBase - dVdF * F * T * 0.01)).toBeLessThan(0.02 * Math.abs(r.rhoBase) + 1e-12);
      // The forward is above spot (positive basis): rolling it down lowers a call, raises a put.
      if (t === 'C') expect(r.carryBase).toBeLessThan(0);
      expect(r.thetaBase).toBeLessThan(0);
    });
  }

  it('with less than a day left, theta is minus the time value (valued at expiry = intrinsic)', () => {
    const r = v({ T: 0.4 * DAY, K: 30500, inverse: false, priceMethod: 'BYBIT' });
    expect(r.thetaBase).toBeCloseTo(-r.timeValueBase, 14);
    // The forward rolls to spot at expiry: carry = intrinsic at S minus intrinsic at F (linear, / S).
    expect(r.carryBase).toBeCloseTo((Math.max(30000 - 30500, 0) - Math.max(31000 - 30500, 0)) / 30000, 14);
  });

  it('at expiry (T = 0): value is intrinsic, all one-day figures and Greeks but delta are 0', () => {
    const r = v({ T: 0, K: 30000, F: 30100, S: 30100 });
    expect(r.valueBase).toBeCloseTo(100 / 30100, 15);
    expect(r.deltaBase).toBeCloseTo(1 - 100 / 30100, 15); // premium-adjusted step delta
    for (const k of ['thetaBase', 'carryBase', 'totalThetaBase', 'deltaDecayBase', 'vegaBase', 'volgaBase', 'vannaBase', 'rhoBase', 'timeValueBase'] as const) {
      expect(r[k]).toBe(0);
    }
  });
});

describe('valueVanilla: delta conventions per priceMethod', () => {
  it('inverse DERIBIT and OKX: premium-adjusted N(d1) - value in coin; BYBIT and linear: N(d1)', () => {
    const g = black76Greeks(31000, 33000, 0.1, 0.7, 'C');
    const dPa = g.delta - g.price / 31000;
    expect(v({ priceMethod: 'DERIBIT' }).deltaBase).toBeCloseTo(dPa, 15);
    expect(v({ priceMethod: 'OKX' }).deltaBase).toBeCloseTo(dPa, 15);
    expect(v({ priceMethod: 'BYBIT' }).deltaBase).toBeCloseTo(g.delta, 15);
    expect(v({ inverse: false, priceMethod: 'DERIBIT' }).deltaBase).toBeCloseTo(g.delta, 15);
    expect(deltaConvention('DERIBIT', true)).toBe('PREMIUM_ADJUSTED');
    expect(deltaConvention('OKX', false)).toBe('FORWARD');
  });
});

describe('valueVanilla: FORWARD', () => {
  it('linear forward: value (F - K)/S, delta 1, no optionality, carry and rho from the forward moving', () => {
    const r = v({ type: 'FORWARD', K: 30500, inverse: false, priceMethod: 'BYBIT', amount: 2 });
    expect(r.valueBase).toBeCloseTo((2 * (31000 - 30500)) / 30000, 14);
    expect(r.deltaBase).toBe(2);
    expect(r.timeValueBase).toBeCloseTo(0, 15);
    for (const k of ['gammaBase', 'vegaBase', 'volgaBase', 'vannaBase', 'thetaBase', 'deltaDecayBase'] as const) expect(r[k]).toBe(0);
    expect(r.carryBase).toBeCloseTo((2 * (roll(31000, 30000, 0.1, 0.1 - DAY) - 31000)) / 30000, 12);
    expect(r.rhoBase).toBeCloseTo((2 * 31000 * (Math.exp(0.001) - 1)) / 30000, 12);
  });

  it('inverse forward: value 1 - K/F coin, premium-adjusted delta K/F, gamma -K/F^2', () => {
    const r = v({ type: 'FORWARD', K: 30500 });
    expect(r.valueBase).toBeCloseTo(1 - 30500 / 31000, 15);
    expect(r.deltaBase).toBeCloseTo(30500 / 31000, 15);
    expect(r.gammaBase).toBeCloseTo(-30500 / 31000 ** 2, 18);
    const h = 1;
    const fd = (v({ type: 'FORWARD', K: 30500, F: 31000 + h }).valueBase - v({ type: 'FORWARD', K: 30500, F: 31000 - h }).valueBase) / (2 * h);
    expect(r.deltaBase).toBeCloseTo(31000 * fd, 8);
  });

  it('without a strike the forward is struck at today\'s forward: value 0, delta 1', () => {
    const inv = valueVanilla({ ...base, type: 'FORWARD', K: undefined });
    expect(inv.valueBase).toBe(0);
    expect(inv.deltaBase).toBe(1);
    const lin = valueVanilla({ ...base, type: 'FORWARD', K: undefined, inverse: false, priceMethod: 'BYBIT' });
    expect(lin.valueBase).toBe(0);
    expect(lin.deltaBase).toBe(1);
  });
});

describe('valueVanilla: input errors', () => {
  it('throws RangeError for a missing strike on an option and for bad numbers', () => {
    expect(() => valueVanilla({ ...base, K: undefined })).toThrow(/strike K is required/);
    expect(() => v({ F: 0 })).toThrow(RangeError);
    expect(() => v({ S: Number.NaN })).toThrow(RangeError);
    expect(() => v({ T: -1 })).toThrow(RangeError);
    expect(() => v({ sigma: -0.1 })).toThrow(RangeError);
    expect(() => v({ amount: Infinity })).toThrow(RangeError);
    expect(() => v({ K: -5 })).toThrow(RangeError);
  });
});
