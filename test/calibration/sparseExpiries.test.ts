/**
 * Sparse expiries (1 to 4 quotes, issue 11 item 2) on REAL marks: a real Deribit chain (data/replay) with chosen
 * expiries thinned to 1-4 strikes near the money (as OKX lists its far expiries), fitted by src/quant/chain/chainFit.ts
 * fitChain. The full-chain marks that were removed are the independent reference: the shape the sparse slice
 * takes from its neighbours must follow them.
 *
 * Bounds (issue 11 item 2 and the rule behind them): at every quoted strike the served IV is within 1 vp of the
 * mark; inside the quoted range no served IV leaves [0.5 x lowest mark, 2 x highest mark]; between the expiry's
 * own 25-delta strikes (of the FULL marks) the served smile minus the removed marks stays within 2 vp of its median
 * plus the neighbours' own RMSE (the shape; the level is the kept quotes') [measured values in the log].
 */
import { describe, expect, it } from 'vitest';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import { normCdf } from '../../src/quant/normal.js';
import { VOLATILITY_MODELS } from '../../src/cache/snapshot.js';
import { replayChainView } from './chainQuality.js';

const DAY = 86400;

describe('sparse expiries on real marks', () => {
  for (const id of ['maksm05', 'schepal'] as const) {
    it(`${id}: thinned expiries are 'sparse', shaped by their neighbours, levelled by their quotes`, () => {
      const full = replayChainView(id);
      const obs = full.observationTimestamp;
      const expiries = [...new Set(full.options.map((o) => o.expirationTimestamp))].sort((a, b) => a - b);
      // Thin every other expiry from the third on (the first two stay: the hours-to-expiry one and its neighbour),
      // keeping n = 1, 2, 3, 4 strikes nearest the forward in turn; the last expiry is thinned too (one neighbour).
      const thin = new Map<number, number>();
      let n = 1;
      expiries.forEach((e, i) => {
        if (i >= 2 && (i % 2 === 0 || i === expiries.length - 1)) {
          thin.set(e, n);
          n = (n % 4) + 1;
        }
      });
      const keep = new Set<string>();
      for (const [e, cnt] of thin) {
        const opts = full.options.filter((o) => o.expirationTimestamp === e);
        const F = opts[0]!.forward;
        const strikes = [...new Set(opts.map((o) => o.strike))].sort((a, b) => Math.abs(Math.log(a / F)) - Math.abs(Math.log(b / F))).slice(0, cnt);
        for (const o of opts) if (strikes.includes(o.strike)) keep.add(o.instrument);
      }
      const view = { ...full, options: full.options.filter((o) => !thin.has(o.expirationTimestamp) || keep.has(o.instrument)) };
      const fit = fitChain(view);
      const fullFit = fitChain(full);
      const fullSlices = fullFit.models.find((m) => m.model === 'SVI')!.slices;
      for (const model of VOLATILITY_MODELS) {
        const mf = fit.models.find((m) => m.model === model)!;
        const served = buildModelSurface(model, mf.slices);
        for (const [e, cnt] of thin) {
          const s = mf.slices.find((x) => x.expirationTimestamp === e)!;
          const label = `${id} ${model} ${new Date(e * 1000).toISOString().slice(0, 10)} (${cnt} quotes)`;
          expect(s, label).toBeDefined();
          expect(s.quotes.length, label).toBe(cnt);
          expect(s.fit.status, label).toBe('sparse');
          expect(s.fit.method, label).toMatch(/^sparse \(\d quotes?\): shape (interpolated linearly in T between|of the (shorter|longer) neighbour)/);
          const iv = (K: number): number => served.impliedVol(s.T, K, s.forward);
          for (const q of s.quotes) expect(Math.abs(100 * (iv(q.strike) - q.markIv)), `${label} at ${q.strike}`).toBeLessThan(1);
          const lo = Math.min(...s.quotes.map((q) => q.strike));
          const hi = Math.max(...s.quotes.map((q) => q.strike));
          const mLo = Math.min(...s.quotes.map((q) => q.markIv));
          const mHi = Math.max(...s.quotes.map((q) => q.markIv));
          for (let j = 0; j <= 50; j++) {
            const v = iv(lo + ((hi - lo) * j) / 50);
            expect(v, label).toBeGreaterThanOrEqual(0.5 * mLo);
            expect(v, label).toBeLessThanOrEqual(2 * mHi);
          }
          // Against the removed marks of the full chain between that expiry's 25-delta strikes.
          const ref = fullSlices.find((x) => x.expirationTimestamp === e)!;
          const kept = new Set(s.quotes.map((q) => q.strike));
          const central = ref.quotes.filter((q) => {
            if (kept.has(q.strike)) return false; // asserted above; the removed marks are the reference
            const sd = q.markIv * Math.sqrt(ref.T);
            const d = normCdf((-q.k + 0.5 * sd * sd) / sd);
            return d >= 0.25 && d <= 0.75;
          });
          // The SHAPE is what the neighbours give (the level is the kept quotes', asserted above): errors about
          // their median. With one quote the level cannot be better than that quote (schepal 22MAY20: the kept
          // 9250 mark sits 5 vp below its neighbours' marks, so the whole slice does).
          const raw = central.map((q) => 100 * (iv(q.strike) - q.markIv));
          const med = [...raw].sort((a, b) => a - b)[raw.length >> 1]!;
          const errs = raw.map((x) => Math.abs(x - med));
          const worst = Math.max(...errs);
          console.log(`${label}: T ${((e - obs) / DAY).toFixed(1)} d, level offset ${med.toFixed(2)} vp, worst shape error vs removed 25-delta marks ${worst.toFixed(2)} vp over ${errs.length}`);
          // Rule: 2 vp plus the worst all-strike RMSE of the neighbours the shape came from (a shape cannot be
          // better than the fits it is taken from: schepal's 29MAY20 SABR fit is 2.99 vp off its own marks).
          const sources = mf.slices.filter((x) => !thin.has(x.expirationTimestamp) && x.T >= 2 / 365);
          const below = sources.filter((x) => x.T < s.T).at(-1);
          const above = sources.find((x) => x.T > s.T);
          const srcRmse = Math.max(below?.fit.rmseVolPts ?? 0, above?.fit.rmseVolPts ?? 0);
          expect(worst, `${label} (neighbours' RMSE ${srcRmse.toFixed(2)})`).toBeLessThan(2 + srcRmse);
        }
      }
    });
  }
});

describe('the first expiry (hours to expiry) seeds no other', () => {
  it('a sparse second expiry takes its shape from the longer neighbour only, never from the 12-hour expiry', () => {
    const full = replayChainView('maksm05');
    const expiries = [...new Set(full.options.map((o) => o.expirationTimestamp))].sort((a, b) => a - b);
    const second = expiries[1]!;
    const opts = full.options.filter((o) => o.expirationTimestamp === second);
    const F = opts[0]!.forward;
    const strikes = [...new Set(opts.map((o) => o.strike))].sort((a, b) => Math.abs(Math.log(a / F)) - Math.abs(Math.log(b / F))).slice(0, 3);
    const view = { ...full, options: full.options.filter((o) => o.expirationTimestamp !== second || strikes.includes(o.strike)) };
    expect((expiries[0]! - full.observationTimestamp) / DAY).toBeLessThan(1);
    for (const mf of fitChain(view).models) {
      const s = mf.slices.find((x) => x.expirationTimestamp === second)!;
      expect(s.fit.status).toBe('sparse');
      expect(s.fit.method, mf.model).toMatch(/shape of the longer neighbour \(T = 0\.0069 y\)/);
    }
  });
});
