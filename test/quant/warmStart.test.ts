/**
 * Warm refits (`warm: true` with `previous`, issue 12 item 1): calibrateSvi and calibrateSabr started from the
 * previous fit alone (and calibrateVannaVolga's pillar least squares from the previous pillar vols), after every mark of the expiry moved by +-0.2 vol point, land on the same smile as a cold fit
 * of the moved marks (within 0.01 vol point at every quote), with fewer optimizer iterations. On every expiry of 7
 * quotes or more of the real 2026-05-26 Deribit BTC chain (data/replay), unweighted as the service fits.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadReplayChain, otmQuotesByExpiry } from '../../adapters/replay/chains.js';
import { calibrateSabr } from '../../src/quant/sabrCalibration.js';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import { calibrateSvi } from '../../src/quant/sviCalibration.js';
import { calibrateVannaVolga, vannaVolgaImpliedVol } from '../../src/quant/vannaVolga.js';
import { sviImpliedVol } from '../../src/quant/svi.js';

const chain = loadReplayChain(fileURLToPath(new URL('../../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url)));
const expiries = otmQuotesByExpiry(chain).filter((e) => e.quotes.length >= 7 && e.T > 1 / 365);

describe('warm refits equal cold fits of the moved marks', () => {
  it('has expiries to test', () => expect(expiries.length).toBeGreaterThanOrEqual(8));

  it.each(expiries.map((e) => [new Date(e.expirationTimestamp * 1000).toISOString().slice(0, 10), e] as const))('%s: SVI and SABR', (_name, e) => {
    const quotes = e.quotes.map((q) => ({ k: q.k, iv: q.iv, bidIv: q.bidIv, askIv: q.askIv }));
    const moved = quotes.map((q, i) => ({ ...q, iv: q.iv + (i % 2 ? 0.002 : -0.002) }));
    const sviOpts = { weighting: 'uniform', robust: false } as const;
    const sviBefore = calibrateSvi(quotes, e.T, sviOpts);
    const sviCold = calibrateSvi(moved, e.T, sviOpts);
    const sviWarm = calibrateSvi(moved, e.T, { ...sviOpts, previous: sviBefore.params, warm: true });
    for (const q of moved) expect(100 * Math.abs(sviImpliedVol(sviWarm.params, q.k, e.T) - sviImpliedVol(sviCold.params, q.k, e.T))).toBeLessThan(0.01);
    expect(sviWarm.iterations).toBeLessThan(sviCold.iterations);

    const sabrOpts = { beta: 1, weighting: 'uniform', maxOutlierFraction: 0 } as const;
    const sabrBefore = calibrateSabr(quotes, e.forward, e.T, sabrOpts);
    const sabrCold = calibrateSabr(moved, e.forward, e.T, sabrOpts);
    const sabrWarm = calibrateSabr(moved, e.forward, e.T, { ...sabrOpts, previous: sabrBefore.params, warm: true });
    for (const q of moved) {
      const K = e.forward * Math.exp(q.k);
      expect(100 * Math.abs(sabrImpliedVol(sabrWarm.params, e.forward, K, e.T) - sabrImpliedVol(sabrCold.params, e.forward, K, e.T))).toBeLessThan(0.01);
    }
    expect(sabrWarm.iterations).toBeLessThan(sabrCold.iterations);

    // Vanna-Volga: the pillar least squares started from the previous fit's pillar vols
    const vvBefore = calibrateVannaVolga(quotes, e.forward, e.T);
    const vvCold = calibrateVannaVolga(moved, e.forward, e.T);
    const vvWarm = calibrateVannaVolga(moved, e.forward, e.T, { previousPillars: vvBefore.params });
    for (const q of moved) {
      const K = e.forward * Math.exp(q.k);
      expect(100 * Math.abs(vannaVolgaImpliedVol(vvWarm.params, e.forward, K, e.T) - vannaVolgaImpliedVol(vvCold.params, e.forward, K, e.T))).toBeLessThan(0.01);
    }
  });
});
