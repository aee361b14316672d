/**
 * Integration on 127.0.0.1 (the embedded simulators, the real adapters over real sockets, the default
 * configuration: Deribit, OKX and Bybit on one shared market): every endpoint that takes volatilityModel answers
 * for every model of src/domain/volatilityModels.ts (SVI, SABR, VANNA_VOLGA, ESSVI) on every configured pair; the surface endpoint shows parameters, fit diagnostics and the no-arbitrage status; iVSummary
 * shows every figure with 24 h changes from the simulator's pre-run history (adapters/simulator/history.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { VOLATILITY_MODELS } from '../../src/domain/volatilityModels.js';
import { MODEL_REGISTRY } from '../../src/quant/models/index.js';
import { optionsAreInverse } from '../../src/domain/markets.js';
import { http, startTestService, waitFor } from '../helpers/service.js';

const MODELS = VOLATILITY_MODELS;

let svc: RunningService;
let B: string;

const surfaceUrl = (source: string, base: string, quote: string, model: string) =>
  `${B}/api/v1/global/data/surface?source=${source}&baseCurrency=${base}&quoteCurrency=${quote}&volatilityModel=${model}`;
const summaryUrl = (source: string, base: string, quote: string, model: string) =>
  `${B}/api/v1/global/data/iVSummary?source=${source}&baseCurrency=${base}&quoteCurrency=${quote}&volatilityModel=${model}`;

beforeAll(async () => {
  svc = await startTestService();
  B = svc.url;
  await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 90_000, '/ready 200');
  // every model of every configured pair served
  // every model of every configured pair served, over at least two expiries: /ready only needs a first surface,
  // and a sparse chain (XRP/USDC) may have sent tickers of its first expiry only by then
  await waitFor(
    () => svc.cache.expected().every((p) => MODELS.every((m) => (svc.cache.getSurface(p.source, p.pair, m)?.slices.length ?? 0) >= 2)),
    60_000,
    'all models calibrated over two expiries or more',
  );
});

afterAll(async () => {
  await svc?.stop();
});

describe('every model on the simulated default', () => {
  it('surface: parameters, fit diagnostics, listed expiries with forwards, and the arbitrage status, for every pair and model', async () => {
    expect(svc.cache.expected().length).toBeGreaterThanOrEqual(4);
    /** Vanna-Volga: rmse10Delta minus the spread allowance, per expiry over a day, every pair. */
    const vvExcess: number[] = [];
    for (const { source, pair } of svc.cache.expected()) {
      for (const model of MODELS) {
        const r = await http('GET', surfaceUrl(source, pair.base, pair.quote, model));
        const label = `${source} ${pair.base}/${pair.quote} ${model}`;
        expect(r.status, label).toBe(200);
        expect(r.body.volatilityModel).toBe(model);
        expect(r.body.expiries.length, label).toBeGreaterThanOrEqual(2);
        expect(r.body.arbitrage, label).toMatchObject({ butterflyFree: true, calendarFree: true });
        expect(r.body.arbitrage.counts.fits).toBeGreaterThanOrEqual(r.body.expiries.length);
        for (const e of r.body.expiries) {
          expect(Object.keys(e.parameters).sort(), label).toEqual([...MODEL_REGISTRY[model].parameterNames].sort());
          expect(e.forwardPrice).toBeGreaterThan(0);
          expect(e.atmVol).toBeGreaterThan(0.05);
          expect(e.atmVol).toBeLessThan(3);
          const d = e.diagnostics;
          expect(d.status, label).toMatch(/^(fitted|repaired|sparse|kept-previous)$/);
          expect(d.butterflyFree).toBe(true);
          expect(typeof d.calendarFree).toBe('boolean');
          expect(d.quotesUsed).toBeGreaterThan(0);
          expect(d.calibrationMs).toBeGreaterThan(0);
          expect(d.rmseVolPts).toBeGreaterThanOrEqual(0);
          expect(d.maxErrorVolPts).toBeGreaterThanOrEqual(d.rmseVolPts);
          expect(d.arbitrageCheck).toMatch(model === 'SVI' ? /g\(k\)/ : /density/);
          // Between the 10-delta strikes every model fits the simulated exchange's marks within that exchange's own
          // bid-ask IV spread one standard deviation from the money (about the middle of that range),
          // 2 (0.5 + 0.35 z + 0.5 / sqrt(days to expiry, at least 1/4)) vol pts at z = 1 (adapters/simulator/
          // deribitMessages.ts). The marks are Merton jump-diffusion prices with mark noise (market.ts markIv), outside
          // every model's family, so no model fits them exactly. Expiries less than a day away are left out: their
          // marks have flat plateaus beyond 2 standard deviations (MARK_NOISE.plateauDays), which no smooth smile
          // follows; the quality warnings speak for them. A model whose own best unconstrained fit of the expiry
          // (diagnostics.referenceRmseVolPts, the service's reference) cannot reach the marks, as SABR, a diffusion,
          // cannot on jump-driven short-dated wings (measured 2.0 to 3.1 vol pts between the 10-delta strikes at 3
          // days to 4 weeks), is allowed that irreducible model error on top: tolerance = spread + reference RMSE.
          // What is tested is that calibration and repairs add nothing beyond the model's best fit.
          const spread = 2 * (0.85 + 0.5 / Math.sqrt(Math.max(e.T * 365, 0.25)));
          // Vanna-Volga is no least-squares fit (three pillars per side, no reference): its goal is on the median over
          // expiries (issue 11), checked after the loop.
          if (d.rmse10DeltaVolPts !== null && e.T >= 1 / 365) {
            if (model === 'VANNA_VOLGA') vvExcess.push(d.rmse10DeltaVolPts - spread);
            else {
              const modelError = model === 'SVI' ? 0 : (d.referenceRmseVolPts ?? 0);
              expect(d.rmse10DeltaVolPts, `${label} T=${e.T} reference ${d.referenceRmseVolPts}`).toBeLessThan(spread + modelError);
            }
          }
        }
      }
    }
    // Vanna-Volga: the median expiry lies within its spread between the 10-delta strikes
    expect(vvExcess.length).toBeGreaterThan(5);
    const sorted = [...vvExcess].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)]!, `Vanna-Volga excess over the spread: ${sorted.map((x) => x.toFixed(2)).join(' ')}`).toBeLessThan(0);
  });

  it('byStrike, byDelta, vanilla and riskScenarios answer for every model on every pair, near the marks', async () => {
    for (const { source, pair } of svc.cache.expected()) {
      const { base, quote } = pair;
      const snap = svc.cache.getSurface(source, pair, 'SVI')!;
      const slice = snap.slices[Math.min(3, snap.slices.length - 1)]!;
      // the quote nearest the forward and one about a quarter of the way into the put wing
      const near = [...slice.quotes].sort((a, b) => Math.abs(a.k) - Math.abs(b.k))[0]!;
      const expiry = slice.expirationTimestamp;
      for (const model of MODELS) {
        const label = `${source} ${base}/${quote} ${model}`;
        const common = { baseCurrency: base, quoteCurrency: quote, source, volatilityModel: model, expirationTimestamp: expiry };
        // The cross-endpoint comparisons below hold on ONE surface: a recalibration landing between two requests
        // (the simulator re-draws its mark noise every minute, which moves a fit by up to a vol point) restarts
        // the round, at most 10 times.
        for (let attempt = 1; ; attempt++) {
          const sequenceBefore = svc.cache.getSurface(source, pair, model)!.sequence;
          const s = await http('POST', `${B}/api/v1/global/data/iV/byStrike`, [{ ...common, instrumentId: 's', strike: near.strike }]);
          expect(s.status, label).toBe(200);
          const modelSlice = svc.cache.getSurface(source, pair, model)!.slices.find((x) => x.expirationTimestamp === expiry)!;
          const markNow = modelSlice.quotes.find((q) => q.strike === near.strike)!.markIv;
          // Rule: the served IV at a quoted strike is within the model's own largest error on that slice (its
          // diagnostics, measured on the served surface) plus the exchange's bid-ask spread at the money,
          // 2 (0.5 + 0.5 / sqrt(days)) vol pts: the marks may refresh between the request and this read.
          const tol = (modelSlice.fit.maxErrorVolPts + 2 * (0.5 + 0.5 / Math.sqrt(Math.max(slice.T * 365, 0.25)))) / 100;
          expect(Math.abs(s.body[0].impliedVolatility - markNow), label).toBeLessThanOrEqual(tol);
          const d = await http('POST', `${B}/api/v1/global/data/iV/byDelta`, [
            { ...common, instrumentId: 'c25', delta: 0.25 },
            { ...common, instrumentId: 'atm', delta: 0.5 },
            { ...common, instrumentId: 'p25', delta: 0.75 },
          ]);
          expect(d.status, label).toBe(200);
          expect(d.body.map((x: { volatilityModel: string }) => x.volatilityModel)).toEqual([model, model, model]);
          for (const x of d.body) {
            expect(x.impliedVolatility).toBeGreaterThan(0.05);
            expect(x.impliedVolatility).toBeLessThan(3);
          }
          const inverse = optionsAreInverse(source, pair);
          const v = await http('POST', `${B}/api/v1/global/optionValuation/vanilla`, [
            { ...common, instrumentId: 'v', amount: 1, vanillaOptionType: 'CALL', inverse, priceMethod: source, strike: near.strike },
          ]);
          expect(v.status, label).toBe(200);
          expect(v.body[0].valueBase).toBeGreaterThan(0);
          const rs = await http('POST', `${B}/api/v1/global/scenarios/riskScenarios`, {
            riskScenarioInstruments: [{ ...common, instrumentId: 'r', size: 1, instrumentType: 'PUT', inverse, priceMethod: source, strike: near.strike }],
            riskScenarioParameters: { priceRangeSteps: 2, priceRange: 0.1, volRangeUp: 0.05, volRangeDown: 0.05 },
          });
          expect(rs.status, label).toBe(200);
          const res = rs.body.riskScenarioInstrumentResults[0];
          expect(res.volatilityModel).toBe(model);
          if (svc.cache.getSurface(source, pair, model)!.sequence !== sequenceBefore && attempt < 10) continue;
          expect(Math.abs(v.body[0].impliedVolatility - s.body[0].impliedVolatility), label).toBeLessThan(0.01);
          expect(Math.abs(res.volatility - s.body[0].impliedVolatility), label).toBeLessThan(0.01);
          break;
        }
      }
    }
    // euBarrier stays SVI only (interface-spec)
    const snap = svc.cache.getSurface('DERIBIT', { base: 'BTC', quote: 'USD' }, 'SVI')!;
    const eb = await http('POST', `${B}/api/v1/global/optionValuation/euBarrier`, [
      { instrumentId: 'b', baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SABR', europeanBarrierOptionType: 'CALL', expirationTimestamp: snap.slices[3]!.expirationTimestamp, strike: 90000, barrierType: 'UP_AND_OUT', barrier: 120000 },
    ]);
    expect(eb.status).toBe(400);
    expect(eb.body.details[0].path).toBe('[0].volatilityModel');
  });

  it('iVSummary: every listed expiry and constant maturity, with 24 h changes from the pre-run history, consistent with byDelta', async () => {
    for (const { source, pair } of svc.cache.expected()) {
      const { base, quote } = pair;
      for (const model of MODELS) {
        const label = `${source} ${base}/${quote} ${model}`;
        // the answer together with the surface it was computed from: a sparse chain gains expiries while the test
        // runs, so the cache's surface read after the request is only that surface while nothing newer came in
        const { r, snap } = await waitFor(async () => {
          const x = await http('GET', summaryUrl(source, base, quote, model));
          const after = svc.cache.getSurface(source, pair, model)!;
          const ok = x.status === 200 && x.body.diffReferenceTimestamp !== null && after.observationTimestamp === x.body.observationTimestamp;
          return ok ? { r: x, snap: after } : null;
        }, 60_000, `24 h reference point of ${label}`);
        const b = r.body;
        expect(b).toMatchObject({ baseCurrency: base, quoteCurrency: quote, source, volatilityModel: model });
        // the reference point is the history point nearest to 24 h before the surface, within 30 minutes
        expect(Math.abs(b.observationTimestamp - 86400 - b.diffReferenceTimestamp)).toBeLessThanOrEqual(1800);
        expect(b.volatilityConstMat.map((e: { constMat: string }) => e.constMat)).toEqual(['1W', '2W', '1M', '2M', '3M', '6M', '9M']);
        // one listed entry per fitted slice of that surface
        expect(b.volatilityListed.map((e: { expirationTimestamp: number }) => e.expirationTimestamp).sort((x: number, y: number) => x - y), label).toEqual(
          snap.slices.map((s) => s.expirationTimestamp).sort((x, y) => x - y),
        );
        const lastListed = Math.max(...b.volatilityListed.map((e: { expirationTimestamp: number }) => e.expirationTimestamp));
        for (const e of [...b.volatilityListed, ...b.volatilityConstMat]) {
          expect(e.atmVol, label).toBeGreaterThan(0.05);
          expect(e.diffAtmVol === null || Math.abs(e.diffAtmVol) < 1).toBe(true);
          if (e.expirationTimestamp > lastListed) continue; // beyond the last expiry a delta may have no strike (docs)
          for (const k of ['delta25Skew', 'delta10Skew', 'delta25Bfly', 'delta10Bfly']) expect(e[k], `${label} ${e.constMat ?? e.expirationTimestamp} ${k}`).not.toBeNull();
          // the 10-delta butterfly holds more wing than the 25-delta one; RR grows in size with the wing
          expect(e.delta10Bfly).toBeGreaterThan(e.delta25Bfly - 0.005);
        }
        // constant maturities have a 24 h change (the seeded history covers the whole last day)
        for (const e of b.volatilityConstMat) {
          expect(e.diffAtmVol, `${label} ${e.constMat}`).not.toBeNull();
          if (e.expirationTimestamp <= lastListed) expect(e.diffDelta25Skew, `${label} ${e.constMat}`).not.toBeNull();
        }
        // listed expiries that were listed 24 h ago have their change too
        expect(b.volatilityListed.some((e: { diffAtmVol: number | null }) => e.diffAtmVol !== null), label).toBe(true);
      }
    }
    // the spec's source words are aliases
    expect((await http('GET', summaryUrl('XCHG_A', 'BTC', 'USD', 'SVI'))).body.source).toBe('XCHG_A');
    // the RR is the byDelta vols of the same smile: RR = vol(call delta 0.25) - vol(call delta 0.75)
    const snap = svc.cache.getSurface('DERIBIT', { base: 'BTC', quote: 'USD' }, 'SABR')!;
    const e = snap.slices[4]!;
    const item = (id: string, delta: number) => ({ instrumentId: id, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SABR', expirationTimestamp: e.expirationTimestamp, delta });
    const [d, s] = await Promise.all([
      http('POST', `${B}/api/v1/global/data/iV/byDelta`, [item('c', 0.25), item('p', 0.75)]),
      http('GET', summaryUrl('DERIBIT', 'BTC', 'USD', 'SABR')),
    ]);
    const listed = s.body.volatilityListed.find((x: { expirationTimestamp: number }) => x.expirationTimestamp === e.expirationTimestamp);
    const tol = d.body[0].observationTimestamp === s.body.observationTimestamp ? 1e-9 : 0.005;
    expect(Math.abs(d.body[0].impliedVolatility - d.body[1].impliedVolatility - listed.delta25Skew)).toBeLessThan(tol);
  });
});
