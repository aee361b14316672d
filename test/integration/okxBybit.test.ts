/**
 * Integration on 127.0.0.1: the embedded OKX and Bybit simulators + the service + the real OKX and
 * Bybit adapters over real sockets (SOURCES=OKX,BYBIT). Every endpoint of the slice (vanilla, byStrike,
 * byDelta, forwardCurve, fundingRates, fundingInstruments) for every OKX and Bybit pair of the spec
 * table, with each exchange's convention; heartbeats (OKX text ping/pong, Bybit op ping); reconnection
 * after dropped and silent sockets; a pair the exchange does not list is a 400 naming the item.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BybitFeed } from '../../adapters/bybit/feed.js';
import type { OkxFeed } from '../../adapters/okx/feed.js';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { testNowS } from '../helpers/simClock.js';
import { markTolerance } from '../helpers/tolerance.js';

let svc: RunningService;
let B: string;

const PAIRS = [
  { source: 'OKX', base: 'BTC', quote: 'USD', inverse: true },
  { source: 'OKX', base: 'ETH', quote: 'USD', inverse: true },
  { source: 'BYBIT', base: 'BTC', quote: 'USDC', inverse: false },
  { source: 'BYBIT', base: 'ETH', quote: 'USDC', inverse: false },
  { source: 'BYBIT', base: 'SOL', quote: 'USDC', inverse: false },
] as const;

interface Listed {
  expirationTimestamp: number;
  forwardPrice: number;
  atmVol: number;
  T: number;
}

async function listed(source: string, base: string, quote: string): Promise<{ spot: number; obs: number; expiries: Listed[] }> {
  const r = await http('GET', `${B}/api/v1/global/data/surface?source=${source}&baseCurrency=${base}&quoteCurrency=${quote}&volatilityModel=SVI`);
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
  return { spot: r.body.spotPrice, obs: r.body.observationTimestamp, expiries: r.body.expiries };
}

/** Distinct option expiries (Unix ms) the simulated exchange lists now for `base`. */
function simulatedOptionExpiriesMs(source: string, base: string): number[] {
  const ms =
    source === 'OKX'
      ? svc.simulators.okx!.chains.list('OPTION').filter((i) => i.underlying === base).map((i) => i.expiryMs)
      : svc.simulators.bybit!.chains.list('option', base).map((i) => i.expiryMs);
  return [...new Set(ms.filter((x): x is number => x !== null))].sort((a, b) => a - b);
}

const feedOf = <T>(source: string): T => svc.feeds.find((f) => f.source === source) as unknown as T;

beforeAll(async () => {
  svc = await startTestService(
    { SOURCES: 'OKX,BYBIT' },
    {
      // OKX pings after 50 ms without a frame (so pings happen between pushes); Bybit every 300 ms
      okx: { pingAfterIdleMs: 50, pongTimeoutMs: 2_000, transport: { backoffBaseMs: 200, backoffMaxMs: 1_000 } },
      bybit: { pingIntervalMs: 300, silenceTimeoutMs: 2_000, transport: { backoffBaseMs: 200, backoffMaxMs: 1_000 } },
      okxSimulator: { optionUpdatesPerSecond: 1 },
      bybitSimulator: { optionUpdatesPerSecond: 1 },
    },
  );
  B = svc.url;
  await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 60_000, '/ready 200');
}, 90_000);

afterAll(async () => {
  await svc?.stop();
});

describe('simulated OKX and Bybit end to end', () => {
  it('is ready with exactly the OKX and Bybit pairs of the spec table', async () => {
    const ready = await http('GET', `${B}/ready`);
    expect(ready.body.missing).toEqual([]);
    expect(ready.body.pairs.map((p: { source: string; pair: string }) => `${p.source}:${p.pair}`).sort()).toEqual(
      ['BYBIT:BTC/USDC', 'BYBIT:ETH/USDC', 'BYBIT:SOL/USDC', 'OKX:BTC/USD', 'OKX:ETH/USD'],
    );
    expect(svc.simulators.okx).not.toBeNull();
    expect(svc.simulators.bybit).not.toBeNull();
    expect(svc.simulator).toBeNull();
  });

  it('vanilla for every pair with its own convention: inverse parity and premium-adjusted delta (OKX), linear USDC (Bybit)', async () => {
    for (const p of PAIRS) {
      const { expiries, spot, obs } = await listed(p.source, p.base, p.quote);
      // Every served expiry is one the simulated exchange lists, after now (how many there are depends on the
      // simulated date: after a month-end expiry passes, SOL on Bybit lists only three; a freshly listed or
      // 2-strike far expiry may not have quotes yet).
      const listedS = new Set(simulatedOptionExpiriesMs(p.source, p.base).map((ms) => ms / 1000));
      for (const x of expiries) {
        expect(listedS, `${p.source} ${p.base}`).toContain(x.expirationTimestamp);
        expect(x.expirationTimestamp).toBeGreaterThan(obs);
      }
      expect(expiries.length).toBeGreaterThanOrEqual(2);
      const e = expiries[Math.min(4, expiries.length - 1)]!;
      const K = Number((e.forwardPrice * 1.05).toPrecision(3));
      const base = { baseCurrency: p.base, quoteCurrency: p.quote, source: p.source, priceMethod: p.source, expirationTimestamp: e.expirationTimestamp, strike: K, volatilityModel: 'SVI', amount: 1 };
      const r = await http('POST', `${B}/api/v1/global/optionValuation/vanilla`, [
        { ...base, instrumentId: 'c', vanillaOptionType: 'CALL' },
        { ...base, instrumentId: 'p', vanillaOptionType: 'PUT' },
        { ...base, instrumentId: 'f', vanillaOptionType: 'FORWARD' },
      ]);
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      const [c, put, f] = r.body;
      expect(c.impliedVolatility).toBe(put.impliedVolatility);
      expect(c.impliedVolatility).toBeGreaterThan(0.1);
      expect(c.impliedVolatility).toBeLessThan(3);
      const F = c.forwardPrice;
      if (p.inverse) {
        // coin-margined: C - P = (F - K) / F coin; premium-adjusted deltas differ by K / F
        expect(c.valueBase - put.valueBase).toBeCloseTo((F - K) / F, 10);
        expect(c.deltaBase - put.deltaBase).toBeCloseTo(K / F, 10);
      } else {
        // linear USDC: C - P = (F - K) / S in base units; plain forward deltas differ by 1
        expect(c.valueBase - put.valueBase).toBeCloseTo((F - K) / c.spotPrice, 10);
        expect(c.deltaBase - put.deltaBase).toBeCloseTo(1, 10);
      }
      expect(f.valueBase).toBeCloseTo(c.valueBase - put.valueBase, 10);
      expect(c.vegaBase).toBeGreaterThan(0);
      expect(c.thetaBase).toBeLessThan(0);
      expect(Math.abs(c.spotPrice / spot - 1)).toBeLessThan(0.01);
    }
  });

  it('byStrike is near the exchange marks at listed strikes; byDelta 0.5 near the ATM vol, for every pair', async () => {
    for (const p of PAIRS) {
      const pair = { base: p.base, quote: p.quote } as const;
      const snap = svc.cache.getSurface(p.source, pair, 'SVI')!;
      // the first fitted (not sparse) expiry more than a day away with at least three quotes near the money
      const nearMoney = (sl: (typeof snap.slices)[number]) => sl.quotes.filter((q) => Math.abs(Math.log(q.strike / sl.forward)) < 0.1);
      const slice = snap.slices.find((sl) => sl.T > 1 / 365 && sl.fit.status !== 'sparse' && nearMoney(sl).length > 2)!;
      expect(slice, `${p.source} ${p.base}: a fitted expiry with quotes near the money`).toBeDefined();
      const qs = nearMoney(slice).slice(0, 20);
      const items = qs.map((q, i) => ({ instrumentId: `q${i}`, baseCurrency: p.base, quoteCurrency: p.quote, source: p.source, volatilityModel: 'SVI', expirationTimestamp: slice.expirationTimestamp, strike: q.strike }));
      const r = await http('POST', `${B}/api/v1/global/data/iV/byStrike`, items);
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      r.body.forEach((row: { impliedVolatility: number; instrumentId: string }, i: number) => {
        expect(row.instrumentId).toBe(`q${i}`);
        expect(Math.abs(row.impliedVolatility - qs[i]!.markIv), `K ${qs[i]!.strike}`).toBeLessThanOrEqual(markTolerance(qs[i]!));
      });
      const { expiries } = await listed(p.source, p.base, p.quote);
      const e = expiries[Math.min(3, expiries.length - 1)]!;
      const d = await http('POST', `${B}/api/v1/global/data/iV/byDelta`, [
        { instrumentId: 'atm', baseCurrency: p.base, quoteCurrency: p.quote, source: p.source, volatilityModel: 'SVI', expirationTimestamp: e.expirationTimestamp, delta: 0.5 },
        { instrumentId: 'c25', baseCurrency: p.base, quoteCurrency: p.quote, source: p.source, volatilityModel: 'SVI', expirationTimestamp: e.expirationTimestamp, delta: 0.25 },
      ]);
      expect(d.status).toBe(200);
      expect(d.body[0]).toMatchObject({ instrumentId: 'atm', source: p.source, baseCurrency: p.base, quoteCurrency: p.quote });
      expect(Math.abs(d.body[0].impliedVolatility - e.atmVol)).toBeLessThan(0.015);
      expect(d.body[1].impliedVolatility).toBeGreaterThan(0.1);
    }
  });

  it("forwardCurve: fixed yields are (F/S - 1)/T of each exchange's own forwards, near its simulated basis", async () => {
    const views = { OKX: svc.simulators.okx!.view, BYBIT: svc.simulators.bybit!.view };
    for (const p of PAIRS) {
      const r = await http('GET', `${B}/api/v1/global/data/forwardCurve?source=${p.source}&baseCurrency=${p.base}&quoteCurrency=${p.quote}`);
      expect(r.status).toBe(200);
      expect(r.body.constMatYields).toHaveLength(9);
      const curve = svc.cache.getForwardCurve(p.source, { base: p.base, quote: p.quote })!;
      const far = curve.points.filter((x) => x.T > 30 / 365);
      // every expiry beyond a month that the surface serves has its forward point (how many there are depends on
      // the simulated date and on which far listings have quotes yet: SOL lists none right after a month-end expiry)
      const servedFar = svc.cache.getSurface(p.source, { base: p.base, quote: p.quote }, 'SVI')!.slices.filter((sl) => sl.T > 30 / 365);
      for (const sl of servedFar) expect(far.map((pt) => pt.expirationTimestamp), `${p.source} ${p.base}`).toContain(sl.expirationTimestamp);
      for (const pt of far) {
        const y = (pt.forward / curve.spot - 1) / pt.T;
        // the exchange's annualized basis at T (the forward and the index are printed at different instants
        // and the market moves between them: a few bp of spot, a fraction of a percent a year of basis at T > 30 days)
        expect(Math.abs(y - views[p.source].annualizedBasis(p.base, pt.T))).toBeLessThan(0.01);
      }
      const fy = r.body.fixedYields as Array<{ expirationTimestamp: number; value: number }>;
      expect(fy.length).toBeGreaterThanOrEqual(3);
      // a sane annualized basis beyond a week; hours from expiry, 1 bp of print asynchrony between the
      // forward and the index is already tens of percent a year, so those are not bounded here
      for (const y of fy) if (y.expirationTimestamp - curve.observationTimestamp > 7 * 86400) expect(Math.abs(y.value)).toBeLessThan(0.5);
    }
  });

  it("funding: each exchange's perpetuals with their native interval; rates equal the exchange's REST history", async () => {
    const okx = await http('GET', `${B}/api/v1/global/data/fundingInstruments?source=XCHG_B`);
    expect(okx.status).toBe(200);
    expect(okx.body.map((i: { instrumentId: string; intervalHours: number }) => [i.instrumentId, i.intervalHours]).sort()).toEqual([
      ['BTC-USD-SWAP', 8],
      ['ETH-USD-SWAP', 8],
    ]);
    const bybit = await http('GET', `${B}/api/v1/global/data/fundingInstruments?source=BYBIT`);
    expect(bybit.body.map((i: { instrumentId: string; intervalHours: number }) => [i.instrumentId, i.intervalHours]).sort()).toEqual([
      ['BTCPERP', 8],
      ['ETHPERP', 8],
      ['SOLPERP', 4],
    ]);
    // The REST history is read in the background after the listing (paced per exchange), and a settlement can
    // pass during the test (the simulated clock starts 20 s before 08:00 UTC): wait until the service holds
    // every settlement the exchange's own history shows, then compare them point by point.
    const okxHistory = async (): Promise<Array<{ fundingTime: string; realizedRate: string }>> =>
      (await (await fetch(`${svc.simulators.okx!.restUrl}/api/v5/public/funding-rate-history?instId=ETH-USD-SWAP&limit=5`)).json()).data;
    let now = 0;
    let okxRates: Awaited<ReturnType<typeof http>> = { status: 0, body: [], headers: new Headers() };
    let hist: Awaited<ReturnType<typeof okxHistory>> = [];
    await waitFor(async () => {
      now = Math.floor(testNowS());
      [okxRates, hist] = await Promise.all([
        http('GET', `${B}/api/v1/global/data/fundingRates?source=OKX&instrumentId=ETH-USD-SWAP&startTime=${now - 6 * 86400}&endTime=${now}`),
        okxHistory(),
      ]);
      return okxRates.status === 200 && okxRates.body.length >= 17 && okxRates.body[0]?.timestamp === Number(hist[0]?.fundingTime) / 1000;
    }, 60_000, 'OKX ETH funding history in the service up to the exchange newest settlement');
    expect(okxRates.body.length).toBeGreaterThanOrEqual(17); // 6 days of 8-hourly settlements
    for (let i = 0; i < 5; i++) {
      expect(okxRates.body[i].timestamp).toBe(Number(hist[i]!.fundingTime) / 1000);
      expect(okxRates.body[i].interest).toBe(Number(hist[i]!.realizedRate));
    }
    const bybitHistory = async (): Promise<Array<{ fundingRate: string; fundingRateTimestamp: string }>> =>
      (await (await fetch(`${svc.simulators.bybit!.restUrl}/v5/market/funding/history?category=linear&symbol=SOLPERP&limit=3`)).json()).result.list;
    let sol: Awaited<ReturnType<typeof http>> = { status: 0, body: [], headers: new Headers() };
    let bh: Awaited<ReturnType<typeof bybitHistory>> = [];
    await waitFor(async () => {
      now = Math.floor(testNowS());
      [sol, bh] = await Promise.all([http('GET', `${B}/api/v1/global/data/fundingRates?source=XCHG_C&instrumentId=SOLPERP&startTime=${now - 2 * 86400}&endTime=${now}`), bybitHistory()]);
      return sol.status === 200 && sol.body[0]?.timestamp === Number(bh[0]?.fundingRateTimestamp) / 1000;
    }, 60_000, 'Bybit SOL funding history in the service up to the exchange newest settlement');
    const ts: number[] = sol.body.map((x: { timestamp: number }) => x.timestamp);
    expect(ts.length).toBeGreaterThanOrEqual(11); // 2 days of 4-hourly settlements
    for (let i = 1; i < ts.length; i++) expect(ts[i - 1]! - ts[i]!).toBe(4 * 3600);
    expect(sol.body.slice(0, 3).map((x: { interest: number }) => x.interest)).toEqual(bh.map((x) => Number(x.fundingRate)));
  });

  it('a pair or flag the exchange does not list is a 400 naming the item (OKX SOL/USDC, Bybit BTC/USD, wrong inverse flags)', async () => {
    const { expiries } = await listed('OKX', 'BTC', 'USD');
    const exp = expiries[1]!.expirationTimestamp;
    const okxSol = await http('POST', `${B}/api/v1/global/data/iV/byStrike`, [
      { instrumentId: 'ok', baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'OKX', volatilityModel: 'SVI', expirationTimestamp: exp, strike: 90000 },
      { instrumentId: 'sol', baseCurrency: 'SOL', quoteCurrency: 'USDC', source: 'OKX', volatilityModel: 'SVI', expirationTimestamp: exp, strike: 150 },
    ]);
    expect(okxSol.status).toBe(400);
    expect(okxSol.body.details).toEqual([expect.objectContaining({ path: expect.stringMatching(/^\[1\]\./), message: expect.stringMatching(/OKX does not list SOL\/USDC/) })]);
    const vanilla = await http('POST', `${B}/api/v1/global/optionValuation/vanilla`, [
      { instrumentId: 'b', baseCurrency: 'BTC', quoteCurrency: 'USD', amount: 1, vanillaOptionType: 'CALL', source: 'BYBIT', priceMethod: 'BYBIT', expirationTimestamp: exp, strike: 90000, volatilityModel: 'SVI' },
      { instrumentId: 'i', baseCurrency: 'ETH', quoteCurrency: 'USDC', amount: 1, vanillaOptionType: 'CALL', source: 'XCHG_C', priceMethod: 'XCHG_C', inverse: true, expirationTimestamp: exp, strike: 3000, volatilityModel: 'SVI' },
      { instrumentId: 'o', baseCurrency: 'ETH', quoteCurrency: 'USD', amount: 1, vanillaOptionType: 'PUT', source: 'OKX', priceMethod: 'OKX', inverse: false, expirationTimestamp: exp, strike: 3000, volatilityModel: 'SVI' },
    ]);
    expect(vanilla.status).toBe(400);
    const byPath = Object.fromEntries(vanilla.body.details.map((d: { path: string; message: string }) => [d.path, d.message]));
    expect(byPath['[0].baseCurrency']).toMatch(/BYBIT does not list BTC\/USD/);
    expect(byPath['[1].inverse']).toMatch(/Must be false/);
    expect(byPath['[2].inverse']).toMatch(/Must be true/);
    const fc = await http('GET', `${B}/api/v1/global/data/forwardCurve?source=OKX&baseCurrency=XRP&quoteCurrency=USDC`);
    expect(fc.status).toBe(400);
    // Deribit is not connected in this deployment
    const deribit = await http('GET', `${B}/api/v1/global/data/fundingInstruments?source=DERIBIT`);
    expect(deribit.status).toBe(503);
  });
});

describe('heartbeats and faults', () => {
  it('OKX: text ping answered by pong; Bybit: op ping answered on every socket; no reconnect meanwhile', async () => {
    const okx = feedOf<OkxFeed>('OKX');
    const bybit = feedOf<BybitFeed>('BYBIT');
    const r0 = [okx.stats().reconnects, bybit.stats().reconnects];
    const before = [okx.diagnostics().pongs, bybit.diagnostics().pongs];
    await waitFor(() => okx.diagnostics().pongs > before[0]! + 2 && bybit.diagnostics().pongs > before[1]! + 2, 15_000, 'pongs');
    expect(okx.diagnostics().pingsSent).toBeGreaterThan(0);
    expect(bybit.diagnostics().pingsSent).toBeGreaterThan(0);
    expect([okx.stats().reconnects, bybit.stats().reconnects]).toEqual(r0);
    expect(okx.stats().dropped['ws-error'] ?? 0).toBe(0);
  });

  it('both feeds reconnect after the simulators drop every socket, and fresh surfaces follow', async () => {
    for (const [source, sim] of [['OKX', svc.simulators.okx!], ['BYBIT', svc.simulators.bybit!]] as const) {
      const feed = feedOf<OkxFeed | BybitFeed>(source);
      const pair = source === 'OKX' ? { base: 'BTC', quote: 'USD' } as const : { base: 'ETH', quote: 'USDC' } as const;
      const before = feed.stats().reconnects;
      const obs = svc.cache.getSurface(source, pair, 'SVI')!.observationTimestamp;
      sim.faults.dropAllConnections();
      await waitFor(() => feed.stats().reconnects > before && feed.stats().connected, 20_000, `${source} reconnect`);
      await waitFor(() => svc.cache.getSurface(source, pair, 'SVI')!.observationTimestamp > obs + 1, 20_000, `${source} fresh surface`);
    }
    expect((await http('GET', `${B}/ready`)).status).toBe(200);
  });

  it('a silent OKX socket (no pong) and a silent Bybit socket are reconnected by the watchdogs', async () => {
    for (const [source, sim] of [['OKX', svc.simulators.okx!], ['BYBIT', svc.simulators.bybit!]] as const) {
      const feed = feedOf<OkxFeed | BybitFeed>(source);
      const before = feed.stats().reconnects;
      sim.faults.silence(4_000);
      await waitFor(() => feed.stats().reconnects > before, 20_000, `${source} watchdog reconnect`);
      await waitFor(() => feed.stats().connected, 20_000, `${source} connected again`);
    }
    await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 30_000, 'ready again');
  });
});
