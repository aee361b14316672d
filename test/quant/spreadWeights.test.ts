/**
 * Issue 26's pieces on constructed inputs: the residual scales h of the spread-weighted objective
 * (src/quant/quoteWeights.ts quoteHalfSpreads, against the issue's words re-implemented in
 * test/calibration/referenceFits.ts refHalfSpreads), the weights the fits get from them, and the two warnings of
 * src/quant/chain/quality.ts (sparse quotes not honoured; one model 3 times worse than the best).
 */
import { describe, expect, it } from 'vitest';
import { computeQuoteWeights, quoteHalfSpreads, type SviQuote } from '../../src/quant/quoteWeights.js';
import { CROSS_MODEL_WARNING_PREFIX, SPARSE_WARNING_PREFIX, crossModelWarnings, sparseQuoteMiss, type DraftSlice } from '../../src/quant/chain/quality.js';
import type { VolSurface } from '../../src/quant/surface.js';
import { calibrateSvi } from '../../src/quant/sviCalibration.js';
import { sviImpliedVol } from '../../src/quant/svi.js';
import { refHalfSpreads } from '../calibration/referenceFits.js';

const q = (k: number, iv: number, bidIv: number | null, askIv: number | null): SviQuote => ({ k, iv, bidIv, askIv });

describe('half-spreads of the spread-weighted objective (issue 26)', () => {
  it('h = max(half-spread, 0.25 vp) for two-sided quotes; no-bid: the widest h of the expiry, at least 2 vp', () => {
    const qs = [q(-0.2, 0.6, null, 0.7), q(-0.1, 0.5, 0.49, 0.51), q(0, 0.45, 0.449, 0.452), q(0.1, 0.47, 0.4, 0.5), q(0.3, 0.55, 0.55, null)];
    const h = quoteHalfSpreads(qs);
    expect(h[1]).toBeCloseTo(0.01, 12);
    expect(h[2]).toBeCloseTo(0.0025, 12); // 0.15 vp half-spread floored at 0.25 vp
    expect(h[3]).toBeCloseTo(0.05, 12);
    expect(h[0]).toBeCloseTo(0.05, 12); // widest two-sided h (5 vp) > 2 vp
    expect(h[4]).toBeCloseTo(0.05, 12);
    // equal to the test's own transcription of the issue
    const ref = refHalfSpreads(qs.map((x) => ({ bidIv: x.bidIv ?? null, askIv: x.askIv ?? null })));
    h.forEach((x, i) => expect(x).toBeCloseTo(ref[i]!, 15));
    // tight markets: the no-bid floor of 2 vp
    const tight = quoteHalfSpreads([q(0, 0.5, 0.499, 0.501), q(0.5, 0.7, null, null)]);
    expect(tight[1]).toBeCloseTo(0.02, 12);
    // weights 1 / h^2 times the quote's own weight
    const w = computeQuoteWeights(qs, 0.1, 'halfSpread', { vegaFloor: 0.1, minSpread: 0.005 });
    w.forEach((x, i) => expect(x).toBeCloseTo(1 / h[i]! ** 2, 6));
  });

  it('the spread-weighted SVI fit follows the tight quotes and lets a no-bid plateau go (and the plain fit does not)', () => {
    // A smooth SVI smile with two-sided quotes of 0.5 vp half-spread, plus a flat no-bid plateau of 4 strikes beyond
    // them (Deribit's marks of strikes nobody bids; the smile itself rises 2 to 8 vp above it there): the weighted
    // fit keeps the tight quotes inside their spreads far more often than the plain one.
    const T = 0.05;
    const p = { a: 0.002, b: 0.02, rho: -0.2, m: 0, sigma: 0.1 };
    const qs: SviQuote[] = [];
    for (let k = -0.3; k <= 0.2001; k += 0.025) {
      const iv = sviImpliedVol(p, k, T);
      qs.push(q(k, iv, iv - 0.005, iv + 0.005));
    }
    const plateau = sviImpliedVol(p, 0.2, T);
    for (let k = 0.25; k <= 0.4001; k += 0.05) qs.push(q(k, plateau, null, plateau + 0.05));
    const inside = (params: typeof p): number => qs.filter((x) => x.bidIv !== null && Math.abs(sviImpliedVol(params, x.k, T) - x.iv) <= 0.005).length;
    const two = qs.filter((x) => x.bidIv !== null).length;
    const weighted = calibrateSvi(qs, T, { weighting: 'halfSpread', robust: false });
    const plain = calibrateSvi(qs, T, { weighting: 'uniform', robust: false });
    // measured: 19 of 21 inside (weighted) against 15 (plain)
    expect(inside(weighted.params)).toBeGreaterThanOrEqual(0.9 * two);
    expect(inside(weighted.params)).toBeGreaterThan(inside(plain.params) + 2);
  });
});

describe('warnings of issue 26 (quality.ts)', () => {
  const slice = (quotes: Array<{ strike: number; k: number; markIv: number; bidIv: number | null; askIv: number | null }>, rmse: number, exp = 1_800_000_000): DraftSlice<Record<string, number>> =>
    ({
      expirationTimestamp: exp,
      T: 0.1,
      forward: 100,
      quotes: quotes.map((x) => ({ instrument: `X-${x.strike}`, optionType: 'C', ...x })),
      params: {},
      fit: { rmseVolPts: rmse, warnings: [] },
    }) as unknown as DraftSlice<Record<string, number>>;
  const flat = (v: number): VolSurface => ({ impliedVol: () => v }) as unknown as VolSurface;

  it('a sparse slice served more than max(1 vp, the quote spread) from a mark is named; within it, not', () => {
    const s = slice([{ strike: 100, k: 0, markIv: 0.5, bidIv: 0.499, askIv: 0.501 }], 0);
    expect(sparseQuoteMiss(flat(0.509), s)).toBeNull(); // 0.9 vp: inside 1 vp
    expect(sparseQuoteMiss(flat(0.511), s)).toMatch(new RegExp(`^${SPARSE_WARNING_PREFIX}`)); // 1.1 vp > max(1, 0.2 vp spread)
  });

  it('the quote\'s own spread widens the tolerance; more than 4 quotes is not sparse', () => {
    const wide = slice([{ strike: 100, k: 0, markIv: 0.5, bidIv: 0.47, askIv: 0.53 }], 0);
    expect(sparseQuoteMiss(flat(0.55), wide)).toBeNull(); // 5 vp within a 6 vp spread
    expect(sparseQuoteMiss(flat(0.57), wide)).toMatch(/7\.00 vol pts from the mark at strike 100 \(tolerance 6\.00\)/);
    const five = slice([80, 90, 100, 110, 120].map((K) => ({ strike: K, k: Math.log(K / 100), markIv: 0.5, bidIv: null, askIv: null })), 0);
    expect(sparseQuoteMiss(flat(0.9), five)).toBeNull();
  });

  it('one model more than 3x the best on an expiry (best floored at 0.25 vp) is warned, replacing an older such warning', () => {
    const e = 1_800_000_000;
    const svi = slice([], 1.0, e);
    const sabr = slice([], 3.2, e);
    const vv = slice([], 2.9, e);
    vv.fit.warnings = [`${CROSS_MODEL_WARNING_PREFIX} stale`];
    const tiny = [slice([], 0.01, e + 1), slice([], 0.7, e + 1), slice([], 0.8, e + 1)];
    crossModelWarnings([
      { model: 'SVI', slices: [svi, tiny[0]!] },
      { model: 'SABR', slices: [sabr, tiny[1]!] },
      { model: 'VANNA_VOLGA', slices: [vv, tiny[2]!] },
    ]);
    expect(sabr.fit.warnings).toEqual([`${CROSS_MODEL_WARNING_PREFIX} RMSE 3.20 vol pts is more than 3 times SVI's 1.00 on this expiry`]);
    expect(vv.fit.warnings).toEqual([]);
    expect(svi.fit.warnings).toEqual([]);
    // 0.7 vp against a best of 0.01: the floor (0.25 vp x 3 = 0.75) keeps it quiet; 0.8 is warned
    expect(tiny[1]!.fit.warnings).toEqual([]);
    expect(tiny[2]!.fit.warnings?.[0]).toMatch(/^model comparison: RMSE 0\.80/);
  });
});
