/**
 * Issue 26's price rule for quotes without a two-sided market, as the fits take it: the exchanges' option ticks
 * (src/domain/optionTicks.ts, from their instrument listings), the IV band of each no-bid quote (fitKit.ts
 * noBidPriceBands: Black-76 price within 2 ticks of the mark's, at or below the ask) and SABR's fit kept inside the
 * bands (sabrCalibration.ts honourBands). References in the test: Black-76 prices recomputed from the band edges; the
 * simulator's 213-day expiry, whose unbanded SABR fit (the independent reference fit's optimum too) sits 2.5 to 3.2
 * ticks above three far no-bid call marks.
 */
import { describe, expect, it } from 'vitest';
import { DERIBIT_TICK_STEPS_FROM, OKX_TICK_STEPS_FROM, optionPriceTick } from '../../src/domain/optionTicks.js';
import { black76Price } from '../../src/quant/black76.js';
import { noBidPriceBands } from '../../src/quant/models/fitKit.js';
import { calibrateSabr } from '../../src/quant/sabrCalibration.js';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import type { SliceInput } from '../../src/quant/models/types.js';
import { simulatorChainView } from '../../bench/calibration.js';
import { fitChain } from '../../src/quant/chain/chainFit.js';

/** 2026-05-26 19:30 UTC, the simulator's pinned time (after both exchanges' tick steps). */
const NOW = Date.UTC(2026, 4, 26, 19, 30) / 1000;
const deribit = optionPriceTick('DERIBIT', { base: 'BTC', quote: 'USD' }, NOW)!;

describe('option price ticks (exchange listings)', () => {
  it('Deribit inverse: 0.0001 coin up to a premium of 0.005 coin, 0.0005 above, since 6 July 2023; 0.0005 before; OKX since 31 August 2023; linear: none', () => {
    const F = 80_000;
    const btc = { base: 'BTC', quote: 'USD' } as const;
    expect(deribit(0.0049 * F, F)).toBeCloseTo(0.0001 * F, 9);
    expect(deribit(0.005 * F, F)).toBeCloseTo(0.0001 * F, 9);
    expect(deribit(0.0051 * F, F)).toBeCloseTo(0.0005 * F, 9);
    expect(optionPriceTick('DERIBIT', { base: 'ETH', quote: 'USD' }, NOW)!(0.001 * 3000, 3000)).toBeCloseTo(0.3, 12);
    // before the reduction: 0.0005 coin at every price (the 2020 book and the 2021 listing)
    const may2020 = Date.UTC(2020, 4, 14, 5, 41) / 1000;
    expect(optionPriceTick('DERIBIT', btc, may2020)!(0.001 * F, F)).toBeCloseTo(0.0005 * F, 9);
    expect(optionPriceTick('DERIBIT', btc, DERIBIT_TICK_STEPS_FROM - 1)!(0.001 * F, F)).toBeCloseTo(0.0005 * F, 9);
    expect(optionPriceTick('DERIBIT', btc, DERIBIT_TICK_STEPS_FROM)!(0.001 * F, F)).toBeCloseTo(0.0001 * F, 9);
    expect(optionPriceTick('OKX', btc, OKX_TICK_STEPS_FROM - 1)!(0.001 * F, F)).toBeCloseTo(0.0005 * F, 9);
    expect(optionPriceTick('OKX', btc, NOW)!(0.001 * F, F)).toBeCloseTo(0.0001 * F, 9);
    expect(optionPriceTick('OKX', btc, NOW)!(0.02 * F, F)).toBeCloseTo(0.0005 * F, 9);
    expect(optionPriceTick('DERIBIT', { base: 'SOL', quote: 'USDC' }, NOW)).toBeNull();
    expect(optionPriceTick('BYBIT', { base: 'BTC', quote: 'USDC' }, NOW)).toBeNull();
    expect(optionPriceTick('DERIBIT', btc, Number.NaN)).toBeNull();
  });
});

describe('noBidPriceBands', () => {
  const F = 75_000;
  const T = 30 / 365;
  const slice: SliceInput = {
    expirationTimestamp: 0,
    T,
    forward: F,
    quotes: [
      { strike: 75_000, k: 0, markIv: 0.6, bidIv: 0.59, askIv: 0.61, optionType: 'C' },
      { strike: 120_000, k: Math.log(120_000 / F), markIv: 0.9, bidIv: null, askIv: 0.905, optionType: 'C' },
      { strike: 150_000, k: Math.log(150_000 / F), markIv: 1.0, bidIv: null, askIv: null, optionType: 'C' },
      { strike: 40_000, k: Math.log(40_000 / F), markIv: 1.1, bidIv: 0, askIv: 5, optionType: 'P' },
    ],
  };
  const price = (i: number, v: number) => black76Price(F, slice.quotes[i]!.strike, T, v, slice.quotes[i]!.optionType!);

  it('bands the no-bid quotes only: edges priced 2 ticks from the mark, the top at most the ask IV', () => {
    const b = noBidPriceBands(slice, deribit);
    expect(b[0]!.ivBand).toBeUndefined();
    for (const i of [1, 2, 3]) {
      const band = b[i]!.ivBand!;
      expect(band.lo).toBeLessThan(slice.quotes[i]!.markIv);
      expect(band.hi).toBeGreaterThan(slice.quotes[i]!.markIv);
      const mark = price(i, slice.quotes[i]!.markIv);
      const tick = deribit(mark, F);
      // 2 ticks below the mark stay above the intrinsic value here: the bottom is priced exactly
      expect(band.lo).toBeGreaterThan(0);
      expect(price(i, band.lo)).toBeCloseTo(mark - 2 * tick, 4);
      const askIv = slice.quotes[i]!.askIv;
      if (askIv !== null && askIv > 0 && price(i, askIv) < mark + 2 * tick) expect(band.hi).toBe(askIv);
      else expect(price(i, band.hi)).toBeCloseTo(mark + 2 * tick, 4);
    }
    // the 120000 call's ask (90.5 %) is nearer than 2 ticks: the band stops at it; the 150000 call (no ask) is
    // priced 2 ticks above its mark at the band's top
    expect(price(1, 0.905) - price(1, 0.9)).toBeLessThan(2 * deribit(price(1, 0.9), F));
    expect(b[1]!.ivBand!.hi).toBe(0.905);
    expect(price(2, b[2]!.ivBand!.hi)).toBeCloseTo(price(2, 1.0) + 2 * deribit(price(2, 1.0), F), 4);
  });

  it('no band without a tick rule', () => {
    expect(noBidPriceBands(slice, null).every((q) => q.ivBand === undefined)).toBe(true);
  });
});

describe('SABR inside the no-bid price bands (simulator, 213-day expiry)', () => {
  const view = simulatorChainView();
  const fit = fitChain(view, { sabrBeta: 1 });
  const slice = fit.models.find((m) => m.model === 'SABR')!.slices.find((s) => Math.abs(s.T * 365 - 213) < 1.5)!;
  const g: SliceInput = { expirationTimestamp: slice.expirationTimestamp, T: slice.T, forward: slice.forward, quotes: slice.quotes };
  const ticksOff = (p: Parameters<typeof sabrImpliedVol>[0], q: (typeof g.quotes)[number]) => {
    const type = q.optionType!;
    const pm = black76Price(g.forward, q.strike, g.T, q.markIv, type);
    return Math.abs(black76Price(g.forward, q.strike, g.T, sabrImpliedVol(p, g.forward, q.strike, g.T), type) - pm) / deribit(pm, g.forward);
  };
  const noBid = g.quotes.filter((q) => !(q.bidIv !== null && q.askIv !== null && q.bidIv > 0 && q.askIv > q.bidIv));
  const rmse = (p: Parameters<typeof sabrImpliedVol>[0]) => Math.sqrt(g.quotes.reduce((a, q) => a + (100 * (sabrImpliedVol(p, g.forward, q.strike, g.T) - q.markIv)) ** 2, 0) / g.quotes.length);

  it('the unbanded fit leaves far no-bid marks by more than 2 ticks; the banded one keeps every one within 2, at no RMSE cost', () => {
    const plain = calibrateSabr(noBidPriceBands(g, null), g.forward, g.T, { beta: 1, weighting: 'halfSpread', maxOutlierFraction: 0 });
    const banded = calibrateSabr(noBidPriceBands(g, deribit), g.forward, g.T, { beta: 1, weighting: 'halfSpread', maxOutlierFraction: 0 });
    expect(noBid.length).toBeGreaterThanOrEqual(3);
    expect(noBid.filter((q) => ticksOff(plain.params, q) > 2).length).toBeGreaterThanOrEqual(2);
    for (const q of noBid) expect(ticksOff(banded.params, q), `K ${q.strike}`).toBeLessThanOrEqual(2);
    expect(banded.method).toMatch(/no-bid price bands honoured/);
    expect(banded.arbitrageFree).toBe(true);
    // against the marks (the RMSE) the banded fit is no worse than the plain one by more than 0.05 vp
    expect(rmse(banded.params)).toBeLessThan(rmse(plain.params) + 0.05);
    console.log(`SABR 213d: RMSE vs marks ${rmse(plain.params).toFixed(3)} -> ${rmse(banded.params).toFixed(3)} vp; worst no-bid ticks ${Math.max(...noBid.map((q) => ticksOff(plain.params, q))).toFixed(2)} -> ${Math.max(...noBid.map((q) => ticksOff(banded.params, q))).toFixed(2)}`);
  });

  it('the served chain fit carries it (the chain\'s DERIBIT BTC/USD tick rule at its time); not counted as an arbitrage repair', () => {
    expect(slice.fit.status).toBe('fitted');
    expect(slice.fit.method).toMatch(/no-bid price bands honoured/);
    for (const q of noBid) expect(ticksOff(slice.params as never, q)).toBeLessThanOrEqual(2);
  });
});

describe('a price band that would cost more than 0.5 vol pt is not honoured, and says so', () => {
  it('keeps the unbanded fit and warns (a far no-bid mark 15 vp above a smooth smile, a tight band)', () => {
    const F = 70_000;
    const T = 60 / 365;
    // a smooth SABR-like smile, two-sided everywhere but the far call whose mark sits 15 vp above it
    const quotes = Array.from({ length: 15 }, (_, i) => {
      const k = -0.6 + (1.3 * i) / 14;
      const iv = 0.6 + 0.1 * k * k - 0.05 * k;
      return { k, iv, bidIv: iv - 0.01, askIv: iv + 0.01 };
    });
    const far = quotes.length - 1;
    const markFar = quotes[far]!.iv + 0.15;
    const tight = { lo: markFar - 0.001, hi: markFar + 0.001 };
    const withBand = quotes.map((q, i) => (i === far ? { k: q.k, iv: markFar, bidIv: null, askIv: null, ivBand: tight } : q));
    const without = withBand.map((q) => ({ ...q, ivBand: null }));
    const opts = { beta: 1, weighting: 'halfSpread' as const, maxOutlierFraction: 0 };
    const plain = calibrateSabr(without, F, T, opts);
    const banded = calibrateSabr(withBand, F, T, opts);
    // holding the far quote within 0.1 vp of its mark would bend the whole smile: more than 0.5 vp of RMSE
    expect(Math.abs(sabrImpliedVol(plain.params, F, F * Math.exp(quotes[far]!.k), T) - markFar)).toBeGreaterThan(0.01);
    expect(banded.params).toEqual(plain.params);
    expect(banded.warnings.some((w) => /no-bid price band not honoured at 1 quote/.test(w))).toBe(true);
    expect(banded.method).not.toMatch(/no-bid price bands honoured/);
  });
});
