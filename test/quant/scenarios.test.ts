/**
 * Risk scenarios (src/quant/scenarios.ts) and vol shocks (src/quant/volShock.ts): the spec's own examples,
 * the Deribit reference parameter set against hand-computed shocks, scenario 0 against the vanilla
 * valuation (src/quant/vanilla.ts, an independent code path), linear P&L exact in the shift.
 */
import { describe, expect, it } from 'vitest';
import { priceShifts, scenarioFigures, scenarioLadder, type ScenarioPosition } from '../../src/quant/scenarios.js';
import { advancedVolShock, daysToExpiry, MIN_SCENARIO_VOL, shiftedVol, volShockFactor } from '../../src/quant/volShock.js';
import { valueVanilla, type PriceMethod } from '../../src/quant/vanilla.js';

function close(actual: number, expected: number, tol: number): void {
  expect(Math.abs(actual - expected), `actual ${actual} expected ${expected}`).toBeLessThanOrEqual(tol);
}

/** Deribit's BTC portfolio-margin parameters, as the spec gives them (interface-spec.md 5c). */
const DERIBIT_REF = { volRangeUp: 0.5, volRangeDown: 0.25, minVolForShockUp: 0.5, shortTermVegaPower: 0.3, longTermVegaPower: 0.13 };

describe('price ladder and absolute vol shifts (the spec examples)', () => {
  it('priceRange 0.2 with 4 steps gives the 9 shifts -0.2 ... 0.2', () => {
    const s = priceShifts(0.2, 4);
    const expected = [-0.2, -0.15, -0.1, -0.05, 0, 0.05, 0.1, 0.15, 0.2];
    expect(s).toHaveLength(9);
    s.forEach((x, i) => close(x, expected[i]!, 1e-15));
    expect(s[4]).toBe(0);
    expect(priceShifts(0.16, 1)).toEqual([-0.16, 0, 0.16]);
    expect(() => priceShifts(0.2, 0)).toThrow(RangeError);
    expect(() => priceShifts(0.2, 2.5)).toThrow(RangeError);
  });

  it('0.54 +/- 0.05 gives 0.59 / 0.49; shifts -0.2, 0, 0.2, 0.5 on 0.6 give 0.4, 0.6, 0.8, 1.1; floor 0.0001', () => {
    close(shiftedVol(0.54, 0.05), 0.59, 1e-15);
    close(shiftedVol(0.54, -0.05), 0.49, 1e-15);
    const got = [-0.2, 0, 0.2, 0.5].map((x) => shiftedVol(0.6, x));
    [0.4, 0.6, 0.8, 1.1].forEach((v, i) => close(got[i]!, v, 1e-15));
    expect(shiftedVol(0.3, -0.5)).toBe(MIN_SCENARIO_VOL);
    expect(shiftedVol(0.3, -0.3)).toBe(MIN_SCENARIO_VOL);
  });
});

describe('advanced vol shock (Deribit portfolio-margin formula)', () => {
  it('Deribit reference set on a 7-day and a 90-day option at 60 % vol, against hand-computed numbers', () => {
    // Hand computation, formula of interface-spec.md 5c written out:
    // 7 days  (< 30: power 0.3):  f = (30/7)^0.3  = exp(0.3 ln 4.285714) = exp(0.436586) = 1.547416
    //   volUp = max(0.6 (1 + 0.5 * 1.547416), 0.5) = 0.6 * 1.773708 = 1.064225
    //   volDown = max(0.6 (1 - 0.25 * 1.547416), 0) = 0.6 * 0.613146 = 0.367888
    // 90 days (>= 30: power 0.13): f = (30/90)^0.13 = exp(-0.13 ln 3) = exp(-0.142820) = 0.866910
    //   volUp = 0.6 (1 + 0.5 * 0.866910) = 0.6 * 1.433455 = 0.860073
    //   volDown = 0.6 (1 - 0.25 * 0.866910) = 0.6 * 0.783272 = 0.469963
    const f7 = Math.pow(30 / 7, 0.3);
    const f90 = Math.pow(30 / 90, 0.13);
    close(f7, 1.547416, 1e-6);
    close(f90, 0.86691, 1e-6);
    const s7 = advancedVolShock(0.6, 7, DERIBIT_REF);
    close(s7.volUp, 0.6 * (1 + 0.5 * f7), 1e-15);
    close(s7.volDown, 0.6 * (1 - 0.25 * f7), 1e-15);
    close(s7.volUp, 1.064225, 1e-6);
    close(s7.volDown, 0.367888, 1e-6);
    const s90 = advancedVolShock(0.6, 90, DERIBIT_REF);
    close(s90.volUp, 0.860073, 1e-6);
    close(s90.volDown, 0.469963, 1e-6);
    // volDown is below the current vol (the spec's note), volUp above.
    for (const s of [s7, s90]) {
      expect(s.volDown).toBeLessThan(0.6);
      expect(s.volUp).toBeGreaterThan(0.6);
    }
  });

  it('minVolForShockUp floors volUp; volDown never below 0.0001; 30 days uses factor 1', () => {
    // 90 days at 20 %: 0.2 * 1.433456 = 0.28669 < 0.5, so volUp = 0.5.
    expect(advancedVolShock(0.2, 90, DERIBIT_REF).volUp).toBe(0.5);
    // volRangeDown 5 on 7 days: 1 - 5 * 1.547 < 0, so volDown = max(., 0) floored at 0.0001.
    expect(advancedVolShock(0.6, 7, { ...DERIBIT_REF, volRangeDown: 5 }).volDown).toBe(MIN_SCENARIO_VOL);
    expect(volShockFactor(30, 0.3, 0.13)).toBe(1);
    close(advancedVolShock(0.6, 30, DERIBIT_REF).volUp, 0.9, 1e-15);
    // Long-term power from 30 days on: just below 30 the short power, just above the long one.
    close(volShockFactor(29, 0.3, 0.13), Math.pow(30 / 29, 0.3), 1e-15);
    close(volShockFactor(31, 0.3, 0.13), Math.pow(30 / 31, 0.13), 1e-15);
  });

  it('below 1 day the factor is the 1-day factor (finite at expiry), and days are fractional', () => {
    const f1 = Math.pow(30, 0.3);
    expect(volShockFactor(1, 0.3, 0.13)).toBe(f1);
    expect(volShockFactor(0.25, 0.3, 0.13)).toBe(f1);
    expect(volShockFactor(0, 0.3, 0.13)).toBe(f1);
    const s0 = advancedVolShock(0.6, 0, DERIBIT_REF);
    expect(Number.isFinite(s0.volUp)).toBe(true);
    close(s0.volUp, 0.6 * (1 + 0.5 * f1), 1e-15);
    expect(daysToExpiry(1_700_000_000 + 36 * 3600, 1_700_000_000)).toBe(1.5);
  });
});

const S = 60_000;
const F = 61_000;
const T = 40 / 365;

function position(over: Partial<ScenarioPosition>): ScenarioPosition {
  return { type: 'CALL', size: 2, inverse: true, priceMethod: 'DERIBIT', S, F, K: 65_000, T, ...over };
}

describe('scenario 0 at the current vol equals the vanilla valuation', () => {
  const cases: Array<{ pos: ScenarioPosition; method: PriceMethod }> = [
    { pos: position({}), method: 'DERIBIT' },
    { pos: position({ type: 'PUT', K: 55_000, size: -3 }), method: 'DERIBIT' },
    { pos: position({ priceMethod: 'OKX' }), method: 'OKX' },
    { pos: position({ inverse: false, priceMethod: 'BYBIT', type: 'PUT', K: 58_000 }), method: 'BYBIT' },
    { pos: position({ inverse: false, priceMethod: 'DERIBIT', size: -1.5 }), method: 'DERIBIT' },
    { pos: position({ type: 'FORWARD', K: 59_000 }), method: 'DERIBIT' },
    { pos: position({ type: 'FORWARD', K: 59_000, inverse: false, priceMethod: 'BYBIT' }), method: 'BYBIT' },
  ];
  it('value, net delta (= vanilla deltaBase), vega, volga, theta; delta, gamma, vanna = the plain-delta vanilla', () => {
    const sigma = 0.55;
    for (const { pos, method } of cases) {
      const type = pos.type as 'CALL' | 'PUT' | 'FORWARD';
      const s0 = scenarioFigures(pos, 0, sigma);
      const van = valueVanilla({ F, S, K: pos.K!, T, sigma, type, inverse: pos.inverse, priceMethod: method, amount: pos.size });
      // priceMethod BYBIT gives the plain forward delta on any pair (vanilla.ts deltaConvention).
      const plain = valueVanilla({ F, S, K: pos.K!, T, sigma, type, inverse: pos.inverse, priceMethod: 'BYBIT', amount: pos.size });
      const tol = 1e-12;
      close(s0.baseValue, van.valueBase, tol);
      close(s0.baseNetDelta, van.deltaBase, tol);
      close(s0.baseVega, van.vegaBase, tol);
      close(s0.baseVolga, van.volgaBase, tol);
      close(s0.baseTheta, van.thetaBase, tol);
      close(s0.baseDelta, plain.deltaBase, tol);
      close(s0.baseGamma, plain.gammaBase, tol);
      close(s0.baseVanna, plain.vannaBase, tol);
      if (type !== 'FORWARD') close(s0.price, (100 * van.valueBase) / pos.size, 1e-10);
      else expect(s0.price).toBe(F);
    }
  });

  it('P&L is exactly 0 at scenario 0 with the current vol, and the vol-up P&L there is about vega x shift', () => {
    const pos = position({});
    const rows = scenarioLadder(pos, 0.2, 4, [0.56, 0.55, 0.54], 0.55);
    const row0 = rows[4]!;
    expect(row0.scenario).toBe(0);
    expect(row0.cells[1]!.basePl).toBe(0);
    expect(row0.cells[1]!.quotePl).toBe(0);
    const vega = row0.cells[1]!.baseVega; // per vol point (0.01)
    close(row0.cells[0]!.basePl, vega, 0.01 * Math.abs(vega));
    close(row0.cells[2]!.basePl, -vega, 0.01 * Math.abs(vega));
  });
});

describe('linear instruments: P&L exact in the shift', () => {
  const shifts = priceShifts(0.2, 4);
  it('linear FORWARD: quotePl = size F x; SPOT: quotePl = size S x and basePl = 0; linear PERPETUAL: size P x', () => {
    const fwd = scenarioLadder(position({ type: 'FORWARD', inverse: false, priceMethod: 'BYBIT', K: 59_000, size: 3 }), 0.2, 4, [0], 0);
    const spot = scenarioLadder(position({ type: 'SPOT', size: -2 }), 0.2, 4, [0], 0);
    const perp = scenarioLadder(position({ type: 'PERPETUAL', inverse: false, priceMethod: 'BYBIT', F: S, K: undefined, T: 0, size: 5 }), 0.2, 4, [0], 0);
    shifts.forEach((x, i) => {
      close(fwd[i]!.cells[0]!.quotePl, 3 * F * x, 1e-9);
      close(spot[i]!.cells[0]!.quotePl, -2 * S * x, 1e-9);
      expect(spot[i]!.cells[0]!.basePl).toBe(0);
      close(perp[i]!.cells[0]!.quotePl, 5 * S * x, 1e-9);
      expect(fwd[i]!.forwardPrice).toBeCloseTo(F * (1 + x), 9);
      expect(fwd[i]!.spotPrice).toBeCloseTo(S * (1 + x), 9);
      expect(fwd[i]!.cells[0]!.price).toBeCloseTo(F * (1 + x), 9);
    });
  });

  it('inverse FORWARD: basePl = size K (1/F - 1/F_k) coin, the inverse future P&L; net delta K/F_k for DERIBIT', () => {
    const K = 59_000;
    const rows = scenarioLadder(position({ type: 'FORWARD', K, size: 4 }), 0.16, 4, [0], 0);
    shifts.forEach((_, i) => {
      const Fk = rows[i]!.forwardPrice;
      close(rows[i]!.cells[0]!.basePl, 4 * K * (1 / F - 1 / Fk), 1e-12);
      close(rows[i]!.cells[0]!.baseNetDelta, (4 * K) / Fk, 1e-12);
      expect(rows[i]!.cells[0]!.baseDelta).toBe(4);
    });
  });

  it('a FORWARD or PERPETUAL without strike is struck at today\'s price: value 0 now', () => {
    const f = scenarioFigures(position({ type: 'FORWARD', K: undefined }), 0, 0);
    expect(f.baseValue).toBe(0);
    const p = scenarioFigures(position({ type: 'PERPETUAL', K: undefined, F: S, T: 0 }), 0.1, 0);
    close(p.baseValue, 2 * (1 - 1 / 1.1), 1e-15);
  });
});

describe('option figures across the ladder', () => {
  it('sticky strike: the same vol on every rung; delta and gamma are finite differences of the value', () => {
    const pos = position({ inverse: false, priceMethod: 'BYBIT' });
    const sigma = 0.5;
    const q = (x: number) => scenarioFigures(pos, x, sigma).quoteValue; // quote value, linear: size * Black-76
    for (const x of [-0.1, 0, 0.12]) {
      const f = scenarioFigures(pos, x, sigma);
      const Fk = F * (1 + x);
      const h = 1e-4;
      // dV/dF with spot moving along (F_k = F(1+x)): d quote / dx / F.
      const dV = (q(x + h) - q(x - h)) / (2 * h) / F;
      close(f.baseDelta, dV, 1e-6 * Math.abs(f.baseDelta));
      const d2V = (q(x + h) - 2 * q(x) + q(x - h)) / (h * h) / (F * F);
      close(f.baseGamma, d2V, 1e-4 * Math.abs(f.baseGamma));
      // Percent price: 100 x value per unit, linear: Black-76 / S_k.
      close(f.price, (100 * f.baseValue) / pos.size, 1e-12);
      expect(Fk).toBeGreaterThan(0);
    }
  });

  it('inverse option: quote value = coin value x S_k, and net delta = delta - coin price per unit (DERIBIT)', () => {
    const pos = position({});
    const f = scenarioFigures(pos, 0.05, 0.6);
    close(f.quoteValue, f.baseValue * S * 1.05, 1e-9);
    close(f.baseNetDelta, f.baseDelta - f.baseValue, 1e-12);
    const lin = scenarioFigures(position({ inverse: false, priceMethod: 'DERIBIT' }), 0.05, 0.6);
    expect(lin.baseNetDelta).toBe(lin.baseDelta);
  });
});
