/**
 * As-of answers on a running service (issue 24): answers recorded live, one round every ~0.4 s, equal number for
 * number the answers asked later with `asOf` = the time they were served at (the service clock right after the
 * answer, or right before the request when a newer surface was published in between), on every data endpoint;
 * exactly at a surface's publication time that surface, a microsecond before it the one before; the errors of as-of queries (future, before the kept
 * range, a bad value) are clear 4xx; and the series endpoints answer JSON, CSV and Parquet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';

let svc: RunningService;
let B: string;
const pairQ = 'source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD';

beforeAll(async () => {
  svc = await startTestService({ PAIRS: 'DERIBIT:BTC/USD', SIM_HISTORY_HOURS: '2', HISTORY_FLUSH_MS: '200' });
  B = svc.url;
  await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 60_000, '/ready 200');
  await waitFor(async () => (await http('GET', `${B}/api/v1/global/data/surface?${pairQ}&volatilityModel=SVI`)).body.expiries?.length >= 8, 30_000, 'whole listing');
  // the funding history is fetched after the feed connects (at some simulated starts, after /ready)
  await waitFor(async () => (await http('GET', `${B}/api/v1/global/data/fundingInstruments?source=DERIBIT`)).body.some?.((i: any) => i.instrumentId === 'BTC-PERPETUAL' && i.points > 0), 60_000, 'funding history');
});

afterAll(async () => {
  await svc?.stop();
});

interface Recorded {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: unknown;
  /** Service clock just before the request and just after its answer, Unix s. */
  readonly before: number;
  readonly after: number;
  readonly answer: unknown;
}

const withAsOf = (path: string, asOf: number): string => `${path}${path.includes('?') ? '&' : '?'}asOf=${asOf}`;

describe('as-of', () => {
  it('answers every data endpoint as it was answered then, number for number', async () => {
    const s0 = (await http('GET', `${B}/api/v1/global/data/surface?${pairQ}&volatilityModel=SVI`)).body;
    const expiry = s0.expiries[3].expirationTimestamp as number;
    const F = s0.expiries[3].forwardPrice as number;
    const K = Math.round(F / 1000) * 1000;
    const base = { baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', expirationTimestamp: expiry };
    const requests: Array<{ method: 'GET' | 'POST'; path: string; body?: unknown}> = [
      ...['SVI', 'SABR', 'VANNA_VOLGA'].map((m) => ({ method: 'GET' as const, path: `/api/v1/global/data/surface?${pairQ}&volatilityModel=${m}` })),
      { method: 'GET', path: `/api/v1/global/data/iVSummary?${pairQ}&volatilityModel=SVI` },
      { method: 'POST', path: '/api/v1/global/optionValuation/vanilla', body: [{ ...base, instrumentId: 'v', vanillaOptionType: 'CALL', strike: K, amount: 1, priceMethod: 'DERIBIT', volatilityModel: 'SABR' }] },
      { method: 'POST', path: '/api/v1/global/data/iV/byDelta', body: [{ ...base, instrumentId: 'd', volatilityModel: 'SVI', delta: 0.25 }] },
      { method: 'POST', path: '/api/v1/global/data/iV/byStrike', body: [{ ...base, instrumentId: 'k', volatilityModel: 'VANNA_VOLGA', strike: K * 1.1 }] },
      { method: 'POST', path: '/api/v1/global/optionValuation/euBarrier', body: [{ ...base, instrumentId: 'b', volatilityModel: 'SVI', europeanBarrierOptionType: 'CALL', strike: K, barrierType: 'UP_AND_OUT', barrier: K * 1.3 }] },
      {
        method: 'POST',
        path: '/api/v1/global/scenarios/riskScenarios',
        body: {
          riskScenarioInstruments: [{ ...base, instrumentId: 'r', size: 2, priceMethod: 'DERIBIT', instrumentType: 'PUT', volatilityModel: 'SVI', strike: K }],
          riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 },
        },
      },
    ];
    // each answer with the service clock just before the request and just after the answer: it was computed from
    // what was published at some instant between the two
    const recorded: Recorded[] = [];
    const ask = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
      const before = svc.clock.now();
      const res = await http(method, `${B}${path}`, body);
      expect(res.status, path).toBe(200);
      recorded.push({ method, path, body, before, after: svc.clock.now(), answer: res.body });
    };
    for (let round = 0; round < 5; round++) {
      for (const r of requests) await ask(r.method, r.path, r.body);
      await ask('GET', `/api/v1/global/data/forwardCurve?${pairQ}`);
      const now = svc.clock.now();
      await ask('GET', `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=${Math.floor(now - 7 * 86400)}&endTime=${Math.floor(now)}`);
      await new Promise((r) => setTimeout(r, 400));
    }
    // several distinct surfaces were served over the rounds (the test compares more than one instant)
    expect(new Set(recorded.filter((r) => r.path.includes('surface?')).map((r) => (r.answer as any).sequence)).size).toBeGreaterThan(2);
    let atAfter = 0;
    for (const r of recorded) {
      const asOf = async (t: number) => (await http(r.method, `${B}${withAsOf(r.path, t)}`, r.body)).body;
      const after = await asOf(r.after);
      if (JSON.stringify(after) === JSON.stringify(r.answer)) {
        atAfter++;
        continue;
      }
      // a newer surface was published between the answer and the clock read: the answer is the one at `before`...
      const atBefore = await asOf(r.before);
      if (JSON.stringify(atBefore) === JSON.stringify(r.answer)) continue;
      // ...unless its surface was itself published during the request (both happen on a loaded machine, where a
      // request takes longer than the time between two surfaces): then as of the instant the last of the surfaces
      // and curves it names (by observation time) was published, inside [before, after]
      const obs = [...JSON.stringify(r.answer).matchAll(/"observationTimestamp":([0-9.e+]+)/g)].map((m) => Number(m[1]));
      expect(obs.length, `${r.path} as of ${r.before} or ${r.after}: an answer that names no surface`).toBeGreaterThan(0);
      const model = /volatilityModel\W+([A-Z_]+)/.exec(`${r.path} ${JSON.stringify(r.body ?? '')}`)?.[1] ?? 'SVI';
      await svc.history.recorder!.flush();
      const pub = (await svc.history.store!.query(
        `SELECT max(published) AS p FROM (SELECT published FROM surfaces WHERE model = '${model}' AND obs IN (${obs.join(',')})
         UNION ALL SELECT published FROM forward_curves WHERE obs IN (${obs.join(',')}))`,
      ))[0]!.p as number;
      expect(pub, `${r.path}: the surfaces it names were published during the request`).toBeGreaterThanOrEqual(r.before);
      expect(pub).toBeLessThanOrEqual(r.after);
      expect(await asOf(pub), `${r.path} as of ${r.before}, ${pub} or ${r.after}`).toEqual(r.answer);
    }
    expect(atAfter).toBeGreaterThan(recorded.length / 2);
    // exactly at the instant a surface was published, and just before it: that surface, and the one before
    const store = svc.history.store!;
    for (const r of recorded.filter((x) => x.path.includes('/surface?'))) {
      const a = r.answer as any;
      const row = (await store.query('SELECT published FROM surfaces WHERE source = $1 AND pair = $2 AND model = $3 AND sequence = $4 AND obs = $5', ['DERIBIT', 'BTC/USD', a.volatilityModel, a.sequence, a.observationTimestamp]))[0]!;
      const at = await http('GET', `${B}${withAsOf(r.path, row.published as number)}`);
      expect(at.body).toEqual(a);
      const justBefore = await http('GET', `${B}${withAsOf(r.path, (row.published as number) - 1e-6)}`);
      if (justBefore.status === 200) expect(justBefore.body.sequence).toBeLessThan(a.sequence);
    }
  });

  it('says clearly what it cannot answer', async () => {
    const now = svc.clock.now();
    const future = await http('GET', `${B}/api/v1/global/data/surface?${pairQ}&volatilityModel=SVI&asOf=${now + 3600}`);
    expect(future.status).toBe(400);
    expect(future.body.message).toMatch(/later than the service clock/);
    const before = await http('GET', `${B}/api/v1/global/data/surface?${pairQ}&volatilityModel=SVI&asOf=${now - 30 * 86400}`);
    expect(before.status).toBe(404);
    expect(before.body.message).toMatch(/history kept from \d{4}-\d\d-\d\dT.* to \d{4}-/);
    const bad = await http('POST', `${B}/api/v1/global/data/iV/byStrike?asOf=yesterday`, [{ instrumentId: 'k', baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: now + 86400 * 30, strike: 100000 }]);
    expect(bad.status).toBe(400);
  });

  it('serves the iVSummary and surface series as JSON, CSV and Parquet', async () => {
    const now = svc.clock.now();
    const q = `${pairQ}&volatilityModel=SVI&from=${now - 3600}&to=${now}&interval=1m`;
    const j = await http('GET', `${B}/api/v1/global/data/iVSummary/history?${q}&constMat=1M`);
    expect(j.status).toBe(200);
    expect(j.body.points.length).toBeGreaterThan(0);
    for (const p of j.body.points) expect(p.constMat).toBe('1M');
    // the first point is the first surface the service served: its figures are the iVSummary answer of that surface
    const first = j.body.points[0];
    await svc.history.recorder!.flush();
    const published = (await svc.history.store!.query('SELECT published FROM surfaces WHERE model = $1 AND obs = $2 AND sequence = $3', ['SVI', first.observationTimestamp, first.sequence]))[0]!.published as number;
    const live = await http('GET', `${B}/api/v1/global/data/iVSummary?${pairQ}&volatilityModel=SVI&asOf=${published}`);
    expect(live.body.observationTimestamp).toBe(first.observationTimestamp);
    const m1 = live.body.volatilityConstMat.find((e: any) => e.constMat === '1M');
    expect(first.atmVol).toBe(m1.atmVol);
    expect(first.delta25Skew).toBe(m1.delta25Skew);
    const c = await fetch(`${B}/api/v1/global/data/iVSummary/history?${q}&constMat=1M&format=csv`);
    expect(c.headers.get('content-type')).toMatch(/text\/csv/);
    const lines = (await c.text()).trim().split('\n');
    expect(lines[0]).toBe('observationTimestamp,sequence,constMat,expirationTimestamp,atmVol,delta25Skew,delta10Skew,delta25Bfly,delta10Bfly');
    expect(lines.length - 1).toBe(j.body.points.length);
    expect(Number(lines[1]!.split(',')[4])).toBe(first.atmVol);
    const pq = await fetch(`${B}/api/v1/global/data/surface/history?${q}&format=parquet`);
    expect(pq.status).toBe(200);
    const bytes = Buffer.from(await pq.arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    const sj = await http('GET', `${B}/api/v1/global/data/surface/history?${q}`);
    expect(sj.body.surfaces.length).toBeGreaterThan(0);
    expect(Object.keys(sj.body.surfaces[0].expiries[0].parameters)).toEqual(['a', 'b', 'rho', 'm', 'sigma']);
    const tooMany = await http('GET', `${B}/api/v1/global/data/iVSummary/history?${pairQ}&volatilityModel=SVI&from=${now - 90 * 86400}&to=${now}&interval=1m`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toMatch(/coarser interval/);
  });

  it('counts what it writes on /metrics', async () => {
    await waitFor(() => svc.history.recorder!.stats.surfaces > 10, 30_000, 'surfaces recorded');
    await svc.history.recorder!.flush();
    const text = await (await fetch(`${B}/metrics`)).text();
    const rows = (table: string) => Number(new RegExp(`^volsurf_history_rows_total\\{table="${table}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(rows('surfaces')).toBeGreaterThan(10);
    expect(rows('fits')).toBeGreaterThan(10);
    expect(rows('iv_summary')).toBeGreaterThan(0);
    expect(rows('funding')).toBeGreaterThan(0);
    expect(text).toMatch(/^volsurf_history_failed_writes_total 0$/m);
    // the series' rendered-day cache: three days asked twice, the two whole days inside served the second time
    const now = svc.clock.now();
    const q = `${B}/api/v1/global/data/iVSummary/history?${pairQ}&volatilityModel=SVI&from=${now - 3 * 86400}&to=${now}&interval=1h`;
    const [a, b] = [await http('GET', q), await http('GET', q)];
    expect(b.body).toEqual(a.body);
    const after = await (await fetch(`${B}/metrics`)).text();
    const n = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(after)?.[1]);
    expect(n('volsurf_history_series_cache_hits_total')).toBeGreaterThanOrEqual(2);
    expect(n('volsurf_history_series_cache_misses_total')).toBeGreaterThanOrEqual(2);
    expect(n('volsurf_history_series_cache_bytes')).toBeGreaterThanOrEqual(0);
    expect(svc.history.recorder!.stats.surfaces).toBeGreaterThanOrEqual(rows('surfaces'));
  });
});
