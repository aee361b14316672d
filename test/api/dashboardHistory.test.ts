/**
 * The dashboard's reads of the history store (issue 24 item 6) on a running service with a store and the simulated
 * 24 h past (seeded just in time around now - 24 h, adapters/simulator/history.ts): GET /dashboard/api/history reads the store (one point per 5 min, the points GET
 * iVSummary/history answers at interval 5m over the same range; a listed expiry's points are the iVSummary answers
 * as of their times); GET /dashboard/api/state?asOf= is the state of what was served then (the surface of GET
 * surface?asOf, the 24 h changes of GET iVSummary?asOf), and says clearly what it cannot show (404 with the kept
 * range, 400 for a future time). The live state's 24 h changes, read from the store, equal GET iVSummary's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';

let svc: RunningService;
let B: string;
const pairQ = 'source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD';
const sel = `${pairQ}&volatilityModel=SVI`;

beforeAll(async () => {
  svc = await startTestService({ PAIRS: 'DERIBIT:BTC/USD', HISTORY_FLUSH_MS: '200' });
  B = svc.url;
  await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 60_000, '/ready 200');
  await waitFor(async () => (await http('GET', `${B}/api/v1/global/data/surface?${sel}`)).body.expiries?.length >= 8, 30_000, 'whole listing');
  // the simulated past (about 24 h ago) and the live surfaces are in the store
  await waitFor(async () => (await http('GET', `${B}/dashboard/api/history?${sel}&constMat=1M`)).body.points?.length >= 3, 60_000, 'stored past');
}, 120_000);

afterAll(async () => {
  await svc?.stop();
});

const figures = (p: any) => ({ atmVol: p.atmVol, delta25Skew: p.delta25Skew, delta25Bfly: p.delta25Bfly, delta10Skew: p.delta10Skew, delta10Bfly: p.delta10Bfly });

describe('dashboard reads of the history store', () => {
  it('the series of a constant maturity are the points of iVSummary/history at 5 min over the same range', async () => {
    // the past is seeded just in time around now - 24 h and live points keep coming: a pair of answers is compared
    // only when the dashboard answered the same before and after the REST request (nothing was written between)
    const settled = (t: number, to: number) => t < to - 10;
    let d: any;
    let h: any;
    for (let attempt = 1; ; attempt++) {
      d = await http('GET', `${B}/dashboard/api/history?${sel}&constMat=1M`);
      h = await http('GET', `${B}/api/v1/global/data/iVSummary/history?${sel}&constMat=1M&interval=5m&from=${d.body.from}&to=${d.body.to}`);
      const again = await http('GET', `${B}/dashboard/api/history?${sel}&constMat=1M&asOf=${d.body.to}`);
      const same = JSON.stringify(again.body.points?.filter((p: any) => settled(p.t, d.body.to))) === JSON.stringify(d.body.points.filter((p: any) => settled(p.t, d.body.to)));
      if (same || attempt === 5) break;
    }
    expect(d.status).toBe(200);
    expect(d.body.origin).toBe('store');
    expect(d.body.intervalS).toBe(300);
    expect(d.body.to - d.body.from).toBe(25 * 3600);
    // the seeded points of about 24 h ago and the live ones
    expect(d.body.points.length).toBeGreaterThanOrEqual(3);
    expect(d.body.points[0].t).toBeLessThan(svc.clock.now() - 20 * 3600);
    expect(h.status).toBe(200);
    // the newest seconds may be committed between the two requests: compared up to 10 s before the range's end
    expect(d.body.points.filter((p: any) => settled(p.t, d.body.to))).toEqual(
      h.body.points.filter((p: any) => settled(p.observationTimestamp, d.body.to)).map((p: any) => ({ t: p.observationTimestamp, ...figures(p) })),
    );
    // one point per 5 min bucket, oldest first
    const buckets = d.body.points.map((p: any) => Math.floor(p.t / 300));
    expect(new Set(buckets).size).toBe(buckets.length);
    expect([...buckets].sort((a, b) => a - b)).toEqual(buckets);
  });

  it('the series of a listed expiry are the iVSummary answers as of their times', async () => {
    const s = (await http('GET', `${B}/api/v1/global/data/surface?${sel}`)).body;
    const expiry = s.expiries[4].expirationTimestamp as number;
    const d = await http('GET', `${B}/dashboard/api/history?${sel}&expiry=${expiry}`);
    expect(d.status).toBe(200);
    expect(d.body.origin).toBe('store');
    expect(d.body.points.length).toBeGreaterThanOrEqual(2);
    await svc.history.recorder!.flush();
    for (const p of [d.body.points[0], d.body.points[Math.floor(d.body.points.length / 2)], d.body.points.at(-1)]) {
      // as of the instant the point's surface was published (observed at p.t, served from a moment later: the
      // calibration's own time, longer on a loaded machine)
      const row = (await svc.history.store!.query('SELECT max(published) AS p FROM surfaces WHERE model = $1 AND obs = $2', ['SVI', p.t]))[0]!;
      const asOf = typeof row.p === 'number' ? row.p : p.t; // a seeded past point: published at its observation time
      const a = await http('GET', `${B}/api/v1/global/data/iVSummary?${sel}&asOf=${asOf}`);
      expect(a.status).toBe(200);
      expect(a.body.observationTimestamp).toBe(p.t);
      const e = a.body.volatilityListed.find((x: any) => x.expirationTimestamp === expiry);
      expect({ t: p.t, ...figures(e) }).toEqual(p);
    }
  });

  it('the state as of a past time is the surface served then, with the 24 h changes of iVSummary?asOf', async () => {
    // a surface served now is a past one a few seconds later (the service recalibrates about every 0.5 s)
    const s0 = (await http('GET', `${B}/api/v1/global/data/surface?${sel}`)).body;
    await waitFor(async () => (await http('GET', `${B}/api/v1/global/data/surface?${sel}`)).body.sequence > s0.sequence + 2, 20_000, 'newer surfaces');
    const asOf = s0.observationTimestamp + 0.25;
    const st = await http('GET', `${B}/dashboard/api/state?${sel}&asOf=${asOf}`);
    expect(st.status).toBe(200);
    expect(st.body.asOf).toBe(asOf);
    const surf = await http('GET', `${B}/api/v1/global/data/surface?${sel}&asOf=${asOf}`);
    expect(surf.status).toBe(200);
    const sf = st.body.surface;
    expect(sf.observationTimestamp).toBe(surf.body.observationTimestamp);
    expect(sf.sequence).toBe(surf.body.sequence);
    expect(sf.observationTimestamp).toBeLessThanOrEqual(asOf);
    expect(sf.term.map((t: any) => t.expirationTimestamp)).toEqual(surf.body.expiries.map((e: any) => e.expirationTimestamp));
    surf.body.expiries.forEach((e: any, i: number) => {
      expect(sf.term[i].atmVol).toBeCloseTo(e.atmVol, 12);
      expect(sf.term[i].forward / e.forwardPrice).toBeCloseTo(1, 12);
    });
    const sum = await http('GET', `${B}/api/v1/global/data/iVSummary?${sel}&asOf=${asOf}`);
    expect(sum.status).toBe(200);
    expect(sum.body.diffReferenceTimestamp).not.toBeNull(); // the seeded point of 24 h before
    const byExpiry = new Map<number, any>(sum.body.volatilityListed.map((e: any) => [e.expirationTimestamp, e]));
    for (const t of sf.term) expect(t.diffAtmVol).toBe(byExpiry.get(t.expirationTimestamp).diffAtmVol);
    expect(sf.dayAgoTimestamp).toBe(sum.body.diffReferenceTimestamp);
    sum.body.volatilityConstMat.forEach((c: any, i: number) => expect(sf.constMat[i].atmVol).toBe(c.atmVol));
    // the other models served then are there too, and the smiles carry their curves
    expect(sf.models).toContain('SVI');
    expect(sf.smiles.length).toBe(surf.body.expiries.length);
    // the series as of that time end there
    const h = await http('GET', `${B}/dashboard/api/history?${sel}&constMat=1M&asOf=${asOf}`);
    expect(h.body.to).toBe(asOf);
    expect(h.body.points.at(-1).t).toBeLessThanOrEqual(asOf);
  });

  it('the live state measures its 24 h changes against the stored point GET iVSummary uses', async () => {
    svc.simulator!.faults.silence(5_000);
    const pair = await waitFor(
      async () => {
        const st = await http('GET', `${B}/dashboard/api/state?${sel}`);
        const sum = await http('GET', `${B}/api/v1/global/data/iVSummary?${sel}`);
        return st.body.surface?.observationTimestamp === sum.body.observationTimestamp ? { st: st.body, sum: sum.body } : null;
      },
      10_000,
      'the same surface in the state and iVSummary',
      100,
    );
    expect(pair.st.asOf).toBeNull();
    expect(pair.st.surface.dayAgoTimestamp).toBe(pair.sum.diffReferenceTimestamp);
    pair.sum.volatilityConstMat.forEach((c: any, i: number) => expect(pair.st.surface.constMat[i].diffAtmVol).toBe(c.diffAtmVol));
  });

  it('says what it cannot show: 404 with the kept range, 400 for a future time', async () => {
    const now = svc.clock.now();
    const before = await http('GET', `${B}/dashboard/api/state?${sel}&asOf=${Math.floor(now - 20 * 86400)}`);
    expect(before.status).toBe(404);
    expect(before.body.message).toMatch(/no SVI surface of DERIBIT BTC\/USD was served at .*history kept from \d{4}-/);
    const future = await http('GET', `${B}/dashboard/api/state?${sel}&asOf=${Math.ceil(now + 3600)}`);
    expect(future.status).toBe(400);
    expect(future.body.message).toMatch(/later than the service clock/);
    const hist = await http('GET', `${B}/dashboard/api/history?${sel}&constMat=1M&asOf=${Math.ceil(now + 3600)}`);
    expect(hist.status).toBe(400);
  });
});

describe('dashboard without a history store (HISTORY_DIR=off)', () => {
  let off: RunningService;
  beforeAll(async () => {
    off = await startTestService({ PAIRS: 'DERIBIT:BTC/USD', HISTORY_DIR: 'off' });
    await waitFor(async () => (await http('GET', `${off.url}/ready`)).status === 200, 60_000, '/ready 200');
  }, 120_000);
  afterAll(async () => {
    await off?.stop();
  });

  it('the series come from the in-memory history, and asOf answers 404 saying why', async () => {
    const d = await waitFor(
      async () => {
        const r = await http('GET', `${off.url}/dashboard/api/history?${sel}&constMat=1M`);
        return r.body.points?.length >= 2 ? r : null;
      },
      30_000,
      'seeded in-memory points',
    );
    expect(d.body.origin).toBe('memory');
    // the in-memory points are the iVSummary figures of the seeded surfaces: the 24 h change of the live answer is
    // measured against one of them
    const sum = await http('GET', `${off.url}/api/v1/global/data/iVSummary?${sel}`);
    const ref = d.body.points.find((p: any) => p.t === sum.body.diffReferenceTimestamp);
    expect(ref).toBeDefined();
    const m1 = sum.body.volatilityConstMat.find((c: any) => c.constMat === '1M');
    expect(m1.atmVol - ref.atmVol).toBe(m1.diffAtmVol);
    const st = await http('GET', `${off.url}/dashboard/api/state?${sel}&asOf=${Math.floor(off.clock.now() - 10)}`);
    expect(st.status).toBe(404);
    expect(st.body.message).toMatch(/no history to answer asOf from: .*HISTORY_DIR=off/);
    const h = await http('GET', `${off.url}/dashboard/api/history?${sel}&constMat=1M&asOf=${Math.floor(off.clock.now() - 10)}`);
    expect(h.status).toBe(404);
    // the live state is unchanged: its 24 h reference from memory
    const live = await http('GET', `${off.url}/dashboard/api/state?${sel}`);
    expect(live.status).toBe(200);
    expect(live.body.asOf).toBeNull();
  });
});
