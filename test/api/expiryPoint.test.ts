/**
 * The API's per-(snapshot, expiry) market point (src/cache/expiryPoint.ts expiryPoint) on the real 878-option Deribit
 * chain, every model: the precomputed smile gives exactly the surface's own implied vol (VolSurface.impliedVol at
 * the same T and forward) before the first expiry, at and between listed expiries, beyond the last, and at the
 * observation instant; the point is computed once per snapshot and expiry.
 */
import { describe, expect, it } from 'vitest';
import { expiryPoint, MIN_T_YEARS } from '../../src/cache/expiryPoint.js';
import { SECONDS_PER_YEAR } from '../../src/domain/time.js';
import { VOLATILITY_MODELS } from '../../src/cache/snapshot.js';
import { readFileSync } from 'node:fs';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { ChainState } from '../../streams/chainState.js';
import { calibrateChain } from '../../src/cache/snapshotBuilder.js';

const BTC = { base: 'BTC', quote: 'USD' } as const;
const state = new ChainState('DERIBIT', BTC);
for (const line of readFileSync(new URL('../../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url), 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const r = normalizeDeribit(JSON.parse(line), 0);
  if (r.ok) for (const e of r.events) if (e.kind === 'option' || e.kind === 'future' || e.kind === 'index') state.apply(e);
}
const surfaces = calibrateChain(state.view(), 1).surfaces;

describe('expiryPoint', () => {
  for (const model of VOLATILITY_MODELS) {
    it(`${model}: the same vol as the surface at every kind of expiry and strike`, () => {
      const snap = surfaces.find((x) => x.model === model)!;
      const obs = snap.observationTimestamp;
      const listed = snap.slices.map((s) => s.expirationTimestamp);
      const expiries = [obs, obs + 600, ...listed, ...listed.slice(1).map((e, i) => Math.round((e + listed[i]!) / 2)), listed.at(-1)! + 90 * 86400];
      let checked = 0;
      for (const e of expiries) {
        const p = expiryPoint(snap, e);
        const T = Math.max(e - obs, 0) / SECONDS_PER_YEAR;
        expect(p.T).toBe(T);
        expect(p.forward).toBe(snap.forwardCurve.forward(T));
        for (const m of [0.3, 0.7, 0.95, 1, 1.05, 1.5, 3]) {
          const K = p.forward * m;
          expect(p.vol(K), `${e} ${m}`).toBe(snap.surface.impliedVol(Math.max(T, MIN_T_YEARS), K, p.forward));
          checked++;
        }
        expect(() => p.vol(0)).toThrow(RangeError);
        expect(expiryPoint(snap, e)).toBe(p); // computed once per snapshot and expiry
      }
      expect(checked).toBeGreaterThan(100);
    });
  }
});
