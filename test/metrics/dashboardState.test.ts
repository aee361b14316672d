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
import { buildDashboardState, historySeries, resolveSelection, selectionVersion, smileCoverage, SMILE_GRID_POINTS, termPoint, termWithHistory, type DashboardState } from '../../src/dashboard/state.js';
import { applyPatch, DashboardDiffer, defaultFocusExpiry } from '../../src/dashboard/stream.js';
import { SurfaceHistory, summarizeSurface } from '../../src/cache/history.js';
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
    // stable: the first expected pair and SVI, even while only ETH (SABR) has calibrated (no flip during warm-up)
    expect(resolveSelection(cache, {})).toEqual({ source: 'DERIBIT', pair: BTC, model: 'SVI' });
    expect(resolveSelection(cache, { source: 'XCHG_A', baseCurrency: 'BTC', quoteCurrency: 'USD' })).toEqual({ source: 'DERIBIT', pair: BTC, model: 'SVI' });
    expect(resolveSelection(cache, { source: 'OKX', baseCurrency: 'ETH', quoteCurrency: 'USD', volatilityModel: 'SVI' })).toEqual({ source: 'OKX', pair: ETH, model: 'SVI' });
    expect(() => resolveSelection(cache, { source: 'NOPE' })).toThrow(RangeError);
    expect(() => resolveSelection(cache, { source: 'BYBIT', baseCurrency: 'XRP', quoteCurrency: 'USDC' })).toThrow(/does not list/);
    // a source the service does not follow, named alone: a clear error, not a blank page
    expect(() => resolveSelection(cache, { source: 'BYBIT' })).toThrow(/BYBIT is not followed by this service \(it follows DERIBIT\)/);
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
    expect(s0!.strikes[0]).toBe(Math.min(...s0!.quotes.map((q) => q.strike))); // grid to 7 significant digits
    const sl = svi.slices[0]!;
    const K = s0!.strikes[17]!;
    // drawing precision: 6 significant digits
    expect(Math.abs(s0!.fits.SVI![17]! / sviVol(sl.params as never, sl.T, sl.forward, K) - 1)).toBeLessThan(1e-5);
    // quotes carry the plain forward Black call delta at the mark IV (independent N(d1)) and the model IV
    for (const q of s0!.quotes) {
      const sd = q.markIv * Math.sqrt(sl.T);
      expect(q.delta!).toBeCloseTo(ncdf(Math.log(sl.forward / q.strike) / sd + sd / 2), 5);
      expect(q.modelIv!).toBeCloseTo(sviVol(sl.params as never, sl.T, sl.forward, q.strike), 6);
    }
    // fit deltas: N(d1) with the model's own IV at each grid strike
    const v17 = sviVol(sl.params as never, sl.T, sl.forward, K);
    expect(s0!.fitDeltas.SVI![17]!).toBeCloseTo(ncdf(Math.log(sl.forward / K) / (v17 * Math.sqrt(sl.T)) + (v17 * Math.sqrt(sl.T)) / 2), 5);
    expect(s0!.diagnostics.SVI).toEqual(sl.fit);
    expect(s0!.diagnostics.SABR).toEqual(sabr.slices[0]!.fit);
    expect(s0!.coverage).toEqual({ below: 1, above: 1, oneSided: null, partial: true }); // one quote at F; 3 quotes < 5
    expect(st.funding[0]!.periodsPerYear).toBe(8760);
    expect(st.market).toEqual({ mode: 'live' });
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

describe('partial smiles, 24 h changes and history series', () => {
  it('marks one-sided and sparse smiles', () => {
    expect(smileCoverage([90, 95, 100, 105, 110], 100)).toEqual({ below: 2, above: 2, oneSided: null, partial: false });
    expect(smileCoverage([101, 105, 110, 120, 130, 140], 100)).toEqual({ below: 0, above: 6, oneSided: 'calls', partial: true });
    expect(smileCoverage([80, 90], 100)).toEqual({ below: 2, above: 0, oneSided: 'puts', partial: true });
  });

  it('24 h changes = current minus the history point of 24 h ago (as iVSummary); constant maturities beyond the last expiry are extrapolated', () => {
    const now = makeSurface({ observationTimestamp: 1_790_000_000, fits: [{}, {}, {}] });
    // the same listed expiries a day earlier, another smile
    const other = makeSurface({ observationTimestamp: 1_790_000_000, fits: [{}, {}, {}], params: { a: 0.012, b: 0.09, rho: -0.25, m: 0, sigma: 0.22 } });
    const dayAgo = { observationTimestamp: 1_790_000_000 - 86400 + 60 };
    const past = { ...summarizeSurface(other), observationTimestamp: dayAgo.observationTimestamp };
    const h = new SurfaceHistory();
    expect(h.recordSummary('DERIBIT', BTC, 'SVI', past)).toBe(true);
    const { term, constMat, dayAgoTimestamp } = termWithHistory(now, h);
    expect(dayAgoTimestamp).toBe(dayAgo.observationTimestamp);
    const cur = summarizeSurface(now);
    term.forEach((t, i) => {
      const p = past.listed.find((e) => e.expirationTimestamp === t.expirationTimestamp);
      if (!p) {
        expect(t.diffAtmVol).toBeNull();
        expect(t.dayAgo).toBeNull();
        return;
      }
      expect(t.diffAtmVol).toBe(cur.listed[i]!.atmVol! - p.atmVol!);
      expect(t.diffDelta25Skew).toBe(cur.listed[i]!.delta25Skew! - p.delta25Skew!);
      expect(t.dayAgo!.atmVol).toBe(p.atmVol);
    });
    expect(term.some((t) => t.diffAtmVol !== null)).toBe(true);
    // slices at 7, 30 and 90 days (+ up to 8 h): 3M (91 d), 6M and 9M are extrapolated, 1W..2M are not
    expect(constMat.filter((c) => c.extrapolated).map((c) => c.constMat)).toEqual(['3M', '6M', '9M']);
    constMat.forEach((c, i) => expect(c.diffAtmVol).toBe(cur.constMat[i]!.atmVol! - past.constMat[i]!.atmVol!));
    // without a point near 24 h ago: no changes
    expect(termWithHistory(now, new SurfaceHistory()).term.every((t) => t.diffAtmVol === null)).toBe(true);
    // history series of one expiry / constant maturity, oldest first
    h.record(now);
    const sel = { source: 'DERIBIT' as const, pair: BTC, model: 'SVI' as const };
    const e = now.slices[1]!.expirationTimestamp;
    const series = historySeries(h, sel, { expiry: e });
    expect(series.map((x) => x.t)).toEqual([dayAgo.observationTimestamp, now.observationTimestamp]);
    expect(series[0]!.atmVol).toBe(past.listed[1]!.atmVol);
    expect(series[series.length - 1]!.atmVol).toBe(cur.listed[1]!.atmVol);
    const oneMonth = (x: typeof cur) => x.constMat.find((c) => c.constMat === '1M')!.atmVol;
    expect(historySeries(h, sel, { constMat: '1M' }).map((x) => x.atmVol)).toEqual([oneMonth(past), oneMonth(cur)]);
  });
});

describe('the event stream sends changes only', () => {
  function stateAt(cache: MarketCache, clockT: number): DashboardState {
    const sel = resolveSelection(cache, {})!;
    return buildDashboardState(cache, sel, [], clockT);
  }

  it('a full state first, then patches: the focused expiry at every check, the others at the overview cadence; applyPatch rebuilds the state', () => {
    const { cache, clock } = setup();
    cache.putSurface(makeSurface({ observationTimestamp: clock.t - 1, fits: [{}, {}, {}] }));
    cache.touch('DERIBIT', BTC, clock.t - 1);
    const d = new DashboardDiffer({ overviewEveryMs: 5000 });
    const s1 = stateAt(cache, 1);
    const e1 = d.next(s1, 0, null)!;
    expect(e1.event).toBe('state');
    const full = JSON.parse(e1.data);
    // default focus: the expiry nearest 30 days
    expect(full.focusExpiry).toBe(defaultFocusExpiry(s1.surface!.smiles));
    expect(full.focusExpiry).toBe(s1.surface!.smiles[1]!.expirationTimestamp);
    // nothing changed: nothing sent
    expect(d.next(stateAt(cache, 1), 1000, null)).toBeNull();
    // a new surface (every smile moves): the focused one now, the others later
    const moved = makeSurface({ observationTimestamp: clock.t, sequence: 2, fits: [{}, {}, {}], params: { a: 0.011, b: 0.1, rho: -0.3, m: 0.01, sigma: 0.2 } });
    cache.putSurface(moved);
    const s2 = stateAt(cache, 2);
    const e2 = d.next(s2, 2000, null)!;
    expect(e2.event).toBe('patch');
    const p2 = JSON.parse(e2.data);
    expect(p2.surface.smiles.map((s: any) => s.expirationTimestamp)).toEqual([full.focusExpiry]);
    expect(p2.surface.sequence).toBe(2);
    expect(p2.surface.term).toEqual(JSON.parse(JSON.stringify(s2.surface!.term)));
    expect(p2.surface.order).toBeUndefined(); // same expiries
    expect(p2.funding).toBeUndefined();
    expect(e2.data.length).toBeLessThan(e1.data.length);
    // the overview cadence: the other two
    const e3 = d.next(s2, 5000, null)!;
    const p3 = JSON.parse(e3.data);
    expect(p3.surface.smiles.map((s: any) => s.expirationTimestamp).sort()).toEqual(s2.surface!.smiles.filter((s) => s.expirationTimestamp !== full.focusExpiry).map((s) => s.expirationTimestamp).sort());
    const rebuilt = applyPatch(applyPatch(JSON.parse(e1.data), p2), p3);
    expect(JSON.parse(JSON.stringify({ ...rebuilt, focusExpiry: undefined, feeds: [] }))).toEqual(JSON.parse(JSON.stringify({ ...s2, feeds: [] })));
    // smiles carry the selected model's curve only, unless the tab asks for the others (focused smile)
    cache.putSurface(makeSurface({ observationTimestamp: clock.t, model: 'SABR', fits: [{}, {}, {}] }));
    const s4 = stateAt(cache, 4);
    expect(Object.keys(s4.surface!.smiles[1]!.fits)).toEqual(['SVI', 'SABR']);
    const plain = JSON.parse(new DashboardDiffer().next(s4, 0, null)!.data);
    expect(plain.surface.smiles.map((s: any) => Object.keys(s.fits))).toEqual([['SVI'], ['SVI'], ['SVI']]);
    const others = JSON.parse(new DashboardDiffer({ others: true }).next(s4, 0, null)!.data);
    expect(others.surface.smiles.map((s: any) => Object.keys(s.fits))).toEqual([['SVI'], ['SVI', 'SABR'], ['SVI']]);
  });

  it('funding points are appended, a new selection sends a full state, feed rows only when changed', () => {
    const { cache, clock } = setup();
    cache.putSurface(makeSurface({ observationTimestamp: clock.t - 1 }));
    const f = (t: number) => cache.addFunding({ kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: t * 1e-9, intervalHours: 8, timestamp: t } as never);
    f(1_789_990_000);
    const d = new DashboardDiffer();
    const s1 = stateAt(cache, 1);
    expect(d.next(s1, 0, null)!.event).toBe('state');
    f(1_789_990_000 + 28800);
    const p = JSON.parse(d.next(stateAt(cache, 2), 100, null)!.data);
    expect(p.funding).toEqual([{ instrumentId: 'BTC-PERPETUAL', intervalHours: 8, periodsPerYear: 1095, append: [{ timestamp: 1_790_018_800, interest: 1_790_018_800 * 1e-9 }] }]);
    cache.putSurface(makeSurface({ observationTimestamp: clock.t - 1, model: 'SABR' }));
    const sabr = buildDashboardState(cache, { source: 'DERIBIT', pair: BTC, model: 'SABR' }, [], 3);
    expect(d.next(sabr, 200, null)!.event).toBe('state');
    const row = { source: 'DERIBIT' as const, connected: true, messages: 1, messagesPerSecond: null, lastMessageAgeS: 0, reconnects: 0, reconnectAttempts: 0, nextAttemptInS: null, dropped: 0, stalePairs: [], warmingUpPairs: [] };
    expect(JSON.parse(d.feeds([row], 1)!.data).feeds).toHaveLength(1);
    expect(d.feeds([row], 2)).toBeNull();
    expect(JSON.parse(d.feeds([{ ...row, messages: 2 }], 3)!.data).feeds[0].messages).toBe(2);
  });
});
