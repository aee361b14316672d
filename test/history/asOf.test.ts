/**
 * As-of answers on a running service (issue 24): answers recorded live, one round every ~0.4 s, equal number for
 * number the answers asked later with `asOf` = the time they were served at (the surface's observationTimestamp;
 * the service clock for funding), on every data endpoint; the errors of as-of queries (future, before the kept
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
});

afterAll(async () => {
  await svc?.stop();
});

interface Recorded {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: unknown;
  readonly asOf: number;
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
    const requests: Array<{ method: 'GET' | 'POST'; path: string; body?: unknown; obs: (a: any) => number }> = [
      ...['SVI', 'SABR', 'VANNA_VOLGA'].map((m) => ({ method: 'GET' as const, path: `/api/v1/global/data/surface?${pairQ}&volatilityModel=${m}`, obs: (a: any) => a.observationTimestamp })),
      { method: 'GET', path: `/api/v1/global/data/iVSummary?${pairQ}&volatilityModel=SVI`, obs: (a: any) => a.observationTimestamp },
      { method: 'POST', path: '/api/v1/global/optionValuation/vanilla', body: [{ ...base, instrumentId: 'v', vanillaOptionType: 'CALL', strike: K, amount: 1, priceMethod: 'DERIBIT', volatilityModel: 'SABR' }], obs: (a: any) => a[0].observationTimestamp },
      { method: 'POST', path: '/api/v1/global/data/iV/byDelta', body: [{ ...base, instrumentId: 'd', volatilityModel: 'SVI', delta: 0.25 }], obs: (a: any) => a[0].observationTimestamp },
      { method: 'POST', path: '/api/v1/global/data/iV/byStrike', body: [{ ...base, instrumentId: 'k', volatilityModel: 'VANNA_VOLGA', strike: K * 1.1 }], obs: (a: any) => a[0].observationTimestamp },
      { method: 'POST', path: '/api/v1/global/optionValuation/euBarrier', body: [{ ...base, instrumentId: 'b', volatilityModel: 'SVI', europeanBarrierOptionType: 'CALL', strike: K, barrierType: 'UP_AND_OUT', barrier: K * 1.3 }], obs: (a: any) => a[0].observationTimestamp },
      {
        method: 'POST',
        path: '/api/v1/global/scenarios/riskScenarios',
        body: {
          riskScenarioInstruments: [{ ...base, instrumentId: 'r', size: 2, priceMethod: 'DERIBIT', instrumentType: 'PUT', volatilityModel: 'SVI', strike: K }],
          riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 },
        },
        obs: (a: any) => a.riskScenarioInstrumentResults[0].observationTimestamp,
      },
    ];
    const recorded: Recorded[] = [];
    for (let round = 0; round < 5; round++) {
      for (const r of requests) {
        const res = await http(r.method, `${B}${r.path}`, r.body);
        expect(res.status, r.path).toBe(200);
        recorded.push({ method: r.method, path: r.path, body: r.body, asOf: r.obs(res.body), answer: res.body });
      }
      // the forward curve and funding: as of the service clock when answered (they are not stamped per request)
      const fc = await http('GET', `${B}/api/v1/global/data/forwardCurve?${pairQ}`);
      expect(fc.body.sequence).toBeGreaterThan(0);
      recorded.push({ method: 'GET', path: `/api/v1/global/data/forwardCurve?${pairQ}`, asOf: fc.body.observationTimestamp, answer: fc.body });
      const now = svc.clock.now();
      const fundingPath = `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=${Math.floor(now - 7 * 86400)}&endTime=${Math.floor(now)}`;
      const fr = await http('GET', `${B}${fundingPath}`);
      expect(fr.status).toBe(200);
      recorded.push({ method: 'GET', path: fundingPath, asOf: svc.clock.now(), answer: fr.body });
      await new Promise((r) => setTimeout(r, 400));
    }
    // several distinct surfaces were served over the rounds (the test compares more than one instant)
    expect(new Set(recorded.filter((r) => r.path.includes('surface?')).map((r) => r.asOf)).size).toBeGreaterThan(2);
    for (const r of recorded) {
      const res = await http(r.method, `${B}${withAsOf(r.path, r.asOf)}`, r.body);
      expect(res.status, `${r.path} asOf ${r.asOf}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(200);
      expect(res.body, `${r.path} asOf ${r.asOf}`).toEqual(r.answer);
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
    const live = await http('GET', `${B}/api/v1/global/data/iVSummary?${pairQ}&volatilityModel=SVI&asOf=${first.observationTimestamp}`);
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
    await svc.history.recorder!.flush();
    const text = await (await fetch(`${B}/metrics`)).text();
    const rows = (table: string) => Number(new RegExp(`^volsurf_history_rows_total\\{table="${table}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(rows('surfaces')).toBeGreaterThan(10);
    expect(rows('fits')).toBeGreaterThan(10);
    expect(rows('iv_summary')).toBeGreaterThan(0);
    expect(rows('funding')).toBeGreaterThan(0);
    expect(text).toMatch(/^volsurf_history_failed_writes_total 0$/m);
    expect(svc.history.recorder!.stats.surfaces).toBeGreaterThanOrEqual(rows('surfaces'));
  });
});
