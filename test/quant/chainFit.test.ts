/**
 * The three-model chain calibration (src/quant/chain/chainFit.ts) on the real recorded Deribit BTC chains
 * (data/replay: the 878-option chains of 2026-05-26 19:27Z and 18:30Z, the 310-option chain of 2020-05-14,
 * read through the real Deribit normalizer into a ChainState), plus the rejection rule with injected fits.
 *
 * Bounds and why:
 * - near the money, i.e. over the quotes between each served smile's own 10-delta strikes (where the iVSummary
 *   pillars live), the RMSE of every model on every 2026 expiry is at most 2 vol points: that is below the
 *   median bid-ask IV spread of those quotes on the same chains (0.9 to 2.7 vol pts, measured in
 *   test/calibration/models.test.ts), i.e. inside the market's own uncertainty [measured: SVI 1.47, SABR 1.11,
 *   VV 0.39, all on the 4-day or shorter expiries]; on expiries of 2 months and more at most 0.5 [0.37];
 * - near-identical inputs (every mark moved by +-0.01 vol pt, alternately) give near-identical parameters: a
 *   fit that jumped to another local minimum would move rho by tenths, alpha or the pillar vols by percent
 *   [measured largest moves: SVI |d rho| 0.005, |d m| 0.003; SABR |d alpha|/alpha 6e-4, |d rho| 0.003,
 *   |d nu|/nu 0.009; VV pillar vols 4e-4 relative] and the served smiles by under 0.25 vol pt between the
 *   10-delta strikes [measured 0.12, SABR 2026-05-26 18:30Z 0.33 y expiry at its 10-delta edge], where a jump
 *   between minima moves them by vol points.
 */
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { ChainState, type ChainView } from '../../streams/chainState.js';
import { buildSnapshots } from '../../src/cache/snapshotBuilder.js';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import { FitMemory } from '../../src/quant/chain/fitMemory.js';
import { fitChain, fitExpiry, fitModel, type ExpiryFitter } from '../../src/quant/chain/chainFit.js';
import type { EligibleGroup } from '../../src/quant/chain/expiryGroups.js';
import { sliceTotalVariance } from '../../src/quant/chain/modelSurface.js';
import { VOLATILITY_MODELS } from '../../src/cache/snapshot.js';
import { deltaStrikes } from '../../src/quant/smileFigures.js';
import { summarizeParts, summarizeSurface } from '../../src/cache/history.js';

const CHAINS = {
  '2026-1927': 'data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl',
  '2026-1830': 'data/replay/deribit-btc-chain-2026-05-26T1830Z.jsonl',
  '2020': 'data/replay/deribit-btc-chain-2020-05-14T0541Z.jsonl',
} as const;

/** The recorded chain as the service sees it; `bump(i)` is added to the i-th option's mark IV. */
function chainView(file: string, bump: (i: number) => number = () => 0): ChainView {
  const st = new ChainState('DERIBIT', { base: 'BTC', quote: 'USD' });
  let i = 0;
  for (const line of readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = normalizeDeribit(JSON.parse(line), 0);
    if (!r.ok) continue;
    for (const e of r.events) {
      if (e.kind === 'option') st.apply({ ...e, markIv: e.markIv + bump(i++) });
      else if (e.kind === 'future' || e.kind === 'index') st.apply(e);
    }
  }
  return st.view();
}

describe('fitChain on the real Deribit chains', () => {
  const view = chainView(CHAINS['2026-1927']);
  const fit = fitChain(view);
  const servedOf = (m: (typeof fit.models)[number]) => buildModelSurface(m.model, m.slices);

  it('fits every model (SVI, SABR, Vanna-Volga, ESSVI) on every expiry, arbitrage-free, with the diagnostics filled in', () => {
    expect(view.options).toHaveLength(878);
    expect(fit.models.map((m) => m.model)).toEqual([...VOLATILITY_MODELS]);
    for (const m of fit.models) {
      expect(m.slices).toHaveLength(11);
      expect(m.arbitrage!.butterflyFree).toBe(true);
      expect(m.arbitrage!.calendarFree).toBe(true);
      expect(m.arbitrage!.counts.fits).toBe(11);
      expect(m.arbitrage!.counts.rejected).toBe(0);
      for (const s of m.slices) {
        const d = s.fit;
        expect(d.status).toMatch(/^(fitted|repaired)$/);
        expect(d.butterflyFree).toBe(true);
        expect(d.fittedAt).toBe(view.observationTimestamp);
        expect(d.quotesUsed).toBeGreaterThan(0);
        expect(d.quotesUsed).toBeLessThanOrEqual(s.quotes.length);
        expect(d.rmseVolPts).toBeGreaterThanOrEqual(0);
        expect(d.maxErrorVolPts).toBeGreaterThanOrEqual(d.rmseVolPts);
        expect(d.calibrationMs).toBeGreaterThan(0);
        expect(d.quotes10Delta).toBeGreaterThanOrEqual(3);
        // Near the money within 2 vol pts, except on the expiries whose marks no smooth smile follows (all-strike
        // RMSE > 2: 27MAY26 and 29MAY26 with Deribit's flat wing plateaus, 26JUN26), where the quality warnings
        // (ATM > 1 vp, 25-delta > 3 vp) speak instead [10-delta RMSE SVI 2.36,
        // 3.19; SABR 4.43 and 7.42]: the served SVI and SABR are the unweighted least-squares fits to all OTM
        // marks (issue 11), which on those slices trade some of the centre for the wings.
        if (d.rmseVolPts <= 2) expect(d.rmse10DeltaVolPts!, `${m.model} T=${s.T}`).toBeLessThanOrEqual(2);
        // From 2 months on within 0.5 vol pt; SABR within 1 [0.68, 25SEP26]: its three parameters fitted to all
        // marks unweighted (its reference fit) leave more near the money than vega weights did; ESSVI within 1 [0.53,
        // 25SEP26]: three parameters, its curvature tied to its wings.
        if (s.T >= 0.15) expect(d.rmse10DeltaVolPts!, `${m.model} T=${s.T}`).toBeLessThanOrEqual(m.model === 'SABR' || m.model === 'ESSVI' ? 1 : 0.5);
        // the diagnostics' errors are the SERVED smile's (calendar envelope included) against every OTM mark,
        // recomputed here from the parameters
        const errs = s.quotes.map((q) => 100 * (servedOf(m).impliedVol(s.T, q.strike, s.forward) - q.markIv));
        const rmseAll = Math.sqrt(errs.reduce((a, e) => a + e * e, 0) / errs.length);
        expect(d.rmseVolPts).toBeCloseTo(rmseAll, 8);
        expect(d.maxErrorVolPts).toBeCloseTo(Math.max(...errs.map(Math.abs)), 8);
        // the reference gap: the model's own unconstrained fit is no worse than served, and repairs cost < 0.5 vp.
        // The fits minimize the SPREAD-WEIGHTED objective (issue 26), not the unweighted RMSE reported here, so a
        // repair may lower that RMSE a little (measured -2.1e-6 vp): -0.01 vp allowed.
        if (d.referenceRmseVolPts !== null && d.referenceRmseVolPts !== undefined) {
          expect(d.repairCostVolPts!).toBeCloseTo(d.rmseVolPts - d.referenceRmseVolPts, 12);
          expect(d.repairCostVolPts!).toBeGreaterThanOrEqual(-0.01);
          expect(d.repairCostVolPts!).toBeLessThan(0.5);
        }
      }
    }
  });

  it('builds one immutable snapshot per model whose surface is calendar-free and reproduces the slices', () => {
    const r = buildSnapshots(fit, 7);
    expect(r.surfaces.map((s) => s.model)).toEqual([...VOLATILITY_MODELS]);
    expect(r.surface).toBe(r.surfaces[0]);
    for (const snap of r.surfaces) {
      expect(snap.sequence).toBe(7);
      expect(Object.isFrozen(snap) && Object.isFrozen(snap.slices[0]!.fit)).toBe(true);
      expect((snap.surface as unknown as { calendarArbitrageFree(): { arbitrageFree: boolean } }).calendarArbitrageFree().arbitrageFree).toBe(true);
      expect(snap.forwardCurve).toBe(r.forwardCurve!.curve);
      // the iVSummary figures of a snapshot are those of its own surface and curve, computed once (memoized)
      const summary = summarizeSurface(snap);
      expect(summary).toEqual(summarizeParts(snap.observationTimestamp, snap.slices, snap.surface, snap.forwardCurve));
      expect(summarizeSurface(snap)).toBe(summary);
      expect(summary.listed).toHaveLength(snap.slices.length);
      for (const s of snap.slices) {
        // at a listed expiry the surface is the slice's own smile (where not enveloped)
        if (s.fit.calendarRepaired) continue;
        const w = sliceTotalVariance(snap.model, s);
        for (const k of [-0.3, -0.05, 0, 0.05, 0.3]) expect(snap.surface.totalVariance(s.T, k)).toBeCloseTo(w(k), 12);
      }
    }
  });

  it('near-identical inputs give near-identical parameters for each model', () => {
    for (const file of [CHAINS['2026-1927'], CHAINS['2026-1830'], CHAINS['2020']]) {
      const a = file === CHAINS['2026-1927'] ? fit : fitChain(chainView(file));
      const b = fitChain(chainView(file, (i) => (i % 2 ? 1e-4 : -1e-4)));
      for (let m = 0; m < 3; m++) {
        const A = a.models[m]!;
        const B = b.models[m]!;
        expect(B.slices.map((s) => s.expirationTimestamp)).toEqual(A.slices.map((s) => s.expirationTimestamp));
        A.slices.forEach((sa, i) => {
          const pa = sa.params;
          const pb = B.slices[i]!.params;
          const label = `${file} ${A.model} T=${sa.T.toFixed(4)}`;
          const rel = (k: string) => Math.abs(pa[k]! - pb[k]!) / Math.abs(pa[k]!);
          if (A.model === 'SVI' && pa.sigma! > 1) {
            // A near-parabolic slice (sigma several times the quoted span, e.g. 26MAR27: sigma 4.5, a -4.8) has a
            // flat direction in (a, b, m, sigma): the smile is identified, single parameters are not. Only the
            // smile is compared (below).
          } else if (A.model === 'SVI') {
            const wAtm = sa.T * sa.quotes[0]!.markIv ** 2;
            expect(Math.abs(pa.rho! - pb.rho!), label).toBeLessThan(0.04); // [0.030, pitspa 29MAY26]
            expect(Math.abs(pa.m! - pb.m!), label).toBeLessThan(0.01);
            expect(rel('b'), label).toBeLessThan(0.04); // [0.030, pitspa 29MAY26 (plateau marks)]
            expect(rel('sigma'), label).toBeLessThan(0.04);
            expect(Math.abs(pa.a! - pb.a!), label).toBeLessThan(0.05 * wAtm);
          } else if (A.model === 'SABR') {
            expect(rel('alpha'), label).toBeLessThan(0.005);
            expect(Math.abs(pa.rho! - pb.rho!), label).toBeLessThan(0.02);
            expect(rel('nu'), label).toBeLessThan(0.03);
          } else {
            for (const k of ['vol25P', 'volAtm', 'vol25C', 'K25P', 'K25C', 'K10P', 'K10C']) expect(rel(k), `${label} ${k}`).toBeLessThan(0.003);
          }
          // the served smiles differ by less than 0.25 vol pt between the 10-delta strikes
          const wa = sliceTotalVariance(A.model, sa);
          const wb = sliceTotalVariance(A.model, B.slices[i]!);
          const ks = deltaStrikes((K) => Math.sqrt(wa(Math.log(K / sa.forward)) / sa.T), sa.forward, sa.T);
          for (let t = 0; t <= 20; t++) {
            const k = Math.log(ks.K10P! / sa.forward) + (t / 20) * Math.log(ks.K10C! / ks.K10P!);
            expect(100 * Math.abs(Math.sqrt(wa(k) / sa.T) - Math.sqrt(wb(k) / sa.T)), label).toBeLessThan(0.25);
          }
        });
      }
    }
  });
});

describe('rejection rule: the last good slice stays', () => {
  const view = chainView(CHAINS['2026-1927']);
  const groups: EligibleGroup[] = (() => {
    const f = fitChain(view);
    return f.models[0]!.slices.map((s) => ({ expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, quotes: s.quotes }));
  })().slice(6, 9);

  it('a fit left with butterfly arbitrage is rejected; the previous good slice is served, carried to the new T; counted', () => {
    for (const model of VOLATILITY_MODELS) {
      const memory = new FitMemory();
      const obs = view.observationTimestamp;
      const good = fitModel(model, groups, obs, memory);
      expect(good.slices).toHaveLength(3);
      // 10 minutes later, the middle expiry's fit is arbitrageable (injected), the others are fitted normally
      const later = groups.map((g) => ({ ...g, T: g.T - 600 / (365 * 86400) }));
      const badMiddle: ExpiryFitter = (m, g, st, o) => {
        const a = fitExpiry(m, g, st, o);
        return g.expirationTimestamp === groups[1]!.expirationTimestamp ? { ...a, butterflyFree: false, warnings: ['butterfly arbitrage remains: injected'] } : a;
      };
      const r = fitModel(model, later, obs + 600, memory, {}, badMiddle);
      const kept = r.slices[1]!;
      expect(kept.fit.status).toBe('kept-previous');
      expect(kept.fit.fittedAt).toBe(obs);
      expect(kept.fit.rejectedReason).toMatch(/injected/);
      expect(kept.T).toBe(later[1]!.T);
      // the implied vol at each log-moneyness is the previous fit's (SVI exactly; SABR up to its small T-term)
      const before = sliceTotalVariance(model, good.slices[1]!);
      const now = sliceTotalVariance(model, kept);
      for (const k of [-0.2, 0, 0.2]) {
        const d = Math.abs(Math.sqrt(now(k) / kept.T) - Math.sqrt(before(k) / good.slices[1]!.T));
        expect(d, model).toBeLessThan(model === 'SVI' ? 1e-12 : 2e-4);
      }
      expect(r.slices[0]!.fit.status).not.toBe('kept-previous');
      expect(r.arbitrage!.counts).toMatchObject({ fits: 6, rejected: 1, keptPrevious: 1, dropped: 0 });
      // an expiry never fitted well before is left out (dropped), and the surface is built without it
      const fresh = new FitMemory();
      const r2 = fitModel(model, later, obs + 600, fresh, {}, badMiddle);
      expect(r2.slices.map((s) => s.expirationTimestamp)).toEqual([groups[0]!.expirationTimestamp, groups[2]!.expirationTimestamp]);
      expect(r2.skipped[0]).toMatchObject({ expirationTimestamp: groups[1]!.expirationTimestamp });
      expect(r2.arbitrage!.counts).toMatchObject({ fits: 3, rejected: 1, keptPrevious: 0, dropped: 1 });
    }
  });

  it('the worker-side fitter keeps memories apart per (source, pair) and namespace', () => {
    const fitter = new ChainFitter();
    const a = fitter.fit(view);
    const b = fitter.fit(view);
    const h = fitter.fit(view, 'history');
    expect(a.models[1]!.arbitrage!.counts.fits).toBe(11);
    expect(b.models[1]!.arbitrage!.counts.fits).toBe(22);
    expect(h.models[1]!.arbitrage!.counts.fits).toBe(11);
    // deterministic: the same view gives the same parameters
    expect(b.models.map((m) => m.slices.map((s) => s.params))).toEqual(a.models.map((m) => m.slices.map((s) => s.params)));
  });
});
