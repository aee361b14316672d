/**
 * The Bybit simulator over real sockets on 127.0.0.1 (REST, /v5/public/option and /v5/public/linear on
 * one port): listing shapes against Bybit's docs items, cursor paging, funding history rules, the
 * WebSocket protocol of each stream (acks, pongs, per-connection argument limits), option ticker numbers
 * against an independent Black-76 (stdlib normal CDF) and Bybit's measured Greek conventions, linear
 * snapshot + deltas that merge back into the full record, and the fault hooks. Frozen clocks where
 * numbers are compared; nothing asserts on timing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { docsExamples, fixtureText } from '../helpers/fixtures.js';
import { startBybitSimulator, type BybitSimulator, type BybitSimulatorOptions } from '../../adapters/simulator/bybitServer.js';
import { BYBIT_VIEW } from '../../adapters/simulator/exchangeView.js';
import { getJson, WsClient, type Msg } from './exchangeClient.js';
import { N, refBlack76, refD1, sleep, waitFor } from './helpers.js';
import { testClockMs } from '../helpers/simClock.js';

const docs = docsExamples('bybit') as Record<string, Msg>;
const tardisOption = JSON.parse(fixtureText('bybit', 'tardis-option-tickers-2023-04-05.jsonl').split('\n')[0]!);
const FROZEN = Date.UTC(2026, 4, 26, 19, 27, 44, 123);
const YEAR_MS = 365 * 86_400_000;
const HOUR_MS = 3_600_000;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

let sims: BybitSimulator[] = [];
let clients: WsClient[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  for (const s of sims) await s.close();
  sims = [];
  clients = [];
});

async function start(opts: BybitSimulatorOptions = {}): Promise<BybitSimulator> {
  const sim = await startBybitSimulator({ port: 0, clock: testClockMs, ...opts });
  sims.push(sim);
  return sim;
}

async function client(url: string): Promise<WsClient> {
  const c = await WsClient.connect(url);
  clients.push(c);
  return c;
}

const rest = async (sim: BybitSimulator, path: string) => getJson(`${sim.restUrl}${path}`);

/** Expiry of a Bybit option/future symbol (`BTC-27MAR26-...`), Unix ms at 08:00 UTC. */
function expiryOf(symbol: string): number {
  const m = /^[A-Z]+-(\d{1,2})([A-Z]{3})(\d{2})/.exec(symbol)!;
  return Date.UTC(2000 + Number(m[3]), MONTHS.indexOf(m[2]!), Number(m[1]), 8);
}

async function allPages(sim: BybitSimulator, query: string): Promise<Msg[]> {
  const out: Msg[] = [];
  let cursor = '';
  for (let i = 0; i < 1000; i++) {
    const r = await rest(sim, `/v5/market/instruments-info?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(r.body.retCode).toBe(0);
    out.push(...r.body.result.list);
    cursor = r.body.result.nextPageCursor;
    if (!cursor) break;
  }
  return out;
}

describe('Bybit simulator: REST', () => {
  it('instruments-info: USDC options per base coin with the docs item fields, cursor-paged; linear USDC and USDT contracts', async () => {
    const sim = await start({ clock: () => FROZEN });
    const docOption = docs['GET /v5/market/instruments-info category=option (older docs version 16b7b4958 2025-03-28, USDC-settled option)'].result.list[0];
    const docLinear = docs['GET /v5/market/instruments-info category=linear'].result.list[0];
    for (const coin of ['BTC', 'ETH', 'SOL']) {
      const whole = await rest(sim, `/v5/market/instruments-info?category=option&baseCoin=${coin}&limit=1000`);
      expect(whole.body).toMatchObject({ retCode: 0, retMsg: 'OK', retExtInfo: {}, time: FROZEN, result: { category: 'option', nextPageCursor: '' } });
      const list: Msg[] = whole.body.result.list;
      expect(list.length).toBeGreaterThan(coin === 'SOL' ? 60 : 200);
      for (const x of list) {
        expect(Object.keys(x).sort()).toEqual(Object.keys(docOption).sort());
        expect(x).toMatchObject({ status: 'Trading', baseCoin: coin, quoteCoin: 'USD', settleCoin: 'USDC', deliveryFeeRate: '0.00015' });
        expect(x.symbol).toMatch(new RegExp(`^${coin}-\\d{1,2}[A-Z]{3}\\d{2}-\\d+(\\.\\d+)?-[CP]$`));
        expect(x.optionsType).toBe(x.symbol.endsWith('-C') ? 'Call' : 'Put');
        expect(Number(x.deliveryTime)).toBe(expiryOf(x.symbol));
        expect(Number(x.deliveryTime)).toBeGreaterThan(FROZEN);
      }
      // small pages with the cursor give the same list, in order, without duplicates
      expect(await allPages(sim, `category=option&baseCoin=${coin}&limit=37`)).toEqual(list);
    }
    const expiries = (coin: string, list: Msg[]) => new Set(list.filter((x) => x.baseCoin === coin).map((x) => x.deliveryTime)).size;
    const opts = await allPages(sim, 'category=option&baseCoin=BTC');
    expect(expiries('BTC', opts)).toBeGreaterThanOrEqual(9);
    // without baseCoin, options default to BTC (as Bybit does)
    expect((await rest(sim, '/v5/market/instruments-info?category=option&limit=1000')).body.result.list).toEqual(opts);
    const linear = await allPages(sim, 'category=linear&limit=4');
    const symbols = linear.map((x) => x.symbol);
    expect(symbols).toEqual(expect.arrayContaining(['BTCPERP', 'ETHPERP', 'SOLPERP', 'BTCUSDT', 'ETHUSDT', 'SOLUSDT']));
    for (const x of linear) {
      expect(Object.keys(x).sort()).toEqual(Object.keys(docLinear).sort());
      if (x.contractType === 'LinearFutures') {
        expect(x.symbol).toMatch(/^(BTC|ETH)-\d{1,2}[A-Z]{3}\d{2}$/);
        expect(Number(x.deliveryTime)).toBe(expiryOf(x.symbol));
        expect(x.settleCoin).toBe('USDC');
      }
    }
    const perp = (s: string) => linear.find((x) => x.symbol === s);
    expect(perp('BTCPERP')).toMatchObject({ contractType: 'LinearPerpetual', settleCoin: 'USDC', quoteCoin: 'USDC', fundingInterval: 480, deliveryTime: '0' });
    expect(perp('SOLPERP')).toMatchObject({ fundingInterval: 240 });
    expect(perp('BTCUSDT')).toMatchObject({ settleCoin: 'USDT' });
    // errors: Bybit's retCode 10001 on HTTP 200
    const bad = await rest(sim, '/v5/market/instruments-info?category=futures');
    expect(bad.status).toBe(200);
    expect(bad.body.retCode).toBe(10001);
    expect((await rest(sim, '/v5/market/instruments-info?category=option&limit=1001')).body.retCode).toBe(10001);
    expect((await rest(sim, '/v5/market/instruments-info?category=option&cursor=nonsense')).body.retCode).toBe(10001);
  });

  it('funding/history: newest first at the symbol interval, each the sum of its hourly accruals; startTime alone is an error', async () => {
    const sim = await start({ clock: () => FROZEN });
    const btc = (await rest(sim, '/v5/market/funding/history?category=linear&symbol=BTCPERP')).body;
    expect(btc.retCode).toBe(0);
    expect(btc.result.category).toBe('linear');
    const list: Msg[] = btc.result.list;
    expect(list.length).toBeGreaterThan(80); // the market's 30 days of hourly history, at most 200
    expect(list.length).toBeLessThanOrEqual(200);
    expect(Object.keys(list[0])).toEqual(Object.keys(docs['GET /v5/market/funding/history'].result.list[0]));
    const t = list.map((x) => Number(x.fundingRateTimestamp));
    expect(t[0]).toBe(Math.floor(FROZEN / (8 * HOUR_MS)) * 8 * HOUR_MS);
    for (let i = 1; i < t.length; i++) expect(t[i - 1]! - t[i]!).toBe(8 * HOUR_MS);
    const hourly = sim.market.fundingHistory('BTC', t[5]! - 8 * HOUR_MS, t[0]!);
    for (let i = 0; i < 5; i++) {
      const want = hourly.filter((p) => p.timestamp > t[i]! - 8 * HOUR_MS && p.timestamp <= t[i]!).reduce((s, p) => s + BYBIT_VIEW.premiumMultiplier * p.interest_1h + BYBIT_VIEW.premiumOffset / 8, 0);
      expect(Number(list[i].fundingRate)).toBeCloseTo(want, 8);
    }
    const sol = (await rest(sim, `/v5/market/funding/history?category=linear&symbol=SOLPERP&startTime=${t[3]}&endTime=${t[0]}`)).body.result.list as Msg[];
    expect(sol.map((x) => Number(x.fundingRateTimestamp))).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => t[0]! - i * 4 * HOUR_MS));
    const endOnly = (await rest(sim, `/v5/market/funding/history?category=linear&symbol=ETHPERP&endTime=${t[10]}&limit=3`)).body.result.list as Msg[];
    expect(endOnly.map((x) => Number(x.fundingRateTimestamp))).toEqual(t.slice(10, 13));
    expect((await rest(sim, `/v5/market/funding/history?category=linear&symbol=BTCPERP&startTime=${t[3]}`)).body.retCode).toBe(10001);
    expect((await rest(sim, '/v5/market/funding/history?category=linear&symbol=BTC-26JUN26')).body.retCode).toBe(10001);
    expect((await rest(sim, '/v5/market/funding/history?category=linear&symbol=BTCPERP&limit=201')).body.retCode).toBe(10001);
  });
});

describe('Bybit simulator: WebSocket protocol', () => {
  it('option stream: COMMAND_RESP with success and fail topics, op pong, per-connection topic and character limits', async () => {
    const sim = await start({ clock: () => FROZEN, maxOptionArgs: 3 });
    const c = await client(sim.optionUrl);
    const syms = sim.chains.list('option', 'ETH').map((i) => `tickers.${i.symbol}`);
    c.send({ req_id: 's1', op: 'subscribe', args: [syms[0], syms[1], 'tickers.BTCPERP', 'tickers.NOPE-1JAN30-1-C'] });
    const ack = await c.next((m) => m.type === 'COMMAND_RESP');
    expect(ack).toEqual({ success: false, conn_id: expect.any(String), req_id: 's1', data: { failTopics: ['tickers.BTCPERP', 'tickers.NOPE-1JAN30-1-C'], successTopics: [syms[0], syms[1]] }, type: 'COMMAND_RESP' });
    const n = c.msgs.length;
    c.send({ op: 'subscribe', args: [syms[2], syms[3]] });
    expect((await c.next((m) => m.type === 'COMMAND_RESP', n)).data).toEqual({ failTopics: [syms[3]], successTopics: [syms[2]] });
    expect(sim.faults.subscriptions()).toBe(3);
    // the character limit counts every topic on the connection
    const sim2 = await start({ clock: () => FROZEN, maxArgsChars: 200 });
    const d = await client(sim2.optionUrl);
    const long = syms.slice(0, 20);
    d.send({ op: 'subscribe', args: long });
    const r = await d.next((m) => m.type === 'COMMAND_RESP');
    const okChars = r.data.successTopics.reduce((s: number, x: string) => s + x.length, 0);
    expect(okChars).toBeLessThanOrEqual(200);
    expect(okChars + r.data.failTopics[0].length).toBeGreaterThan(200);
    c.send({ req_id: 'p1', op: 'ping' });
    expect(await c.next((m) => m.op === 'pong')).toEqual({ req_id: 'p1', op: 'pong', args: [String(FROZEN)], conn_id: ack.conn_id });
  });

  it('linear stream: op answers and pong in the linear format; a snapshot then deltas that merge into the next snapshot', async () => {
    const sim = await start({ linearIntervalMs: 100 });
    const c = await client(sim.linearUrl);
    c.send({ req_id: 'l1', op: 'subscribe', args: ['tickers.BTCPERP', 'tickers.ETH-26JUN26X'] });
    expect(await c.next((m) => m.op === 'subscribe')).toEqual({ success: false, ret_msg: 'Invalid topic :[tickers.ETH-26JUN26X]', conn_id: expect.any(String), req_id: 'l1', op: 'subscribe' });
    c.send({ req_id: 'p', op: 'ping' });
    expect(await c.next((m) => m.ret_msg === 'pong')).toMatchObject({ success: true, ret_msg: 'pong', req_id: 'p', op: 'ping' });
    const snap = await c.next((m) => m.topic === 'tickers.BTCPERP' && m.type === 'snapshot');
    const docPerp = docs['ws tickers.BTCUSDT (LinearPerpetual)'];
    expect(Object.keys(snap.data)).toEqual(Object.keys(docPerp.data));
    for (const v of Object.values(snap.data)) expect(typeof v).toBe('string');
    expect(Number(snap.data.nextFundingTime) % (8 * HOUR_MS)).toBe(0);
    expect(snap.data.fundingIntervalHour).toBe('8');
    // merge the deltas into the snapshot; a second subscriber's snapshot of the same tick equals it
    await waitFor(() => c.all((m) => m.topic === 'tickers.BTCPERP' && m.type === 'delta').length >= 3);
    const d = await client(sim.linearUrl);
    d.send({ op: 'subscribe', args: ['tickers.BTCPERP'] });
    const snap2 = await d.next((m) => m.type === 'snapshot');
    await c.next((m) => m.topic === 'tickers.BTCPERP' && m.cs === snap2.cs);
    let merged: Record<string, string> = {};
    for (const m of c.all((x) => x.topic === 'tickers.BTCPERP' && x.cs <= snap2.cs)) {
      expect(m.type === 'snapshot' || Object.keys(m.data).length < Object.keys(snap.data).length).toBe(true);
      merged = m.type === 'snapshot' ? { ...m.data } : { ...merged, ...m.data };
    }
    expect(merged).toEqual(snap2.data);
    expect(Number(merged.markPrice)).toBeGreaterThan(0);
    // a USDC future carries the basis and ISO deliveryTime, no funding
    const future = sim.chains.list('linear', 'ETH').find((i) => i.kind === 'future')!;
    d.send({ op: 'subscribe', args: [`tickers.${future.symbol}`] });
    const fs = await d.next((m) => m.topic === `tickers.${future.symbol}` && m.type === 'snapshot');
    expect(Object.keys(fs.data)).toEqual(Object.keys(docs['ws tickers.BTC-26DEC25 (LinearFutures, USDC future)'].data));
    expect(fs.data).toMatchObject({ deliveryTime: new Date(future.expiryMs!).toISOString().replace('.000Z', 'Z'), fundingRate: '', nextFundingTime: '' });
    expect(Number(fs.data.basis)).toBeCloseTo(Number(fs.data.markPrice) - Number(fs.data.indexPrice), 2);
  });
});

describe('Bybit simulator: option tickers', () => {
  it('are Black-76 on underlyingPrice (the forward) with Bybit Greeks; bid/ask IVs bracket the mark; "0" means no quote', async () => {
    const sim = await start({ clock: () => FROZEN });
    const c = await client(sim.optionUrl);
    const topics = sim.chains.list('option').filter((_, i) => i % 3 === 0).map((i) => `tickers.${i.symbol}`);
    c.send({ op: 'subscribe', args: topics });
    await waitFor(() => new Set(c.all((m) => m.topic).map((m) => m.topic)).size === topics.length);
    let noQuote = 0;
    for (const m of c.all((x) => x.topic)) {
      expect(Object.keys(m).sort()).toEqual(Object.keys(tardisOption).sort());
      expect(Object.keys(m.data)).toEqual(Object.keys(tardisOption.data));
      expect(m).toMatchObject({ type: 'snapshot', ts: FROZEN });
      expect(m.id).toMatch(new RegExp(`^${m.topic.replace(/\./g, '\\.')}-\\d+-${FROZEN}$`));
      const d = m.data;
      for (const v of Object.values(d)) expect(typeof v).toBe('string');
      const [, , k, cp] = d.symbol.split('-');
      const K = Number(k);
      const T = (expiryOf(d.symbol) - FROZEN) / YEAR_MS;
      const F = Number(d.underlyingPrice);
      const sigma = Number(d.markPriceIv);
      const type = cp === 'C' ? 'call' : 'put';
      expect(Number(d.markPrice)).toBeCloseTo(refBlack76(type, F, K, T, sigma), 6);
      const d1 = refD1(F, K, T, sigma);
      const h = Math.min(1, T * 365);
      const pdf = Math.exp(-(d1 * d1) / 2) / Math.sqrt(2 * Math.PI);
      expect(Number(d.delta)).toBeCloseTo(cp === 'C' ? N(d1) : N(d1) - 1, 7);
      expect(Number(d.gamma)).toBeCloseTo((pdf / (F * sigma * Math.sqrt(T))) * h, 7);
      expect(Number(d.vega)).toBeCloseTo((F * pdf * Math.sqrt(T)) / 100, 6);
      expect(Number(d.theta)).toBeCloseTo((((-F * pdf * sigma) / (2 * Math.sqrt(T))) * h) / 365, 6);
      // forward and index: F = S (1 + y T) of Bybit's view
      expect(F / Number(d.indexPrice)).toBeCloseTo(1 + sim.view.annualizedBasis(sim.chains.get(d.symbol)!.underlying, T) * T, 4);
      const bidIv = Number(d.bidIv);
      const askIv = Number(d.askIv);
      if (bidIv === 0) {
        expect(d.bidPrice).toBe('0');
        expect(d.bidSize).toBe('0');
        noQuote++;
      } else {
        expect(bidIv).toBeLessThan(sigma);
        // the bid IV is the IV of the bid price (on the tick)
        const vega1 = F * pdf * Math.sqrt(T);
        expect(Math.abs(refBlack76(type, F, K, T, bidIv) - Number(d.bidPrice))).toBeLessThanOrEqual(vega1 * 1e-4 + 1e-9);
      }
      if (askIv !== 0) expect(askIv).toBeGreaterThanOrEqual(sigma);
    }
    expect(noQuote).toBeGreaterThan(0);
  });
});

describe('Bybit simulator: fault hooks', () => {
  it('drops connections, goes silent, rejects subscriptions (failTopics), sends garbage, fails REST with 403', async () => {
    const sim = await start();
    const o = await client(sim.optionUrl);
    const l = await client(sim.linearUrl);
    await waitFor(() => sim.faults.connections() === 2);
    sim.faults.malformedFrames(5);
    await waitFor(() => o.texts.length >= 5 && l.texts.length >= 5);
    expect(o.texts.filter((t) => t === 'not json at all')).toHaveLength(1);
    sim.faults.rejectSubscriptions(true);
    o.send({ op: 'subscribe', args: [`tickers.${sim.chains.list('option')[0]!.symbol}`] });
    expect((await o.next((m) => m.type === 'COMMAND_RESP')).success).toBe(false);
    sim.faults.rejectSubscriptions(false);
    sim.faults.silence(800);
    const before = l.texts.length;
    l.send({ op: 'ping' });
    await sleep(300);
    expect(l.texts.length).toBe(before);
    await sleep(700);
    l.send({ op: 'ping' });
    await l.next((m) => m.ret_msg === 'pong', l.msgs.length - 1 < 0 ? 0 : 0);
    sim.faults.restFailures(1);
    const r = await rest(sim, '/v5/market/time');
    expect(r.status).toBe(403);
    expect(r.headers.get('retry-after')).toBe('1');
    expect((await rest(sim, '/v5/market/time')).body.retCode).toBe(0);
    sim.faults.dropAllConnections();
    await waitFor(() => o.closed !== null && l.closed !== null);
    expect([o.closed!.code, l.closed!.code]).toEqual([1006, 1006]);
    await waitFor(() => sim.faults.connections() === 0 && sim.faults.subscriptions() === 0);
  });
});
