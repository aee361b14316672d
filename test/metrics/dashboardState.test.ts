/**
 * The dashboard's server-side state (src/dashboard/state.ts) on hand-built snapshots:
 * - ATM vol and the 25D/10D risk reversal and butterfly against an independent computation: the raw-SVI
 *   smile vol sqrt(w(k)/T) (Gatheral 2004) at strikes found by bisection on the forward Black call delta
 *   N(d1) (erf-based normal CDF, not the service's), and RR = BF = 0 on a flat smile;
 * - the selection (aliases, defaults, unsupported pairs), the smile curves of every model held, the forward
 *   curve tables, the funding history order, and the version key that drives the event stream.
 */
import { describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import type { Clock } from '../../src/domain/clock.js';
import { buildDashboardState, resolveSelection, selectionVersion, SMILE_GRID_POINTS, termPoint } from '../../src/dashboard/state.js';
import { makeSurface } from './helpers.js';

const BTC = { base: 'BTC', quote: 'USD' } as const;
const ETH = { base: 'ETH', quote: 'USD' } as const;

/** Normal CDF from erf (Abramowitz-Stegun 7.1.26 is too coarse; use a 60-term Taylor series of erf, |x| < 4). */
function ncdf(x: number): number {
  const z = x / Math.SQRT2;
  let sum = 0;
  let term = z;
  for (let n = 0; n < 200; n++) {
    sum += term / (2 * n + 1);
    term *= (-z * z) / (n + 1);
  }
  return 0.5 * (1 + (2 / Math.sqrt(Math.PI)) * sum);
}

/** Raw SVI vol at strike K. */
function sviVol(p: { a: number; b: number; rho: number; m: number; sigma: number }, T: number, F: number, K: number): number {
  const k = Math.log(K / F);
  const w = p.a + p.b * (p.rho * (k - p.m) + Math.sqrt((k - p.m) ** 2 + p.sigma ** 2));
  return Math.sqrt(w / T);
}

/** Strike with forward Black call delta `d` on the smile, by bisection in log-strike. */
function strikeAtDelta(d: number, volAt: (K: number) => number, F: number, T: number): number {
  const delta = (k: number) => {
    const K = F * Math.exp(k);
    const s = volAt(K);
    return ncdf((-k + (s * s * T) / 2) / (s * Math.sqrt(T)));
  };
  let lo = -3;
  let hi = 3; // delta decreases in k
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (delta(mid) > d) lo = mid;
    else hi = mid;
  }
  return F * Math.exp((lo + hi) / 2);
}

function setup() {
  const clock: Clock & { t: number } = { t: 1_790_000_100, now() { return this.t; } };
  const cache = new MarketCache(clock, 30, [
    { source: 'DERIBIT', pair: BTC },
    { source: 'DERIBIT', pair: ETH },
  ]);
  return { clock, cache };
}

describe('term structure figures', () => {
  it('ATM vol, 25D and 10D RR/BF equal an independent computation on a raw-SVI smile', () => {
    const snap = makeSurface({ fits: [{}, {}, {}], observationTimestamp: 1_790_000_000 });
    for (const sl of snap.slices) {
      const p = sl.params as { a: number; b: number; rho: number; m: number; sigma: number };
      // the snapshot's forward curve is exact at listed expiries
      const F = snap.forwardCurve.forward(sl.T);
      expect(F / sl.forward).toBeCloseTo(1, 12);
      const vol = (K: number) => sviVol(p, sl.T, F, K);
      const tp = termPoint(snap, sl.expirationTimestamp, sl.fit.rmseVolPts);
      expect(tp.atmVol).toBeCloseTo(vol(F), 12);
      for (const [d, skew, bfly] of [
        [0.25, tp.delta25Skew, tp.delta25Bfly],
        [0.1, tp.delta10Skew, tp.delta10Bfly],
      ] as const) {
        const call = vol(strikeAtDelta(d, vol, F, sl.T));
        const put = vol(strikeAtDelta(1 - d, vol, F, sl.T));
        expect(skew!).toBeCloseTo(call - put, 9);
        expect(bfly!).toBeCloseTo((call + put) / 2 - vol(F), 9);
      }
      // negative rho: puts over calls
      expect(tp.delta25Skew!).toBeLessThan(0);
      expect(tp.delta25Bfly!).toBeGreaterThan(0);
    }
  });

  it('a flat smile has no skew and no butterfly', () => {
    const snap = makeSurface({ params: { a: 0.04, b: 0, rho: 0, m: 0, sigma: 0.1 } });
    const sl = snap.slices[0]!;
    const tp = termPoint(snap, sl.expirationTimestamp, 0);
    expect(tp.delta25Skew).toBeCloseTo(0, 14);
    expect(tp.delta25Bfly).toBeCloseTo(0, 14);
    expect(tp.delta10Skew).toBeCloseTo(0, 14);
  });
});

describe('selection and state', () => {
  it('resolves aliases and defaults; rejects unknown sources and unsupported pairs', () => {
    const { cache } = setup();
    expect(resolveSelection(cache, {})).toEqual({ source: 'DERIBIT', pair: BTC, model: 'SVI' });
    cache.putSurface(makeSurface({ pair: ETH, model: 'SABR' }));
    // the first pair holding a surface, and its only model
    expect(resolveSelection(cache, {})).toEqual({ source: 'DERIBIT', pair: ETH, model: 'SABR' });
    expect(resolveSelection(cache, { source: 'XCHG_A', baseCurrency: 'BTC', quoteCurrency: 'USD' })).toEqual({ source: 'DERIBIT', pair: BTC, model: 'SVI' });
    expect(resolveSelection(cache, { source: 'OKX', baseCurrency: 'ETH', quoteCurrency: 'USD', volatilityModel: 'SVI' })).toEqual({ source: 'OKX', pair: ETH, model: 'SVI' });
    expect(() => resolveSelection(cache, { source: 'NOPE' })).toThrow(RangeError);
    expect(() => resolveSelection(cache, { source: 'BYBIT', baseCurrency: 'XRP', quoteCurrency: 'USDC' })).toThrow(/does not list/);
  });

  it('builds smiles with the curve of every model held, the forward curve tables and the funding history oldest first', () => {
    const { cache, clock } = setup();
    const svi = makeSurface({ observationTimestamp: clock.t - 1, fits: [{}, {}] });
    const sabr = makeSurface({ model: 'SABR', observationTimestamp: clock.t - 1, fits: [{}], params: { a: 0.02, b: 0.05, rho: 0.1, m: 0, sigma: 0.3 } });
    cache.putSurface(svi);
    cache.putSurface(sabr);
    cache.putForwardCurve({ source: 'DERIBIT', pair: BTC, observationTimestamp: svi.observationTimestamp, spot: svi.spot, points: [], curve: svi.forwardCurve, sequence: 4 });
    for (const t of [3600, 7200, 10800]) {
      cache.addFunding({ kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: t * 1e-9, intervalHours: 1, timestamp: 1_789_990_000 + t } as never);
    }
    const sel = resolveSelection(cache, { baseCurrency: 'BTC', quoteCurrency: 'USD' })!;
    // no market data touched yet: the API would answer 503 stale, and the state says so
    expect(buildDashboardState(cache, sel, [], 2_000_000_000).unavailable?.reason).toBe('stale');
    cache.touch('DERIBIT', BTC, clock.t - 1);
    const st = buildDashboardState(cache, sel, [], 2_000_000_000);
    expect(st.selection).toEqual({ source: 'DERIBIT', baseCurrency: 'BTC', quoteCurrency: 'USD', volatilityModel: 'SVI' });
    expect(st.surface!.models).toEqual(['SVI', 'SABR']);
    expect(st.surface!.smiles).toHaveLength(2);
    const [s0, s1] = st.surface!.smiles;
    expect(Object.keys(s0!.fits)).toEqual(['SVI', 'SABR']); // SABR has the first expiry only
    expect(Object.keys(s1!.fits)).toEqual(['SVI']);
    expect(s0!.strikes).toHaveLength(SMILE_GRID_POINTS);
    expect(s0!.strikes[0]).toBe(Math.min(...s0!.quotes.map((q) => q.strike)));
    const sl = svi.slices[0]!;
    const K = s0!.strikes[17]!;
    expect(s0!.fits.SVI![17]).toBeCloseTo(sviVol(sl.params as never, sl.T, sl.forward, K), 10);
    expect(st.forwardCurve!.constMat.map((c) => c.constMat)).toEqual(['1D', '1W', '2W', '1M', '2M', '3M', '6M', '9M', '12M']);
    expect(st.forwardCurve!.constMat.map((c) => c.value)).toEqual(svi.forwardCurve.constMatYields(svi.observationTimestamp).map((c) => c.value));
    expect(st.funding[0]!.points.map((p) => p.timestamp)).toEqual([1_789_993_600, 1_789_997_200, 1_790_000_800]);
    expect(st.unavailable).toBeNull();
  });

  it('the version key changes with a new surface, a new funding point, or the selection', () => {
    const { cache } = setup();
    cache.putSurface(makeSurface());
    const sel = resolveSelection(cache, {})!;
    const v1 = selectionVersion(cache, sel);
    expect(selectionVersion(cache, sel)).toBe(v1);
    cache.putSurface(makeSurface({ sequence: 2 }));
    const v2 = selectionVersion(cache, sel);
    expect(v2).not.toBe(v1);
    cache.addFunding({ kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: 1e-5, intervalHours: 1, timestamp: 1 } as never);
    expect(selectionVersion(cache, sel)).not.toBe(v2);
    expect(selectionVersion(cache, { ...sel, model: 'SABR' })).not.toBe(selectionVersion(cache, sel));
  });
});
