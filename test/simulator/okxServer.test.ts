/**
 * The OKX simulator over real sockets on 127.0.0.1 (REST and WebSocket on one port): its listing
 * against OKX's real 2025-05-08 listing (expiries, futures aliases, item fields), REST paging and
 * errors, the WebSocket protocol (acks, errors, ping/pong, idle close, request limits), and its numbers
 * against an independent Black-76 (stdlib normal CDF) and OKX's measured Greek conventions.
 * The market clock is frozen where numbers are compared. Waits are generous; nothing asserts on timing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sampleJson } from '../helpers/fixtures.js';
import { OKX_VIEW } from '../../adapters/simulator/exchangeView.js';
import { Market } from '../../adapters/simulator/market.js';
import { startOkxSimulator, type OkxSimulator, type OkxSimulatorOptions } from '../../adapters/simulator/okxServer.js';
import { getJson, WsClient, type Msg } from './exchangeClient.js';
import { N, refBlack76, refD1, sleep, waitFor } from './helpers.js';
import { testClockMs } from '../helpers/simClock.js';

const real = (f: string): Msg[] => sampleJson('okx', f);
/** 2025-05-08 09:00 UTC: after that day's 08:00 expiry and 08:30 listing, as in the recorded listing. */
const FROZEN_2025 = Date.UTC(2025, 4, 8, 9, 0, 0);
const FROZEN = Date.UTC(2026, 4, 26, 19, 27, 44, 123);
const YEAR_MS = 365 * 86_400_000;
const HOUR_MS = 3_600_000;

let sims: OkxSimulator[] = [];
let clients: WsClient[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  for (const s of sims) await s.close();
  sims = [];
  clients = [];
});

async function start(opts: OkxSimulatorOptions = {}): Promise<OkxSimulator> {
  const sim = await startOkxSimulator({ port: 0, clock: testClockMs, ...opts });
  sims.push(sim);
  return sim;
}

async function client(sim: OkxSimulator): Promise<WsClient> {
  const c = await WsClient.connect(sim.url);
  clients.push(c);
  return c;
}

const rest = async (sim: OkxSimulator, path: string) => getJson(`${sim.restUrl}${path}`);

describe('OKX simulator: listing (GET /api/v5/public/instruments)', () => {
  it('lists the expiries, futures and swaps OKX listed on 2025-05-08, with the real items fields', async () => {
    const sim = await start({ clock: () => FROZEN_2025 });
    const recordedOptions = real('crypto-market-raw-data__rest-instruments_OPTION_2025-05-08.json');
    const recordedFutures = real('crypto-market-raw-data__rest-instruments_FUTURES_2025-05-08.json');
    const recordedSwaps = real('crypto-market-raw-data__rest-instruments_SWAP_2025-05-08.json');
    for (const fam of ['BTC-USD', 'ETH-USD']) {
      const r = await rest(sim, `/api/v5/public/instruments?instType=OPTION&instFamily=${fam}`);
      expect(r.status).toBe(200);
      expect(r.body.code).toBe('0');
      const ours: Msg[] = r.body.data;
      const theirs = recordedOptions.filter((x) => x.instFamily === fam);
      expect([...new Set(ours.map((x) => x.expTime))].sort()).toEqual([...new Set(theirs.map((x) => x.expTime))].sort());
      // every field of the real items, with the same value except the instrument's own
      const own = new Set(['instId', 'expTime', 'listTime', 'stk', 'optType']);
      for (const x of ours) {
        expect(Object.keys(x).sort()).toEqual(Object.keys(theirs[0]).sort());
        for (const [k, v] of Object.entries(theirs[0])) if (!own.has(k)) expect(x[k], `${x.instId}.${k}`).toEqual(v);
        expect(x.instId).toBe(`${fam}-${x.instId.split('-')[2]}-${x.stk}-${x.optType}`);
        expect(Number(x.expTime) % 86_400_000).toBe(8 * HOUR_MS);
        expect(Number(x.listTime)).toBeLessThanOrEqual(FROZEN_2025);
      }
      // chain size of the same order as the real one (720 BTC, 640 ETH options)
      expect(ours.length / theirs.length).toBeGreaterThan(0.7);
      expect(ours.length / theirs.length).toBeLessThan(1.5);
      const fut = (await rest(sim, `/api/v5/public/instruments?instType=FUTURES&instFamily=${fam}`)).body.data as Msg[];
      const realFut = recordedFutures.filter((x) => x.instFamily === fam);
      expect(fut.map((x) => [x.instId, x.alias, x.expTime])).toEqual(realFut.map((x) => [x.instId, x.alias, x.expTime]));
      for (const x of fut) for (const [k, v] of Object.entries(realFut[0]!)) if (!['instId', 'alias', 'expTime', 'listTime'].includes(k)) expect(x[k], k).toEqual(v);
      const swap = (await rest(sim, `/api/v5/public/instruments?instType=SWAP&instFamily=${fam}`)).body.data as Msg[];
      expect(swap).toEqual(recordedSwaps.filter((x) => x.instId === `${fam}-SWAP`));
    }
    // strikes around the index: a call and a put per strike, near-the-money step of the recorded size
    const btc = (await rest(sim, '/api/v5/public/instruments?instType=OPTION&uly=BTC-USD')).body.data as Msg[];
    const daily = btc.filter((x) => x.instId.startsWith('BTC-USD-250510-') && x.optType === 'C').map((x) => Number(x.stk));
    expect(btc.filter((x) => x.instId.startsWith('BTC-USD-250510-') && x.optType === 'P')).toHaveLength(daily.length);
    const spot = sim.view.spot('BTC');
    const near = daily.filter((k) => Math.abs(k / spot - 1) < 0.02);
    expect(Math.min(...near.slice(1).map((k, i) => k - near[i]!))).toBe(500);
  });

  it('answers OKX errors for missing or wrong parameters and unknown paths', async () => {
    const sim = await start({ clock: () => FROZEN });
    const noFam = await rest(sim, '/api/v5/public/instruments?instType=OPTION');
    expect(noFam.status).toBe(400);
    expect(noFam.body).toEqual({ code: '50014', msg: 'Parameter instFamily can not be empty.', data: [] });
    expect((await rest(sim, '/api/v5/public/instruments?instType=BOND')).body.code).toBe('51000');
    expect((await rest(sim, '/api/v5/public/instruments')).body.code).toBe('50014');
    expect((await rest(sim, '/api/v5/public/instruments?instType=SPOT')).body).toEqual({ code: '0', msg: '', data: [] });
    expect((await rest(sim, '/api/v5/public/funding-rate-history?instId=BTC-USD-260626')).body.code).toBe('51001');
    expect((await rest(sim, '/api/v5/public/funding-rate-history?instId=BTC-USD-SWAP&limit=401')).body.code).toBe('51000');
    expect((await rest(sim, '/api/v5/nothing')).status).toBe(404);
    const t = await rest(sim, '/api/v5/public/time');
    expect(t.body.data).toEqual([{ ts: String(FROZEN) }]);
  });
});

describe('OKX simulator: funding', () => {
  it('funding-rate-history: 8-hourly settlements newest first, paged with after/before, each the sum of its 8 hourly accruals', async () => {
    const sim = await start({ clock: () => FROZEN });
    const all = (await rest(sim, '/api/v5/public/funding-rate-history?instId=BTC-USD-SWAP')).body.data as Msg[];
    expect(all.length).toBeGreaterThan(80); // 30 days of market history
    expect(all.length).toBeLessThanOrEqual(400);
    const times = all.map((x) => Number(x.fundingTime));
    expect(times[0]).toBe(Math.floor(FROZEN / (8 * HOUR_MS)) * 8 * HOUR_MS);
    for (let i = 1; i < times.length; i++) expect(times[i - 1]! - times[i]!).toBe(8 * HOUR_MS);
    // independent recomputation from the market's hourly accruals and OKX's view constants
    const hourly = sim.market.fundingHistory('BTC', times[times.length - 1]! - 8 * HOUR_MS, times[0]!);
    for (const x of all.slice(0, 10)) {
      const t = Number(x.fundingTime);
      const pts = hourly.filter((p) => p.timestamp > t - 8 * HOUR_MS && p.timestamp <= t);
      expect(pts).toHaveLength(8);
      const want = pts.reduce((s, p) => s + OKX_VIEW.premiumMultiplier * p.interest_1h + OKX_VIEW.premiumOffset / 8, 0);
      expect(Number(x.realizedRate)).toBeCloseTo(want, 14);
      expect(Math.abs(Number(x.fundingRate) - Number(x.realizedRate))).toBeLessThan(1e-7);
      expect(x).toMatchObject({ instId: 'BTC-USD-SWAP', instType: 'SWAP', method: 'next_period', formulaType: 'noRate' });
    }
    // paging backwards with `after` (older than) returns the same sequence without overlap
    const paged: Msg[] = [];
    let after = '';
    for (let i = 0; i < 100; i++) {
      const page = (await rest(sim, `/api/v5/public/funding-rate-history?instId=BTC-USD-SWAP&limit=7${after}`)).body.data as Msg[];
      paged.push(...page);
      if (page.length < 7) break;
      after = `&after=${page[page.length - 1].fundingTime}`;
    }
    expect(paged).toEqual(all);
    const newer = (await rest(sim, `/api/v5/public/funding-rate-history?instId=BTC-USD-SWAP&before=${times[3]}`)).body.data as Msg[];
    expect(newer.map((x) => Number(x.fundingTime))).toEqual(times.slice(0, 3));
  });

  it('funding-rate push: current format, settling at the next 8-hour mark, settFundingRate = the last settlement', async () => {
    const sim = await start({ clock: () => FROZEN });
    const c = await client(sim);
    c.send({ id: 'f1', op: 'subscribe', args: [{ channel: 'funding-rate', instId: 'ETH-USD-SWAP' }] });
    const push = await c.next((m) => m.arg?.channel === 'funding-rate' && m.data);
    const d = push.data[0];
    expect(push.arg).toEqual({ channel: 'funding-rate', instId: 'ETH-USD-SWAP' });
    const next = Math.ceil(FROZEN / (8 * HOUR_MS)) * 8 * HOUR_MS;
    expect(d).toMatchObject({ instId: 'ETH-USD-SWAP', instType: 'SWAP', method: 'current_period', formulaType: 'noRate', settState: 'settled', fundingTime: String(next), nextFundingTime: String(next + 8 * HOUR_MS), ts: String(FROZEN) });
    for (const v of Object.values(d)) expect(typeof v).toBe('string');
    const hist = (await rest(sim, '/api/v5/public/funding-rate-history?instId=ETH-USD-SWAP&limit=1')).body.data[0];
    expect(d.settFundingRate).toBe(hist.realizedRate);
    expect(Math.abs(Number(d.fundingRate))).toBeLessThan(0.00375);
  });
});

describe('OKX simulator: WebSocket protocol', () => {
  it('acknowledges subscriptions per argument with id and connId, refuses unknown ones with 60018, garbage with 60012', async () => {
    const sim = await start({ clock: () => FROZEN });
    const c = await client(sim);
    c.send({ id: 'a1', op: 'subscribe', args: [{ channel: 'index-tickers', instId: 'BTC-USD' }, { channel: 'opt-summary', instFamily: 'SOL-USD' }, { channel: 'mark-price', instId: 'BTC-USD-SWAP' }] });
    const ack = await c.next((m) => m.event === 'subscribe');
    expect(ack).toEqual({ id: 'a1', event: 'subscribe', arg: { channel: 'index-tickers', instId: 'BTC-USD' }, connId: expect.stringMatching(/^[0-9a-f]{8}$/) });
    const err = await c.next((m) => m.event === 'error');
    expect(err).toMatchObject({ id: 'a1', event: 'error', code: '60018', connId: ack.connId });
    expect(err.msg).toMatch(/opt-summary.*SOL-USD.*doesn't exist/);
    await c.next((m) => m.event === 'subscribe' && m.arg.channel === 'mark-price');
    expect(sim.faults.subscriptions()).toBe(2);
    const n = c.msgs.length;
    c.send('{"op":"subscribe","args":[');
    expect((await c.next((m) => m.event === 'error', n)).code).toBe('60012');
    c.send({ op: 'login', args: [{}] });
    expect((await c.next((m) => m.event === 'error', n + 1)).code).toBe('60012');
    // unsubscribe: acknowledged, and the pushes of that channel stop
    c.send({ id: 'u1', op: 'unsubscribe', args: [{ channel: 'index-tickers', instId: 'BTC-USD' }] });
    await c.next((m) => m.event === 'unsubscribe' && m.id === 'u1');
    expect(sim.faults.subscriptions()).toBe(1);
    const after = c.msgs.length;
    await c.next((m) => m.arg?.channel === 'mark-price' && m.data, after);
    await c.next((m) => m.arg?.channel === 'mark-price' && m.data, c.msgs.length);
    expect(c.msgs.slice(after).some((m) => m.arg?.channel === 'index-tickers' && m.data)).toBe(false);
  });

  it('answers the text ping with pong, and closes a connection it has sent nothing to for idleCloseMs with 4004', async () => {
    const sim = await start({ idleCloseMs: 400 });
    const c = await client(sim);
    c.send('ping');
    await waitFor(() => c.texts.includes('pong'));
    await waitFor(() => c.closed !== null, 10_000);
    expect(c.closed).toEqual({ code: 4004, reason: 'No data received in 30s.' });
    // a subscribed connection that receives data stays open
    const d = await client(sim);
    d.send({ op: 'subscribe', args: [{ channel: 'index-tickers', instId: 'ETH-USD' }] });
    await d.next((m) => m.data);
    await sleep(1_000);
    expect(d.closed).toBeNull();
  });

  it('refuses requests over 64 KB (60012) and more than requestsPerHour subscribe requests on a connection (60014)', async () => {
    const sim = await start({ requestsPerHour: 2 });
    const c = await client(sim);
    const big = { op: 'subscribe', args: Array.from({ length: 2000 }, () => ({ channel: 'index-tickers', instId: 'BTC-USD' })) };
    expect(JSON.stringify(big).length).toBeGreaterThan(64 * 1024);
    c.send(big);
    expect((await c.next((m) => m.event === 'error')).code).toBe('60012');
    c.send({ id: '1', op: 'subscribe', args: [{ channel: 'index-tickers', instId: 'BTC-USD' }] });
    c.send({ id: '2', op: 'subscribe', args: [{ channel: 'index-tickers', instId: 'ETH-USD' }] });
    c.send({ id: '3', op: 'subscribe', args: [{ channel: 'mark-price', instId: 'ETH-USD-SWAP' }] });
    const e = await c.next((m) => m.id === '3');
    expect(e).toMatchObject({ event: 'error', code: '60014', msg: 'Requests too frequent.' });
    expect(sim.faults.subscriptions()).toBe(2);
  });
});

/** Expiry of an OKX option id, Unix ms (08:00 UTC). */
function expiryOf(instId: string): number {
  const t = instId.split('-')[2]!;
  return Date.UTC(2000 + Number(t.slice(0, 2)), Number(t.slice(2, 4)) - 1, Number(t.slice(4, 6)), 8);
}

describe('OKX simulator: market data', () => {
  it('opt-summary: the whole family first, every value a string, Black-76 on fwdPx and OKX Greek conventions', async () => {
    const sim = await start({ clock: () => FROZEN, maxItemsPerPush: 150 });
    const c = await client(sim);
    c.send({ op: 'subscribe', args: [{ channel: 'index-tickers', instId: 'BTC-USD' }, { channel: 'opt-summary', instFamily: 'BTC-USD' }] });
    const listed = (await rest(sim, '/api/v5/public/instruments?instType=OPTION&instFamily=BTC-USD')).body.data as Msg[];
    const summaries = () => c.all((m) => m.arg?.channel === 'opt-summary' && Array.isArray(m.data));
    await waitFor(() => new Set(summaries().flatMap((m) => m.data.map((d: Msg) => d.instId))).size === listed.length);
    const pushes = summaries();
    expect(pushes.every((p) => p.data.length <= 150 && p.arg.instFamily === 'BTC-USD')).toBe(true);
    const idx = (await c.next((m) => m.arg?.channel === 'index-tickers' && m.data)).data[0];
    const S = Number(idx.idxPx);
    const checked = new Set<string>();
    const byExpiry = new Map<number, number>();
    for (const it of pushes.flatMap((p) => p.data) as Msg[]) {
      for (const v of Object.values(it)) expect(typeof v).toBe('string');
      expect(it.ts).toBe(String(FROZEN));
      const [, , , k, cp] = it.instId.split('-');
      const K = Number(k);
      const exp = expiryOf(it.instId);
      const T = (exp - FROZEN) / YEAR_MS;
      const F = Number(it.fwdPx);
      const sigma = Number(it.markVol);
      // one forward per expiry
      if (!byExpiry.has(exp)) byExpiry.set(exp, F);
      expect(F).toBe(byExpiry.get(exp));
      const d1 = refD1(F, K, T, sigma);
      expect(Number(it.deltaBS)).toBeCloseTo(cp === 'C' ? N(d1) : N(d1) - 1, 8);
      // coin premium: deltaBS - delta = Black-76 / F
      const coin = refBlack76(cp === 'C' ? 'call' : 'put', F, K, T, sigma) / F;
      expect(Number(it.deltaBS) - Number(it.delta)).toBeCloseTo(coin, 8);
      // vegaBS / vega = the index (Black-Scholes on the index S)
      if (Number(it.vega) > 1e-6) expect(Number(it.vegaBS) / Number(it.vega) / S - 1).toBeLessThan(1e-4);
      // thetaBS: (S/F)(theta76 + b K dualDelta) min(1, T days) / 365 with b = ln(F/S)/T
      const sd = sigma * Math.sqrt(T);
      const pdf = Math.exp(-(d1 * d1) / 2) / Math.sqrt(2 * Math.PI);
      const b = Math.log(F / S) / T;
      const dual = cp === 'C' ? -N(d1 - sd) : N(-(d1 - sd));
      const thetaBS = ((S / F) * ((-F * pdf * sigma) / (2 * Math.sqrt(T)) + b * K * dual) * Math.min(1, T * 365)) / 365;
      expect(Math.abs(Number(it.thetaBS) - thetaBS)).toBeLessThan(1e-6 * Math.max(1, Math.abs(thetaBS)) + 5e-3);
      // bid <= mark <= ask, "0" = no order on that side
      const bid = Number(it.bidVol);
      const ask = Number(it.askVol);
      if (bid > 0) expect(bid).toBeLessThan(sigma);
      if (ask > 0) expect(ask).toBeGreaterThan(sigma);
      checked.add(it.instId);
    }
    expect(checked.size).toBe(listed.length);
    // the marks are the view's mark IVs (jump-diffusion smile with mark noise, market.ts markIv), within a few vol
    // points of its arbitrage-free SSVI model smile
    const some = pushes[0].data[5];
    const T5 = (expiryOf(some.instId) - FROZEN) / YEAR_MS;
    const k5 = Math.log(Number(some.instId.split('-')[3]) / Number(some.fwdPx));
    expect(Number(some.markVol)).toBeCloseTo(sim.view.markIv('BTC', T5, k5, some.instId.replace(/-[CP]$/, '')), 9);
    expect(Math.abs(Number(some.markVol) - sim.view.impliedVol('BTC', T5, k5))).toBeLessThan(0.05);
  });

  it('index-tickers, mark-price and tickers of futures and swaps are consistent with the forwards of opt-summary', async () => {
    const sim = await start({ clock: () => FROZEN, tickersIntervalMs: 100 });
    const c = await client(sim);
    const fut = (await rest(sim, '/api/v5/public/instruments?instType=FUTURES&instFamily=ETH-USD')).body.data as Msg[];
    const quarterly = fut.find((x) => x.alias === 'quarter')!;
    c.send({
      op: 'subscribe',
      args: [
        { channel: 'index-tickers', instId: 'ETH-USD' },
        { channel: 'mark-price', instId: quarterly.instId },
        { channel: 'tickers', instId: quarterly.instId },
        { channel: 'mark-price', instId: 'ETH-USD-SWAP' },
      ],
    });
    const idx = (await c.next((m) => m.arg?.channel === 'index-tickers' && m.data)).data[0];
    expect(Object.keys(idx)).toEqual(['instId', 'idxPx', 'open24h', 'high24h', 'low24h', 'sodUtc0', 'sodUtc8', 'ts']);
    expect(Number(idx.low24h)).toBeLessThanOrEqual(Number(idx.idxPx));
    expect(Number(idx.high24h)).toBeGreaterThanOrEqual(Number(idx.idxPx));
    const mark = (await c.next((m) => m.arg?.channel === 'mark-price' && m.arg.instId === quarterly.instId && m.data)).data[0];
    expect(mark).toMatchObject({ instId: quarterly.instId, instType: 'FUTURES', ts: String(FROZEN) });
    const T = (Number(quarterly.expTime) - FROZEN) / YEAR_MS;
    expect(Number(mark.markPx)).toBeCloseTo(sim.view.forward('ETH', T), 2);
    // the options of the same expiry are marked on the same forward
    const opts = (await rest(sim, `/api/v5/public/opt-summary?instFamily=ETH-USD`)).body.data as Msg[];
    const sameExpiry = opts.find((o) => o.instId.startsWith(`ETH-USD-${quarterly.instId.split('-')[2]}-`));
    expect(Math.abs(Number(sameExpiry.fwdPx) - Number(mark.markPx))).toBeLessThanOrEqual(0.005 + 1e-9);
    // basis: (F / S - 1) / T is the view's annualized basis
    expect((Number(mark.markPx) / sim.view.spot('ETH') - 1) / T).toBeCloseTo(sim.view.annualizedBasis('ETH', T), 4);
    const tk = (await c.next((m) => m.arg?.channel === 'tickers' && m.data)).data[0];
    expect(Number(tk.bidPx)).toBeLessThan(Number(tk.askPx));
    expect(Number(tk.bidPx)).toBeLessThanOrEqual(Number(mark.markPx));
    expect(Number(tk.askPx)).toBeGreaterThanOrEqual(Number(mark.markPx));
    const swap = (await c.next((m) => m.arg?.channel === 'mark-price' && m.arg.instId === 'ETH-USD-SWAP' && m.data)).data[0];
    expect(Number(swap.markPx)).toBeCloseTo(sim.view.perpetualMark('ETH'), 2);
  });

  it('is deterministic: the same seed and clock give the same REST and WebSocket numbers', async () => {
    // markets stepped one hour away from their (seed-independent) starting means, then frozen
    const market = (seed: number) => {
      const m = new Market({ seed, clock: () => FROZEN });
      for (let i = 0; i < 60; i++) m.step(60);
      return m;
    };
    const a = await start({ market: market(7) });
    const b = await start({ market: market(7) });
    const c = await start({ market: market(8) });
    const sum = async (s: OkxSimulator) => (await rest(s, '/api/v5/public/opt-summary?instFamily=BTC-USD')).body.data;
    expect(await sum(a)).toEqual(await sum(b));
    expect(await sum(a)).not.toEqual(await sum(c));
  });
});

describe('OKX simulator: fault hooks', () => {
  it('drops connections (1006), goes silent (no pong), rejects subscriptions, sends garbage, fails REST with 429', async () => {
    const sim = await start();
    const c = await client(sim);
    sim.faults.malformedFrames(5);
    await waitFor(() => c.texts.length >= 5);
    expect(c.texts.filter((t) => t.startsWith('not json'))).toHaveLength(1);
    sim.faults.rejectSubscriptions(true);
    c.send({ id: 'r', op: 'subscribe', args: [{ channel: 'index-tickers', instId: 'BTC-USD' }] });
    expect((await c.next((m) => m.id === 'r')).code).toBe('60014');
    sim.faults.rejectSubscriptions(false);
    sim.faults.silence(800);
    const before = c.texts.length;
    c.send('ping');
    await sleep(300);
    expect(c.texts.length).toBe(before);
    await sleep(700);
    c.send('ping');
    await waitFor(() => c.texts.slice(before).includes('pong'));
    sim.faults.restFailures(1);
    const limited = await rest(sim, '/api/v5/public/time');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.body.code).toBe('50011');
    expect((await rest(sim, '/api/v5/public/time')).status).toBe(200);
    sim.faults.dropAllConnections();
    await waitFor(() => c.closed !== null);
    expect(c.closed!.code).toBe(1006);
    await waitFor(() => sim.faults.connections() === 0);
  });
});
