/**
 * OKX's and Bybit's own printed option numbers (recorded samples and the exchanges' docs examples in
 * test/fixtures/okx and test/fixtures/bybit) against src/quant/exchangeGreeks.ts and valueVanilla's
 * base-currency fields per priceMethod (docs/conventions.md "Exchange valuation conventions").
 *
 * Inputs are the exchange's own: markVol / markPriceIv, the forward (OKX `fwdPx` or, for the 2021 OKX
 * format without it, the forward implied by `deltaBS`; Bybit `underlyingPrice`), T from the message's
 * `ts` (ms) to the expiry at 08:00 UTC, ACT/365. OKX's index S is read off OKX's own Greeks,
 * S = vegaBS / vega (exactly the index in Black-Scholes on the index), and checked against the recorded
 * index where one was printed at the same second.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { black76Greeks, black76Price, type OptionType } from '../../src/quant/black76.js';
import { bybitOptionGreeks, dayFraction, okxOptionGreeks } from '../../src/quant/exchangeGreeks.js';
import { normInv } from '../../src/quant/normal.js';
import { valueVanilla } from '../../src/quant/vanilla.js';

const fx = (p: string): string => readFileSync(new URL(`../fixtures/${p}`, import.meta.url), 'utf8');
const okxDocs = JSON.parse(fx('okx/docs-examples.json')).examples;
const bybitDocs = JSON.parse(fx('bybit/docs-examples.json')).examples;
const okx2021 = fx('okx/tardis-okex-options-v5-2021-12.jsonl').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const bybitTickers = fx('bybit/tardis-option-tickers-2023-04-05.jsonl').split('\n').filter(Boolean).map((l) => JSON.parse(l));

const YEAR_S = 365 * 86400;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/** OKX option id -> strike, type, expiry (Unix s, 08:00 UTC). */
function okxId(id: string): { K: number; type: OptionType; expiry: number } {
  const [, , d, k, cp] = id.split('-') as [string, string, string, string, string];
  return { K: Number(k), type: cp as OptionType, expiry: Date.UTC(2000 + Number(d.slice(0, 2)), Number(d.slice(2, 4)) - 1, Number(d.slice(4, 6)), 8) / 1000 };
}

/** Bybit symbol -> strike, type, expiry (Unix s). */
function bybitId(sym: string): { K: number; type: OptionType; expiry: number } {
  const [, d, k, cp] = sym.split('-') as [string, string, string, string];
  const m = /^(\d{1,2})([A-Z]{3})(\d{2})$/.exec(d)!;
  return { K: Number(k), type: cp as OptionType, expiry: Date.UTC(2000 + Number(m[3]), MONTHS.indexOf(m[2]!), Number(m[1]), 8) / 1000 };
}

/** The forward whose coin premium Black-76 / F equals `coin` (bisection in F; the premium is monotone in F). */
function forwardFromCoinPremium(coin: number, K: number, T: number, sigma: number, type: OptionType): number {
  let lo = K / 10;
  let hi = K * 10;
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    const c = black76Price(mid, K, T, sigma, type) / mid;
    if ((c < coin) === (type === 'C')) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The forward whose Black-76 delta N(d1) is `deltaBS` (call) or deltaBS + 1 (put). */
function forwardFromDelta(deltaBS: number, K: number, T: number, sigma: number, type: OptionType): number {
  const s = sigma * Math.sqrt(T);
  return K * Math.exp(s * normInv(type === 'C' ? deltaBS : deltaBS + 1) - (s * s) / 2);
}

const num = (o: Record<string, string>, k: string): number => Number(o[k]);
const rel = (a: number, b: number): number => Math.abs(a / b - 1);

describe('OKX opt-summary: printed Greeks reproduced', () => {
  const items: Record<string, string>[] = okxDocs['GET /api/v5/public/opt-summary'].data;

  it('docs example BTC-USD-220309-33000-C/P: Black-Scholes on the index for *BS, premium-adjusted coin Greeks, day-scaled thetas (to 6 digits)', () => {
    for (const it of items) {
      const { K, type, expiry } = okxId(it.instId!);
      const T = (expiry - num(it, 'ts') / 1000) / YEAR_S;
      const sigma = num(it, 'markVol');
      const S = num(it, 'vegaBS') / num(it, 'vega');
      // the forward OKX's Greeks were computed on: the one whose coin premium is deltaBS - delta
      const F = forwardFromCoinPremium(num(it, 'deltaBS') - num(it, 'delta'), K, T, sigma, type);
      expect(rel(F, num(it, 'fwdPx'))).toBeLessThan(1.5e-4); // within 1.5 bp of the printed fwdPx
      const g = okxOptionGreeks(F, S, K, T, sigma, type);
      expect(g.deltaBS).toBeCloseTo(num(it, 'deltaBS'), 6);
      expect(rel(g.gammaBS, num(it, 'gammaBS'))).toBeLessThan(2e-5);
      expect(rel(g.vegaBS, num(it, 'vegaBS'))).toBeLessThan(2e-5);
      expect(rel(g.thetaBS, num(it, 'thetaBS'))).toBeLessThan(2e-5);
      expect(g.delta).toBeCloseTo(num(it, 'delta'), 6);
      expect(g.gamma).toBeCloseTo(num(it, 'gamma'), 5);
      expect(rel(g.vega, num(it, 'vega'))).toBeLessThan(2e-5);
      expect(rel(g.theta, num(it, 'theta'))).toBeLessThan(2e-5);
      // the printed fwdPx (1.2 bp away) still gives delta, gamma and vega within 0.5 % (thetaBS is not: its
      // carry term is proportional to ln(F/S), and 1.2 bp of F is a third of F - S here)
      const p = okxOptionGreeks(num(it, 'fwdPx'), S, K, T, sigma, type);
      expect(Math.abs(p.deltaBS - num(it, 'deltaBS'))).toBeLessThan(1e-4);
      expect(rel(p.gammaBS, num(it, 'gammaBS'))).toBeLessThan(5e-3);
      expect(rel(p.vegaBS, num(it, 'vegaBS'))).toBeLessThan(5e-3);
      // rejected conventions: Black-76 r = 0 theta (equal for call and put), and no day scaling
      const b76Theta = black76Greeks(F, K, T, sigma, type).theta / 365;
      expect(rel(b76Theta, num(it, 'thetaBS'))).toBeGreaterThan(0.08);
      expect(rel(g.thetaBS / dayFraction(T), num(it, 'thetaBS'))).toBeGreaterThan(0.08);
    }
    // call and put thetas differ by b K h / 365 (Black-Scholes carry on the index), b = ln(F/S)/T
    const [c, p] = items as [Record<string, string>, Record<string, string>];
    const { T, S } = { T: (okxId(c.instId!).expiry - num(c, 'ts') / 1000) / YEAR_S, S: num(c, 'vegaBS') / num(c, 'vega') };
    const F = forwardFromCoinPremium(num(c, 'deltaBS') - num(c, 'delta'), 33000, T, num(c, 'markVol'), 'C');
    const b = Math.log(F / S) / T;
    expect(num(c, 'thetaBS') - num(p, 'thetaBS')).toBeCloseTo(((-(S / F) * b * 33000) * dayFraction(T)) / 365, 3);
  });

  it('2021 recorded pushes (no fwdPx): forward from deltaBS, index from vegaBS/vega within 0.05 % of the printed index, Greeks within 0.5 %', () => {
    const idx = okx2021.find((m) => m.arg.channel === 'index-tickers').data[0];
    const pushes = okx2021.filter((m) => m.arg.channel === 'opt-summary').flatMap((m) => m.data);
    expect(pushes).toHaveLength(3);
    for (const it of pushes) {
      const { K, type, expiry } = okxId(it.instId);
      const T = (expiry - num(it, 'ts') / 1000) / YEAR_S;
      const sigma = num(it, 'markVol');
      const F = forwardFromDelta(num(it, 'deltaBS'), K, T, sigma, type);
      const S = num(it, 'vegaBS') / num(it, 'vega');
      if (Math.abs(num(it, 'ts') - num(idx, 'ts')) < 1000) expect(rel(S, num(idx, 'idxPx'))).toBeLessThan(5e-4);
      const g = okxOptionGreeks(F, S, K, T, sigma, type);
      expect(rel(g.gammaBS, num(it, 'gammaBS'))).toBeLessThan(5e-3);
      expect(rel(g.vegaBS, num(it, 'vegaBS'))).toBeLessThan(5e-3);
      expect(rel(g.thetaBS, num(it, 'thetaBS'))).toBeLessThan(5e-3);
      expect(Math.abs(g.delta - num(it, 'delta'))).toBeLessThan(2e-4);
      expect(rel(g.gamma, num(it, 'gamma'))).toBeLessThan(5e-3);
      expect(rel(g.theta, num(it, 'theta'))).toBeLessThan(5e-3);
    }
  });

  it('docs WS example BTC-USD-241013-70000-P: deep in-the-money put, coin delta = deltaBS - premium; a positive thetaBS only the index carry explains', () => {
    const it: Record<string, string> = okxDocs['ws opt-summary push'].data[0];
    const { K, type, expiry } = okxId(it.instId!);
    const T = (expiry - num(it, 'ts') / 1000) / YEAR_S;
    const F = num(it, 'fwdPx');
    const c = black76Price(F, K, T, num(it, 'markVol'), type) / F;
    expect(num(it, 'deltaBS') - c).toBeCloseTo(num(it, 'delta'), 5);
    expect(num(it, 'thetaBS')).toBeGreaterThan(0);
    expect(black76Greeks(F, K, T, num(it, 'markVol'), type).theta).toBeLessThanOrEqual(0);
    // with the carry term, thetaBS > 0 for this put needs an index below the forward: b = ln(F/S)/T > 0
    const S = F / 1.0005; // any index 0.05 % below the forward
    expect(okxOptionGreeks(F, S, K, T, num(it, 'markVol'), type).thetaBS).toBeGreaterThan(0);
  });

  it('valueVanilla with priceMethod OKX (inverse): valueBase, deltaBase, vegaBase are OKX coin premium, delta and vega; gammaBase and thetaBase relate as documented', () => {
    for (const it of items) {
      const { K, type, expiry } = okxId(it.instId!);
      const T = (expiry - num(it, 'ts') / 1000) / YEAR_S;
      const sigma = num(it, 'markVol');
      const S = num(it, 'vegaBS') / num(it, 'vega');
      const F = forwardFromCoinPremium(num(it, 'deltaBS') - num(it, 'delta'), K, T, sigma, type);
      const v = valueVanilla({ F, S, K, T, sigma, type: type === 'C' ? 'CALL' : 'PUT', inverse: true, priceMethod: 'OKX', amount: 1 });
      expect(v.valueBase).toBeCloseTo(num(it, 'deltaBS') - num(it, 'delta'), 9);
      expect(v.deltaBase).toBeCloseTo(num(it, 'delta'), 6);
      expect(rel(v.vegaBase, num(it, 'vega'))).toBeLessThan(2e-5);
      // OKX coin gamma = F gammaBase - deltaBase (its gamma is F^2 d2c/dF2, ours d(deltaBase)/dF)
      expect(F * v.gammaBase - v.deltaBase).toBeCloseTo(num(it, 'gamma'), 5);
      // T < 1 day: our thetaBase is V(T - 1 day) - V(T) = minus the time value; OKX prints theta76 / F * T_days
      expect(v.thetaBase).toBeCloseTo(-v.timeValueBase, 12);
      expect(rel(okxOptionGreeks(F, S, K, T, sigma, type).theta, num(it, 'theta'))).toBeLessThan(2e-5);
    }
  });
});

describe('Bybit option tickers: printed Greeks reproduced', () => {
  /** Tolerance of a figure: half its print unit (8 dp) + its change when F moves 1.5 bp and the IV by its print rounding (0.00005). */
  function tol(f: (F: number, sigma: number) => number, F: number, sigma: number): number {
    return 5e-9 + Math.abs(f(F * 1.00015, sigma) - f(F, sigma)) + Math.abs(f(F, sigma + 5e-5) - f(F, sigma));
  }

  it('recorded SOL-28APR23-24-C and ETH-30JUN23-200-P: Black-76 on underlyingPrice (not the index), r = 0, vega per point, theta per day', () => {
    for (const m of bybitTickers) {
      const d: Record<string, string> = m.data;
      const { K, type, expiry } = bybitId(d.symbol!);
      const T = (expiry - m.ts / 1000) / YEAR_S;
      const F = num(d, 'underlyingPrice');
      const sigma = num(d, 'markPriceIv');
      const figures: Array<[string, (F: number, s: number) => number]> = [
        ['markPrice', (f, s) => bybitOptionGreeks(f, K, T, s, type).markPrice],
        ['delta', (f, s) => bybitOptionGreeks(f, K, T, s, type).delta],
        ['gamma', (f, s) => bybitOptionGreeks(f, K, T, s, type).gamma],
        ['vega', (f, s) => bybitOptionGreeks(f, K, T, s, type).vega],
        ['theta', (f, s) => bybitOptionGreeks(f, K, T, s, type).theta],
      ];
      for (const [name, f] of figures) {
        expect(Math.abs(f(F, sigma) - num(d, name)), `${d.symbol} ${name}`).toBeLessThanOrEqual(tol(f, F, sigma));
      }
      // negative control: the index as the forward (ETH: 1871.27 vs 1886.16) is rejected
      if (num(d, 'indexPrice') !== F) {
        const S = num(d, 'indexPrice');
        expect(Math.abs(bybitOptionGreeks(S, K, T, sigma, type).markPrice - num(d, 'markPrice'))).toBeGreaterThan(5 * tol(figures[0]![1], F, sigma));
      }
      // valueVanilla, priceMethod BYBIT (linear): deltaBase = delta; vegaBase x S and gammaBase are Bybit's vega and gamma
      const S = num(d, 'indexPrice');
      const v = valueVanilla({ F, S, K, T, sigma, type: type === 'C' ? 'CALL' : 'PUT', inverse: false, priceMethod: 'BYBIT', amount: 1 });
      expect(Math.abs(v.deltaBase - num(d, 'delta'))).toBeLessThanOrEqual(tol(figures[1]![1], F, sigma));
      expect(Math.abs(v.vegaBase * S - num(d, 'vega'))).toBeLessThanOrEqual(tol(figures[3]![1], F, sigma));
      expect(Math.abs(v.gammaBase - num(d, 'gamma'))).toBeLessThanOrEqual(tol(figures[2]![1], F, sigma));
      expect(Math.abs(v.valueBase * S - num(d, 'markPrice'))).toBeLessThanOrEqual(tol(figures[0]![1], F, sigma));
    }
  });

  it('docs example BTC-6JAN23-17500-C (20.7 hours left): gamma and theta are scaled by the fraction of the day left', () => {
    const m = bybitDocs['ws tickers.BTC-6JAN23-17500-C (Option)'];
    const d: Record<string, string> = m.data;
    const { K, type, expiry } = bybitId(d.symbol!);
    const T = (expiry - m.ts / 1000) / YEAR_S;
    const h = dayFraction(T);
    expect(h).toBeCloseTo(0.8621, 4);
    const g = bybitOptionGreeks(num(d, 'underlyingPrice'), K, T, num(d, 'markPriceIv'), type);
    expect(rel(g.gamma, num(d, 'gamma'))).toBeLessThan(2e-3);
    expect(rel(g.theta, num(d, 'theta'))).toBeLessThan(2e-3);
    expect(rel(g.vega, num(d, 'vega'))).toBeLessThan(2e-3);
    expect(rel(g.delta, num(d, 'delta'))).toBeLessThan(2e-3);
    // without the scaling both are off by about 16 %
    expect(rel(g.gamma / h, num(d, 'gamma'))).toBeGreaterThan(0.1);
    expect(rel(g.theta / h, num(d, 'theta'))).toBeGreaterThan(0.1);
  });

  it('rejects non-positive inputs', () => {
    expect(() => okxOptionGreeks(0, 1, 1, 1, 1, 'C')).toThrow(RangeError);
    expect(() => bybitOptionGreeks(1, 1, 0, 1, 'P')).toThrow(RangeError);
  });
});
