/**
 * The iVSummary of a snapshot and the bounded 24 h history (src/cache/history.ts): figures on a constructed
 * surface whose smile is known at every maturity (test/helpers/linearSmileSurface.ts, expected figures by an
 * independent bisection), downsampling, retention, the nearest-point rule with its 30-minute tolerance, and the
 * 24 h changes against a constructed history.
 */
import { describe, expect, it } from 'vitest';
import {
  DIFF_TOLERANCE_S,
  IV_SUMMARY_CONST_MATS,
  SurfaceHistory,
  summarizeSurface,
  withDiffs,
  type IvSummary,
  type IvSummaryEntry,
} from '../../src/cache/history.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { MarketClock } from '../../src/domain/clock.js';
import { expectedFigures, LISTED_DAYS, linearSmileSnapshot } from '../helpers/linearSmileSurface.js';

const OBS = 1_780_000_000;
const BTC = { base: 'BTC', quote: 'USD' } as const;

function entry(expirationTimestamp: number, v: number, constMat?: IvSummaryEntry['constMat']): IvSummaryEntry {
  return { expirationTimestamp, ...(constMat ? { constMat } : {}), atmVol: 0.5 + v, delta25Skew: -0.05 + v, delta10Skew: -0.1 + v, delta25Bfly: 0.01 + v, delta10Bfly: 0.03 + v };
}

function summaryAt(obs: number, v: number, listedExpiries: readonly number[] = [OBS + 86400, OBS + 7 * 86400]): IvSummary {
  return {
    observationTimestamp: obs,
    listed: listedExpiries.map((e) => entry(e, v)),
    constMat: IV_SUMMARY_CONST_MATS.map((c, i) => entry(obs + (i + 1) * 86400, v, c)),
  };
}

describe('summarizeSurface', () => {
  it('gives the known ATM, RR and BF of a linear smile at every listed expiry and constant maturity', () => {
    const snap = linearSmileSnapshot({ obs: OBS, s0: 0.6, s1: -0.2 });
    const s = summarizeSurface(snap);
    expect(s.observationTimestamp).toBe(OBS);
    expect(s.listed.map((e) => e.expirationTimestamp)).toEqual(LISTED_DAYS.map((d) => OBS + d * 86400));
    expect(s.constMat.map((e) => e.constMat)).toEqual(['1W', '2W', '1M', '2M', '3M', '6M', '9M']);
    expect(s.constMat.map((e) => (e.expirationTimestamp - OBS) / 86400)).toEqual([7, 14, 30, 61, 91, 183, 274]);
    const check = (e: IvSummaryEntry, T: number) => {
      const x = expectedFigures(0.6, -0.2, T);
      expect(e.atmVol!).toBeCloseTo(x.atmVol, 12);
      expect(e.delta25Skew!).toBeCloseTo(x.rr25, 9);
      expect(e.delta10Skew!).toBeCloseTo(x.rr10, 9);
      expect(e.delta25Bfly!).toBeCloseTo(x.bf25, 9);
      expect(e.delta10Bfly!).toBeCloseTo(x.bf10, 9);
      expect(e.delta25Skew!).toBeLessThan(0);
    };
    s.listed.forEach((e, i) => check(e, LISTED_DAYS[i]! / 365));
    // constant maturities: interpolated between listed expiries (1W..9M all lie between 3 and 300 days)
    s.constMat.forEach((e) => check(e, (e.expirationTimestamp - OBS) / (365 * 86400)));
    expect(summarizeSurface(snap)).toBe(s); // memoized per immutable snapshot
  });

  it('a flat smile has zero risk reversals and butterflies everywhere', () => {
    const s = summarizeSurface(linearSmileSnapshot({ obs: OBS, s0: 0.45, s1: 0 }));
    for (const e of [...s.listed, ...s.constMat]) {
      expect(e.atmVol!).toBeCloseTo(0.45, 14);
      for (const f of [e.delta25Skew, e.delta10Skew, e.delta25Bfly, e.delta10Bfly]) expect(Math.abs(f!)).toBeLessThan(1e-12);
    }
  });
});

describe('SurfaceHistory', () => {
  it('keeps one point per 5-minute bucket (the first seen) and answers the point nearest 24 h ago within 30 min', () => {
    const h = new SurfaceHistory();
    const t0 = 1_780_000_200; // a bucket boundary (divisible by 300)
    expect(t0 % 300).toBe(0);
    let added = 0;
    for (let t = t0; t < t0 + 7200; t += 60) if (h.recordSummary('DERIBIT', BTC, 'SABR', summaryAt(t, 0))) added++;
    expect(added).toBe(24);
    const pts = h.points('DERIBIT', BTC, 'SABR');
    expect(pts.map((p) => p.observationTimestamp)).toEqual(Array.from({ length: 24 }, (_, i) => t0 + 300 * i));
    // nearest: 1000 s after t0 -> t0 + 900; exactly between two points -> the earlier
    expect(h.nearest('DERIBIT', BTC, 'SABR', t0 + 1000)!.observationTimestamp).toBe(t0 + 900);
    expect(h.nearest('DERIBIT', BTC, 'SABR', t0 + 1050)!.observationTimestamp).toBe(t0 + 900);
    // beyond the tolerance on either side: none
    expect(h.nearest('DERIBIT', BTC, 'SABR', t0 - DIFF_TOLERANCE_S + 1)!.observationTimestamp).toBe(t0);
    expect(h.nearest('DERIBIT', BTC, 'SABR', t0 - DIFF_TOLERANCE_S - 1)).toBeNull();
    expect(h.nearest('DERIBIT', BTC, 'SABR', t0 + 6900 + DIFF_TOLERANCE_S + 1)).toBeNull();
    expect(h.dayAgo('DERIBIT', BTC, 'SABR', t0 + 86400 + 10)!.observationTimestamp).toBe(t0);
    // other keys are separate
    expect(h.nearest('DERIBIT', BTC, 'SVI', t0)).toBeNull();
  });

  it('stays bounded: 30 hours at one point a minute keep at most 25 h of 5-minute points', () => {
    const h = new SurfaceHistory();
    const t0 = 1_780_000_200;
    for (let t = t0; t <= t0 + 30 * 3600; t += 60) h.recordSummary('DERIBIT', BTC, 'SVI', summaryAt(t, 0));
    const pts = h.points('DERIBIT', BTC, 'SVI');
    expect(pts.length).toBe(25 * 12 + 1);
    expect(pts[pts.length - 1]!.observationTimestamp - pts[0]!.observationTimestamp).toBe(25 * 3600);
    // a point older than the retention is refused; an older one inside it (seeding, Kafka restore) is inserted in order
    expect(h.recordSummary('DERIBIT', BTC, 'SVI', summaryAt(t0, 0))).toBe(false);
    const h2 = new SurfaceHistory();
    const ETH = { base: 'ETH', quote: 'USD' } as const;
    for (const t of [t0 + 3600, t0, t0 + 1800, t0 + 1801]) h2.recordSummary('DERIBIT', ETH, 'SVI', summaryAt(t, 0));
    expect(h2.points('DERIBIT', ETH, 'SVI').map((p) => p.observationTimestamp)).toEqual([t0, t0 + 1800, t0 + 3600]);
    // the number of keys is bounded too
    const h3 = new SurfaceHistory({ maxKeys: 2 });
    expect(h3.recordSummary('DERIBIT', BTC, 'SVI', summaryAt(t0, 0))).toBe(true);
    expect(h3.recordSummary('DERIBIT', BTC, 'SABR', summaryAt(t0, 0))).toBe(true);
    expect(h3.recordSummary('DERIBIT', BTC, 'VANNA_VOLGA', summaryAt(t0, 0))).toBe(false);
    expect(h3.size()).toBe(2);
  });

  it('the cache records every surface put into it (cache.history), computing the summary of the snapshot', () => {
    const cache = new MarketCache(new MarketClock(OBS), 30, [{ source: 'DERIBIT', pair: BTC }]);
    const h = cache.history;
    const snap = linearSmileSnapshot({ obs: OBS, s0: 0.6, s1: -0.2, model: 'VANNA_VOLGA' });
    cache.putSurface(snap);
    cache.putSurface(linearSmileSnapshot({ obs: OBS + 10, s0: 0.7, s1: -0.2, model: 'VANNA_VOLGA' })); // same bucket: ignored
    const pts = h.points('DERIBIT', BTC, 'VANNA_VOLGA');
    expect(pts).toHaveLength(1);
    expect(pts[0]).toBe(summarizeSurface(snap));
  });
});

describe('withDiffs: 24 h changes against a constructed history', () => {
  it('is current minus past, matched by expiry and by constant-maturity label; null where nothing matches', () => {
    const past = summaryAt(OBS - 86400, 0, [OBS + 86400, OBS + 7 * 86400]);
    const cur = summaryAt(OBS, 0.02, [OBS + 86400, OBS + 7 * 86400, OBS + 28 * 86400]);
    const d = withDiffs(cur, past);
    expect(d.listed).toHaveLength(3);
    for (const e of [...d.listed.slice(0, 2), ...d.constMat]) {
      for (const k of ['diffAtmVol', 'diffDelta10Skew', 'diffDelta25Skew', 'diffDelta10Bfly', 'diffDelta25Bfly'] as const) expect(e[k]).toBeCloseTo(0.02, 15);
    }
    // the expiry listed since (28 days) has no 24 h change
    expect(d.listed[2]!.diffAtmVol).toBeNull();
    expect(d.listed[2]!.atmVol).toBeCloseTo(0.52, 15);
    // no reference point: every change is null, the figures stay
    const none = withDiffs(cur, null);
    for (const e of [...none.listed, ...none.constMat]) {
      expect([e.diffAtmVol, e.diffDelta10Skew, e.diffDelta25Skew, e.diffDelta10Bfly, e.diffDelta25Bfly]).toEqual([null, null, null, null, null]);
      expect(e.atmVol).not.toBeNull();
    }
  });

  it('on constructed surfaces 24 h apart: the changes of the linear smile figures', () => {
    const h = new SurfaceHistory();
    const then = linearSmileSnapshot({ obs: OBS - 86400 + 120, s0: 0.55, s1: -0.1 });
    h.record(then);
    const now = linearSmileSnapshot({ obs: OBS, s0: 0.6, s1: -0.2 });
    const ref = h.dayAgo('DERIBIT', BTC, 'SVI', now.observationTimestamp);
    expect(ref!.observationTimestamp).toBe(OBS - 86400 + 120);
    const d = withDiffs(summarizeSurface(now), ref);
    d.constMat.forEach((e) => {
      const T = (e.expirationTimestamp - OBS) / (365 * 86400);
      const a = expectedFigures(0.6, -0.2, T);
      const b = expectedFigures(0.55, -0.1, T); // the same constant maturity 24 h earlier
      expect(e.diffAtmVol!).toBeCloseTo(a.atmVol - b.atmVol, 12);
      expect(e.diffDelta25Skew!).toBeCloseTo(a.rr25 - b.rr25, 9);
      expect(e.diffDelta10Bfly!).toBeCloseTo(a.bf10 - b.bf10, 9);
    });
    // the listed expiries of `then` are one day earlier than today's (OBS - 86400 + 120 + d days): no match
    expect(d.listed.every((e) => e.diffAtmVol === null)).toBe(true);
  });
});
