/**
 * The simulated market's 24 h history (adapters/simulator/history.ts) on a fake clock: the pre-run market the
 * simulator serves is the end of the same path the seed chains are printed from (same seed, same steps: the
 * twin printer of the calibration worker), seed
 * points are calibrated just in time (only those the 24 h changes need), and the seed chains are real Deribit
 * tickers of the simulated listing calibrated by the service's own fitChain into the history.
 */
import { describe, expect, it } from 'vitest';
import { historyFitter, prepareSimulatedHistory, TwinMarketPrinter, type HistorySpec, type SeedingTarget } from '../../adapters/simulator/history.js';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import type { ChainFit } from '../../src/domain/chainFit.js';
import type { ChainView } from '../../streams/chainState.js';
import { SurfaceHistory } from '../../src/cache/history.js';
import { Market } from '../../adapters/simulator/market.js';
import { SOURCES, SUPPORTED_PAIRS } from '../../src/domain/markets.js';

const NOW = Date.UTC(2026, 10, 20, 12, 3, 17);

/** Prints each requested step with a twin printer, records the views and fits nothing (fast). */
function recorder(views: ChainView[]): SeedingTarget['fitAt'] {
  let printer: TwinMarketPrinter | null = null;
  return (spec: HistorySpec, n: number) => {
    printer ??= new TwinMarketPrinter(spec);
    const vs = printer.viewsAt(n);
    views.push(...vs);
    return vs.map((v): ChainFit => ({ source: v.source, pair: v.pair, observationTimestamp: v.observationTimestamp, spot: v.spot, points: [], models: [], skipped: [], calibrationMs: 0, version: v.version }));
  };
}

describe('prepareSimulatedHistory', () => {
  it('pre-runs the market from now - hours to now; the seed chains follow the same path and end at its state', async () => {
    let clock = NOW;
    const h = prepareSimulatedHistory({ seed: 7, hours: 1, everyS: 900, clock: () => clock, sources: ['DERIBIT'] });
    expect(h.startMs).toBe(NOW - 3600_000);
    expect(h.market!.now).toBe(NOW); // released to the (fake) real clock
    // an unstepped market of the same seed started now is a different state: the history moved it
    expect(h.market!.spot('BTC')).not.toBe(new Market({ seed: 7, clock: () => NOW }).spot('BTC'));
    // a 1-hour history's points are first needed 23 h from now (24 h after each, less the 10-minute lead):
    // move the clock a day on, then every point is due
    clock = NOW + 24 * 3600_000;
    const all: ChainView[] = [];
    h.start({ fitAt: recorder(all), onSnapshot: () => undefined });
    await h.caughtUp();
    h.stop();
    // 5 seed times (every 15 minutes, both ends; the market stepped every 5) x 4 Deribit pairs
    expect(h.progress()).toMatchObject({ points: 5, total: 5 });
    expect(all).toHaveLength(5 * 4);
    const times = [...new Set(all.map((v) => v.observationTimestamp))];
    expect(times).toEqual(Array.from({ length: 5 }, (_, j) => (NOW - 3600_000 + j * 900_000) / 1000));
    expect(new Set(all.map((v) => `${v.pair.base}/${v.pair.quote}`))).toEqual(new Set(['BTC/USD', 'ETH/USD', 'SOL/USDC', 'XRP/USDC']));
    // the last seed chain is printed at `now` from the twin market: its index equals the pre-run market's
    // spot (printed to 2 decimals), so the served market continues the seeded path
    const last = all.filter((v) => v.observationTimestamp === NOW / 1000);
    const btc = last.find((v) => v.pair.base === 'BTC')!;
    const eth = last.find((v) => v.pair.base === 'ETH')!;
    expect(btc.spot).toBe(Math.round(h.market!.spot('BTC') * 100) / 100);
    expect(eth.spot).toBe(Math.round(h.market!.spot('ETH') * 100) / 100);
    // a real chain: hundreds of BTC options with the exchange's own forwards, futures for the forward curve
    expect(btc.options.length).toBeGreaterThan(300);
    expect(btc.futures.length).toBeGreaterThan(3);
    expect(btc.options.every((o) => o.markIv > 0 && o.forward > 0)).toBe(true);
  });

  it('seeds just in time: with 24 h of history only the points needed in the next 10 minutes are calibrated at start', async () => {
    const h = prepareSimulatedHistory({ seed: 3, hours: 24, clock: () => NOW, sources: ['DERIBIT'] });
    const views: ChainView[] = [];
    h.start({ fitAt: recorder(views), onSnapshot: () => undefined });
    await h.caughtUp();
    // now - 24 h, + 5 min, + 10 min
    expect(h.progress()).toMatchObject({ points: 3, total: 289 });
    expect(views).toHaveLength(3 * 4);
    h.stop();
  });

  it('calibrates the seed chains of the three exchanges with the service fit into the history: every model of every pair has its 24 h-ago point', async () => {
    const clock = NOW;
    const h = prepareSimulatedHistory({ seed: 42, hours: 24, clock: () => clock, leadS: 0 });
    const history = new SurfaceHistory();
    h.start({ fitAt: historyFitter(new ChainFitter()), onSnapshot: (s) => history.record(s) });
    await h.caughtUp();
    h.stop();
    expect(h.progress().points).toBe(1);
    // every pair of the spec's table: the three simulated exchanges share the market
    for (const { source, pair } of SOURCES.flatMap((src) => SUPPORTED_PAIRS[src].map((p) => ({ source: src, pair: p })))) {
      for (const model of ['SVI', 'SABR', 'VANNA_VOLGA'] as const) {
        const ref = history.dayAgo(source, pair, model, NOW / 1000 + 30);
        expect(ref, `${source} ${pair.base}/${pair.quote} ${model}`).not.toBeNull();
        expect(ref!.observationTimestamp).toBe(NOW / 1000 - 86400);
        expect(ref!.constMat).toHaveLength(7);
        expect(ref!.listed.length).toBeGreaterThanOrEqual(3);
        const lastListed = ref!.listed[ref!.listed.length - 1]!.expirationTimestamp;
        for (const e of [...ref!.listed, ...ref!.constMat]) {
          expect(e.atmVol!).toBeGreaterThan(0.05);
          expect(e.atmVol!).toBeLessThan(3);
          // within the listed expiries every figure exists; beyond the last one (SOL and XRP list about a month)
          // the constant-vol extrapolation of a steep smile may leave no strike with that delta (null)
          if (e.expirationTimestamp > lastListed) continue;
          for (const f of [e.delta25Skew, e.delta10Skew, e.delta25Bfly, e.delta10Bfly]) expect(f, `${source} ${pair.base} ${model} ${e.constMat ?? e.expirationTimestamp}`).not.toBeNull();
        }
      }
    }
  });
});
