/**
 * The Deribit simulator over a real WebSocket on 127.0.0.1 (port 0): message shapes against
 * recorded Deribit messages, numbers against an independent Black-76 (mark = Black-76 / F at
 * mark_iv, put-call parity, bid_iv <= mark_iv <= ask_iv), heartbeat, funding history, JSON-RPC
 * errors and determinism. Waits are generous; nothing asserts on timing.
 */
import { sampleText } from '../helpers/fixtures.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startDeribitSimulator, type DeribitSimulator } from '../../adapters/simulator/deribitServer.js';
import { N, refBlack76, refD1, RpcClient, sleep, waitFor, type Msg } from './helpers.js';
import { testClockMs } from '../helpers/simClock.js';

const lines = (f: string): Msg[] =>
  sampleText('deribit', f)
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
const FROZEN = Date.UTC(2026, 4, 26, 19, 27, 44, 123);
const YEAR_MS = 365 * 86_400_000;
const typeOf = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);

let sims: DeribitSimulator[] = [];
let clients: RpcClient[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  for (const s of sims) await s.close();
  sims = [];
  clients = [];
});

async function start(opts: Parameters<typeof startDeribitSimulator>[0] = {}): Promise<{ sim: DeribitSimulator; c: RpcClient }> {
  const sim = await startDeribitSimulator({ port: 0, clock: testClockMs, ...opts });
  sims.push(sim);
  const c = await RpcClient.connect(sim.url);
  clients.push(c);
  return { sim, c };
}

/** Every key of `real` exists in `ours` with the same JSON type (`nullable` keys may be null on either side). */
function expectSameShape(ours: Record<string, unknown>, real: Record<string, unknown>, what: string, nullable: string[] = []): void {
  for (const [k, v] of Object.entries(real)) {
    expect(ours, `${what}.${k}`).toHaveProperty(k);
    if (nullable.includes(k) && (v === null || ours[k] === null)) continue;
    expect(typeOf(ours[k]), `${what}.${k}`).toBe(typeOf(v));
  }
}

describe('Deribit simulator: JSON-RPC methods', () => {
  it('answers public/get_instruments with Deribit instrument objects in a Deribit envelope', async () => {
    const { sim, c } = await start();
    const r = await c.call('public/get_instruments', { currency: 'BTC', kind: 'option', expired: false });
    expect(r).toMatchObject({ jsonrpc: '2.0', id: expect.any(Number), testnet: false });
    expect(Number.isInteger(r.usIn) && Number.isInteger(r.usOut)).toBe(true);
    expect(r.usDiff).toBe(r.usOut - r.usIn);
    expect(r.usDiff).toBeGreaterThanOrEqual(0);
    expect(Math.abs(r.usIn / 1000 - testClockMs())).toBeLessThan(60_000); // microseconds of the clock
    const now = testClockMs();
    const recorded: Msg[] = JSON.parse(sampleText('deribit', 'crypto-market-raw-data__get_instruments_option_BTC+ETH_2025-05-08.json'));
    const spot = sim.market.spot('BTC');
    expect(r.result.length).toBeGreaterThan(400);
    for (const i of r.result) {
      expectSameShape(i, recorded[0], i.instrument_name);
      expect(i.kind).toBe('option');
      expect(i.instrument_type).toBe('reversed');
      expect(i.expiration_timestamp).toBeGreaterThan(now);
      expect(i.expiration_timestamp % 86_400_000).toBe(8 * 3_600_000);
      expect(i.strike).toBeGreaterThan(spot / 5.01);
      expect(i.strike).toBeLessThan(spot * 4.51);
    }
    const futures = await c.call('public/get_instruments', { currency: 'ETH', kind: 'future' });
    expect(futures.result.map((i: Msg) => i.instrument_name)).toContain('ETH-PERPETUAL');
    expect(futures.result.every((i: Msg) => i.kind === 'future' && i.settlement_currency === 'ETH')).toBe(true);
    const usdc = await c.call('public/get_instruments', { currency: 'USDC' });
    const names: string[] = usdc.result.map((i: Msg) => i.instrument_name);
    expect(names).toContain('SOL_USDC-PERPETUAL');
    expect(names).toContain('XRP_USDC-PERPETUAL');
    expect(names.some((n) => /^XRP_USDC-\w+-\d+d\d+-[CP]$/.test(n))).toBe(true);
    expect(usdc.result.every((i: Msg) => i.instrument_type === 'linear' && i.settlement_currency === 'USDC')).toBe(true);
    const any = await c.call('public/get_instruments', { currency: 'any' });
    expect(any.result.length).toBe(sim.chains.all().length);
    expect((await c.call('public/get_instruments', { currency: 'BTC', expired: true })).result).toEqual([]);
    const bad = await c.call('public/get_instruments', { currency: 'XYZ' });
    expect(bad.error).toMatchObject({ code: -32602, message: 'Invalid params', data: { param: 'currency' } });
  });

  it('answers public/get_funding_rate_history with hourly points in Deribit units, and public/get_index_price', async () => {
    const { sim, c } = await start();
    const end = testClockMs();
    const startTs = end - 24 * 3_600_000;
    const r = await c.call('public/get_funding_rate_history', { instrument_name: 'BTC-PERPETUAL', start_timestamp: startTs, end_timestamp: end });
    const docs = JSON.parse(sampleText('deribit', 'deribit-docs__openapi-response-examples.json')).examples['/public/get_funding_rate_history'].result[0];
    expect(r.result.length).toBe(24);
    for (let i = 0; i < r.result.length; i++) {
      const p = r.result[i];
      expect(Object.keys(p).sort()).toEqual(Object.keys(docs).sort());
      expectSameShape(p, docs, 'funding');
      expect(p.timestamp % 3_600_000).toBe(0);
      expect(p.timestamp).toBeGreaterThanOrEqual(startTs);
      expect(p.timestamp).toBeLessThanOrEqual(end);
      if (i > 0) {
        expect(p.timestamp - r.result[i - 1].timestamp).toBe(3_600_000);
        expect(p.prev_index_price).toBe(r.result[i - 1].index_price);
      }
      expect(Math.abs(p.interest_1h)).toBeLessThan(1e-3);
      expect(p.index_price / sim.market.spot('BTC')).toBeGreaterThan(0.8);
    }
    const sol = await c.call('public/get_funding_rate_history', { instrument_name: 'SOL_USDC-PERPETUAL', start_timestamp: startTs, end_timestamp: end });
    expect(sol.result.length).toBe(24);
    const notPerp = await c.call('public/get_funding_rate_history', { instrument_name: sim.chains.options('BTC')[0]!.name, start_timestamp: startTs, end_timestamp: end });
    expect(notPerp.error).toMatchObject({ code: -32602, data: { param: 'instrument_name' } });
    const idx = await c.call('public/get_index_price', { index_name: 'eth_usd' });
    expect(Object.keys(idx.result).sort()).toEqual(['estimated_delivery_price', 'index_price']);
    expect(idx.result.index_price).toBeCloseTo(sim.market.spot('ETH'), 0);
  });

  it('answers malformed or unknown requests with Deribit-shaped JSON-RPC errors', async () => {
    const { c } = await start();
    expect((await c.call('public/no_such_method')).error).toEqual({ message: 'Method not found', code: -32601 });
    const parse = await c.raw('{"jsonrpc":"2.0","id":1,"method":');
    expect(parse).toMatchObject({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, testnet: false });
    expect(parse).not.toHaveProperty('id');
    expect((await c.raw('{"jsonrpc":"2.0","method":"public/test"}')).error.code).toBe(-32600);
    expect((await c.raw('[{"jsonrpc":"2.0","id":5,"method":"public/test"}]')).error.code).toBe(-32600);
    const badParams = await c.call('public/subscribe', { channels: 'ticker.BTC-PERPETUAL.100ms' });
    expect(badParams.error).toEqual({ message: 'Invalid params', code: -32602, data: { reason: 'value must be a list', param: 'channels' } });
    expect((await c.call('public/ticker', { instrument_name: 'BTC-1JAN20-1000-C' })).error.data.param).toBe('instrument_name');
    expect((await c.call('public/set_heartbeat', { interval: 5 })).error).toMatchObject({ code: -32602, data: { param: 'interval' } });
    expect((await c.call('/public/test')).result).toEqual({ version: expect.any(String) });
  });
});

describe('Deribit simulator: subscriptions and ticker numbers', () => {
  it('publishes tickers whose numbers are consistent: mark = Black-76 at mark_iv (/F if inverse), parity, bid_iv <= mark_iv <= ask_iv', async () => {
    // Frozen clock: the market does not move, so a strike's call and put see the same state.
    const { sim, c } = await start({ clock: () => FROZEN, seed: 5 });
    const all = sim.chains.all();
    const pick: string[] = [];
    const futureNames = new Set(all.filter((i) => i.kind === 'future').map((i) => i.name));
    for (const prefix of ['BTC', 'ETH', 'SOL_USDC', 'XRP_USDC']) {
      const opts = sim.chains.options(prefix);
      const expiries = [...new Set(opts.map((o) => o.expiryMs))];
      for (const e of [expiries[0]!, expiries[Math.floor(expiries.length / 2)]!, expiries[expiries.length - 1]!]) {
        const ofE = opts.filter((o) => o.expiryMs === e);
        for (const o of ofE) pick.push(o.name); // whole expiry: calls and puts of every strike
      }
    }
    const channels = [
      ...pick.map((n) => `ticker.${n}.100ms`),
      ...[...futureNames].map((n) => `ticker.${n}.100ms`),
      'deribit_price_index.btc_usd',
      'deribit_price_index.eth_usd',
      'deribit_price_index.sol_usdc',
      'deribit_price_index.xrp_usdc',
    ];
    const sub = await c.call('public/subscribe', { channels });
    expect(sub.result).toEqual(channels);
    await waitFor(() => new Set(c.notifications.map((n) => n.params.channel)).size === channels.length, 20_000);
    const last = new Map<string, Msg>();
    for (const n of c.notifications) last.set(n.params.channel, n.params.data);
    const index = (name: string) => last.get(`deribit_price_index.${name}`)!.price as number;
    const recOpt = lines('crypto-msg-parser__ticker-notifications_2022-06.jsonl')[2].params.data;
    const recFut = lines('crypto-msg-parser__ticker-notifications_2022-06.jsonl')[0].params.data;
    const recPerp = JSON.parse(sampleText('deribit', 'nautilus__ws_ticker_BTC-PERPETUAL_2025-12-12.json')).params.data;

    let checkedParity = 0;
    let checkedBidAsk = 0;
    for (const name of pick) {
      const d = last.get(`ticker.${name}.100ms`)!;
      const inst = sim.chains.get(name)!;
      const linear = inst.product.linear;
      expectSameShape(d, recOpt, name, ['last_price', 'settlement_price']);
      expect(d.timestamp).toBe(FROZEN);
      expect(d.instrument_name).toBe(name);
      expect(d.state).toBe('open');
      expect(d.interest_rate).toBe(0);
      const F: number = d.underlying_price;
      const K = inst.strike!;
      const T = (inst.expiryMs - d.timestamp) / YEAR_MS;
      const sigma = d.mark_iv / 100;
      expect(d.mark_iv).toBeGreaterThan(10); // percent, not a fraction
      expect(d.mark_iv).toBeLessThan(1000);
      const idx = index(inst.product.priceIndex);
      expect(d.index_price).toBe(idx);
      expect(d.estimated_delivery_price).toBe(idx);
      if (linear) {
        expect(d.underlying_index).toBe('index_price');
        expect(F).toBe(idx);
      } else if (inst.futureName) {
        expect(d.underlying_index).toBe(inst.futureName);
        expect(F).toBe(last.get(`ticker.${inst.futureName}.100ms`)!.mark_price);
      } else {
        expect(d.underlying_index).toMatch(new RegExp(`^SYN\\.${inst.product.prefix}-\\d+[A-Z]{3}\\d{2}$`));
      }
      // mark_price * F (inverse) or mark_price (linear) = Black-76 USD price at mark_iv, T.
      const ref = refBlack76(inst.optionType!, F, K, T, sigma);
      const markUsd = linear ? d.mark_price : d.mark_price * F;
      const tol = linear ? 0.51 * 10 ** -inst.product.optionPriceDecimals : 0.51e-8 * F;
      expect(Math.abs(markUsd - ref)).toBeLessThanOrEqual(tol + 1e-9 * F);
      // Greeks: plain forward Black delta N(d1) (call) or N(d1) - 1 (put), rounded to 5 dp.
      const nd1 = N(refD1(F, K, T, sigma));
      expect(d.greeks.delta).toBeCloseTo(inst.optionType === 'call' ? nd1 : nd1 - 1, 4);
      expect(d.greeks.vega).toBeGreaterThanOrEqual(0);
      expect(d.greeks.theta).toBeLessThanOrEqual(0);
      // Quotes: bid_iv <= mark_iv <= ask_iv when both present; prices consistent with their IVs.
      if (d.best_bid_price > 0 && d.best_ask_price > 0) {
        checkedBidAsk++;
        expect(d.bid_iv).toBeLessThanOrEqual(d.mark_iv);
        expect(d.ask_iv).toBeGreaterThanOrEqual(d.mark_iv);
        expect(d.best_bid_price).toBeLessThanOrEqual(d.mark_price);
        expect(d.best_ask_price).toBeGreaterThanOrEqual(d.mark_price);
        const unit = linear ? 1 : F;
        const lo = refBlack76(inst.optionType!, F, K, T, (d.bid_iv - 0.006) / 100);
        const hi = refBlack76(inst.optionType!, F, K, T, (d.bid_iv + 0.006) / 100);
        expect(d.best_bid_price * unit).toBeGreaterThanOrEqual(lo - 1e-9 * F);
        expect(d.best_bid_price * unit).toBeLessThanOrEqual(hi + 1e-9 * F);
      }
      if (d.best_bid_price === 0) expect(d.bid_iv).toBe(0);
      if (d.best_ask_price === 0) expect(d.ask_iv).toBe(0);
      // Put-call parity across the strike: C - P = F - K (USD), i.e. (F - K) / F in coin.
      if (inst.optionType === 'call') {
        const put = last.get(`ticker.${name.slice(0, -1)}P.100ms`)!;
        expect(put.underlying_price).toBe(F);
        const diff = d.mark_price - put.mark_price;
        if (linear) expect(diff).toBeCloseTo(F - K, inst.product.optionPriceDecimals - 1);
        else expect(Math.abs(diff - (F - K) / F)).toBeLessThanOrEqual(1.1e-8);
        checkedParity++;
      }
    }
    expect(checkedParity).toBeGreaterThan(100);
    expect(checkedBidAsk).toBeGreaterThan(100);

    for (const name of futureNames) {
      const d = last.get(`ticker.${name}.100ms`)!;
      const inst = sim.chains.get(name)!;
      expect(d.timestamp).toBe(FROZEN);
      expect(d.index_price).toBe(index(inst.product.priceIndex));
      expect(d.best_bid_price).toBeLessThan(d.best_ask_price);
      expect(Math.abs(d.mark_price / d.index_price - 1)).toBeLessThan(0.05);
      if (inst.perpetual) {
        expectSameShape(d, recPerp, name);
        expect(Math.abs(d.funding_8h)).toBeLessThan(0.01);
        expect(typeof d.current_funding).toBe('number');
      } else {
        expectSameShape(d, recFut, name);
        expect(d).not.toHaveProperty('funding_8h');
        // Basis: the forward of a dated future is above the index for a positive basis of a few % a year.
        const T = (inst.expiryMs - FROZEN) / YEAR_MS;
        const y = (d.mark_price / d.index_price - 1) / T;
        expect(y).toBeGreaterThan(-0.2);
        expect(y).toBeLessThan(0.3);
      }
    }
    const idxMsg = c.notifications.find((n) => n.params.channel === 'deribit_price_index.btc_usd');
    expect(Object.keys(idxMsg.params.data).sort()).toEqual(['index_name', 'price', 'timestamp']);
    expect(idxMsg.params.data.index_name).toBe('btc_usd');
  });

  it('answers subscribe like Deribit: unknown channels left out, raw refused without auth, unsubscribe stops the channel', async () => {
    const { c } = await start();
    const r = await c.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.100ms', 'ticker.NOPE-PERPETUAL.100ms', 'book.BTC-PERPETUAL.100ms', 'deribit_price_index.doge_usd'] });
    expect(r.result).toEqual(['ticker.BTC-PERPETUAL.100ms']);
    const raw = await c.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.raw'] });
    expect(raw.error).toEqual({ message: 'raw_subscriptions_not_available_for_unauthorized', code: 13778 });
    await waitFor(() => c.notifications.length >= 3);
    const un = await c.call('public/unsubscribe', { channels: ['ticker.BTC-PERPETUAL.100ms', 'ticker.ETH-PERPETUAL.100ms'] });
    expect(un.result).toEqual(['ticker.BTC-PERPETUAL.100ms']);
    const after = c.frames.length;
    await sleep(500);
    expect(c.frames.slice(after).filter((f) => f.includes('ticker.BTC-PERPETUAL'))).toEqual([]);
  });

  it('serves .raw channels when rawRequiresAuth is off', async () => {
    const { c } = await start({ rawRequiresAuth: false });
    const r = await c.call('public/subscribe', { channels: ['ticker.ETH-PERPETUAL.raw'] });
    expect(r.result).toEqual(['ticker.ETH-PERPETUAL.raw']);
    await waitFor(() => c.notifications.some((n) => n.params.channel === 'ticker.ETH-PERPETUAL.raw'));
  });

  it('refreshes options about once per second and futures every tick (optionUpdatesPerSecond 0: only the first notification)', async () => {
    const { sim, c } = await start({ optionUpdatesPerSecond: 0 });
    const opts = sim.chains.options('ETH').slice(0, 30).map((o) => `ticker.${o.name}.100ms`);
    await c.call('public/subscribe', { channels: [...opts, 'ticker.ETH-PERPETUAL.100ms'] });
    await waitFor(() => c.notifications.filter((n) => n.params.channel === 'ticker.ETH-PERPETUAL.100ms').length >= 8);
    for (const ch of opts) expect(c.notifications.filter((n) => n.params.channel === ch).length).toBe(1);
  });
});

describe('Deribit simulator: expiry roll', () => {
  it('sends a final closed ticker when an option expires, drops it from the listing and lists the new expiry', async () => {
    let t = Date.UTC(2026, 4, 27, 7, 59, 58); // 2 s before the 27MAY26 08:00 expiry
    const { sim, c } = await start({ clock: () => t });
    const expiring = sim.chains.options('BTC').find((o) => o.expiryMs === Date.UTC(2026, 4, 27, 8))!;
    expect(expiring).toBeDefined();
    const ch = `ticker.${expiring.name}.100ms`;
    await c.call('public/subscribe', { channels: [ch] });
    await waitFor(() => c.notifications.some((n) => n.params.channel === ch));
    t = Date.UTC(2026, 4, 27, 8, 0, 1);
    await waitFor(() => c.notifications.some((n) => n.params.channel === ch && n.params.data.state === 'closed'));
    const closed = c.notifications.find((n) => n.params.channel === ch && n.params.data.state === 'closed').params.data;
    const rec = lines('tardis-node__mappers-test__ticker-notifications.jsonl')[2].params.data; // BTC-8JUN20-8750-P, closed
    expect(Object.keys(closed).sort()).toEqual(Object.keys(rec).sort());
    expect(closed.estimated_delivery_price).toBe('expired');
    expect(typeof closed.delivery_price).toBe('number');
    await waitFor(() => sim.faults.subscriptions() === 0);
    const list = (await c.call('public/get_instruments', { currency: 'BTC', kind: 'option' })).result.map((i: Msg) => i.instrument_name);
    expect(list).not.toContain(expiring.name);
    expect(list.some((n: string) => n.startsWith('BTC-31MAY26-'))).toBe(true); // the new 4th daily
    const expired = (await c.call('public/get_instruments', { currency: 'BTC', kind: 'option', expired: true })).result;
    expect(expired.map((i: Msg) => i.instrument_name)).toContain(expiring.name);
    expect(expired.every((i: Msg) => i.is_active === false)).toBe(true);
  });
});

describe('Deribit simulator: heartbeat', () => {
  it('sends test_request every interval, stays open while answered, closes when not answered', async () => {
    const { c } = await start({ heartbeatMsPerS: 20 }); // interval 10 "seconds" = 200 ms
    let answer = true;
    c.ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString());
      if (answer && m.method === 'heartbeat' && m.params?.type === 'test_request') void c.call('public/test');
    });
    expect((await c.call('public/set_heartbeat', { interval: 10 })).result).toBe('ok');
    await waitFor(() => c.heartbeats.length >= 4);
    const rec = JSON.parse(sampleText('deribit', 'nautilus__ws_heartbeat_test_request.json'));
    expect(c.heartbeats[0]).toEqual(rec);
    expect(c.closed).toBeNull();
    answer = false;
    await waitFor(() => c.closed !== null);
    expect(c.closed!.code).toBe(1000);
  });

  it('does not send heartbeats after public/disable_heartbeat', async () => {
    const { c } = await start({ heartbeatMsPerS: 20 });
    await c.call('public/set_heartbeat', { interval: 10 });
    await waitFor(() => c.heartbeats.length >= 1);
    expect((await c.call('public/disable_heartbeat')).result).toBe('ok');
    const n = c.heartbeats.length;
    await sleep(700);
    expect(c.heartbeats.length).toBe(n);
    expect(c.closed).toBeNull();
  });
});

describe('Deribit simulator: determinism', () => {
  it('gives identical answers for the same seed and clock, different ones for another seed', async () => {
    const a = await start({ seed: 77, clock: () => FROZEN });
    const b = await start({ seed: 77, clock: () => FROZEN });
    const d = await start({ seed: 78, clock: () => FROZEN });
    const ia = (await a.c.call('public/get_instruments', { currency: 'any' })).result;
    const ib = (await b.c.call('public/get_instruments', { currency: 'any' })).result;
    expect(ia).toEqual(ib);
    for (const name of [ia[10].instrument_name, ia[500].instrument_name, 'BTC-PERPETUAL', 'XRP_USDC-PERPETUAL']) {
      const ta = (await a.c.call('public/ticker', { instrument_name: name })).result;
      const tb = (await b.c.call('public/ticker', { instrument_name: name })).result;
      expect(ta).toEqual(tb);
    }
    const fa = await a.c.call('public/get_funding_rate_history', { instrument_name: 'ETH-PERPETUAL', start_timestamp: 0, end_timestamp: FROZEN });
    const fb = await b.c.call('public/get_funding_rate_history', { instrument_name: 'ETH-PERPETUAL', start_timestamp: 0, end_timestamp: FROZEN });
    expect(fa.result).toEqual(fb.result);
    const fd = await d.c.call('public/get_funding_rate_history', { instrument_name: 'ETH-PERPETUAL', start_timestamp: 0, end_timestamp: FROZEN });
    expect(fd.result).not.toEqual(fa.result);
  });
});
