/**
 * DeribitFeed against a tiny fake Deribit JSON-RPC server on 127.0.0.1 (ws, port 0), written here
 * from the documented message shapes (docs.deribit.com: set_heartbeat, test_request, get_instruments,
 * subscribe, get_funding_rate_history). Backoff and the silence watchdog run on manual timers.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { DeribitFeed, type DeribitFeedOptions } from '../../adapters/deribit/feed.js';
import { MarketEventSchema, type FundingRate, type MarketEvent, type OptionQuote } from '../../src/domain/events.js';
import { FakeTimers } from './transport-fake-timers.js';

const T0 = Date.parse('2026-01-15T00:00:00Z') / 1000;
const H = 3600;
const EXP_JUN = Date.parse('2026-06-26T08:00:00Z');
const EXP_SEP = Date.parse('2026-09-25T08:00:00Z');
const PERP_EXP = 32503708800000;

interface Req {
  readonly conn: number;
  readonly id: number;
  readonly method: string;
  readonly params: Record<string, unknown>;
}

function option(name: string, base: string, strike: number, type: 'call' | 'put', exp: number, settle: string): Record<string, unknown> {
  return { instrument_name: name, kind: 'option', base_currency: base, settlement_currency: settle, strike, option_type: type, expiration_timestamp: exp, creation_timestamp: 1_760_000_000_000, is_active: true };
}
function future(name: string, base: string, exp: number, settle: string): Record<string, unknown> {
  return { instrument_name: name, kind: 'future', base_currency: base, settlement_currency: settle, expiration_timestamp: exp, creation_timestamp: 1_760_000_000_000, is_active: true, settlement_period: exp === PERP_EXP ? 'perpetual' : 'month' };
}

/** Listing per `currency:kind`, in the current public/get_instruments format. */
function listing(): Map<string, Array<Record<string, unknown>>> {
  return new Map([
    ['BTC:option', [option('BTC-26JUN26-100000-C', 'BTC', 100000, 'call', EXP_JUN, 'BTC'), option('BTC-26JUN26-100000-P', 'BTC', 100000, 'put', EXP_JUN, 'BTC'), option('BTC-25SEP26-120000-C', 'BTC', 120000, 'call', EXP_SEP, 'BTC')]],
    ['BTC:future', [future('BTC-26JUN26', 'BTC', EXP_JUN, 'BTC'), future('BTC-PERPETUAL', 'BTC', PERP_EXP, 'BTC'), { ...future('BTC-FS-26JUN26_PERP', 'BTC', EXP_JUN, 'BTC'), kind: 'future_combo' }]],
    ['ETH:option', [option('ETH-26JUN26-4000-C', 'ETH', 4000, 'call', EXP_JUN, 'ETH')]],
    ['ETH:future', [future('ETH-PERPETUAL', 'ETH', PERP_EXP, 'ETH')]],
    ['USDC:option', [option('SOL_USDC-26JUN26-150-C', 'SOL', 150, 'call', EXP_JUN, 'USDC'), option('XRP_USDC-26JUN26-2d2-C', 'XRP', 2.2, 'call', EXP_JUN, 'USDC'), option('MATIC_USDC-26JUN26-1d02-C', 'MATIC', 1.02, 'call', EXP_JUN, 'USDC')]],
    ['USDC:future', [future('SOL_USDC-PERPETUAL', 'SOL', PERP_EXP, 'USDC'), future('XRP_USDC-PERPETUAL', 'XRP', PERP_EXP, 'USDC'), future('UNI_USDC-PERPETUAL', 'UNI', PERP_EXP, 'USDC')]],
  ]);
}

const EXPECTED_TICKERS = [
  'BTC-26JUN26-100000-C', 'BTC-26JUN26-100000-P', 'BTC-25SEP26-120000-C', 'BTC-26JUN26', 'BTC-PERPETUAL',
  'ETH-26JUN26-4000-C', 'ETH-PERPETUAL', 'SOL_USDC-26JUN26-150-C', 'XRP_USDC-26JUN26-2d2-C', 'SOL_USDC-PERPETUAL', 'XRP_USDC-PERPETUAL',
];
const INDEX_CHANNELS = ['deribit_price_index.btc_usd', 'deribit_price_index.eth_usd', 'deribit_price_index.sol_usdc', 'deribit_price_index.xrp_usdc'];

/** A fake Deribit: answers the JSON-RPC methods the feed uses and lets the test push notifications. */
class FakeDeribit {
  readonly requests: Req[] = [];
  readonly sockets: ServerSocket[] = [];
  readonly instruments = listing();
  /** Hourly funding points per perpetual: timestamp ms -> interest_1h. */
  readonly funding = new Map<string, Map<number, number>>();
  /** Per method: answer with this error instead (consumed once). */
  readonly failOnce = new Map<string, { code: number; message: string }>();
  /** Methods left unanswered once (the request is recorded, no response is sent). */
  readonly ignoreOnce = new Set<string>();
  url = '';
  private wss!: WebSocketServer;

  async listen(): Promise<void> {
    this.wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => this.wss.once('listening', () => r()));
    this.url = `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}/ws/api/v2`;
    this.wss.on('connection', (s) => {
      this.sockets.push(s);
      const conn = this.sockets.length;
      s.on('message', (buf) => this.onRequest(conn, s, JSON.parse(buf.toString()) as Req));
    });
    for (const perp of ['BTC-PERPETUAL', 'ETH-PERPETUAL', 'SOL_USDC-PERPETUAL', 'XRP_USDC-PERPETUAL']) {
      this.funding.set(perp, new Map([1, 2, 3].map((k) => [(T0 - k * H) * 1000, k * 1e-6])));
    }
  }

  close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    return new Promise((r) => this.wss.close(() => r()));
  }

  methods(conn?: number): string[] {
    return this.requests.filter((r) => conn === undefined || r.conn === conn).map((r) => r.method);
  }

  send(obj: unknown, conn = this.sockets.length): void {
    this.sockets[conn - 1]?.send(typeof obj === 'string' ? obj : JSON.stringify(obj));
  }

  private onRequest(conn: number, s: ServerSocket, req: Req): void {
    this.requests.push({ ...req, conn });
    const answer = (result: unknown): void => s.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result, usIn: 1, usOut: 2, usDiff: 1, testnet: false }));
    if (this.ignoreOnce.delete(req.method)) return;
    const fail = this.failOnce.get(req.method);
    if (fail) {
      this.failOnce.delete(req.method);
      s.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, error: fail }));
      return;
    }
    const p = req.params;
    switch (req.method) {
      case 'public/set_heartbeat':
        return answer('ok');
      case 'public/test':
        return answer({ version: '1.2.26' });
      case 'public/get_instruments':
        return answer(this.instruments.get(`${String(p['currency'])}:${String(p['kind'])}`) ?? []);
      case 'public/subscribe':
      case 'public/unsubscribe':
        return answer(p['channels']);
      case 'public/get_funding_rate_history': {
        const pts = this.funding.get(String(p['instrument_name'])) ?? new Map<number, number>();
        const out = [...pts]
          .filter(([ts]) => ts >= (p['start_timestamp'] as number) && ts <= (p['end_timestamp'] as number))
          .sort((a, b) => a[0] - b[0])
          .map(([timestamp, i1]) => ({ timestamp, index_price: 95000, prev_index_price: 94900, interest_8h: i1 * 8, interest_1h: i1 }));
        return answer(out);
      }
      default:
        s.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, error: { code: -32601, message: 'Method not found' } }));
    }
  }
}

function optionTicker(name: string, ts: number): unknown {
  return {
    jsonrpc: '2.0',
    method: 'subscription',
    params: {
      channel: `ticker.${name}.100ms`,
      data: {
        instrument_name: name, timestamp: ts, state: 'open', underlying_price: 97000.5, underlying_index: 'BTC-26JUN26', index_price: 95000.25,
        mark_price: 0.0925, mark_iv: 52.31, bid_iv: 51.5, ask_iv: 0, best_bid_price: 0.092, best_ask_price: 0, interest_rate: 0,
        greeks: { delta: 0.41, gamma: 0.00001, vega: 250.1, theta: -40.2, rho: 120.3 },
      },
    },
  };
}

function perpTicker(name: string, ts: number): unknown {
  return {
    jsonrpc: '2.0',
    method: 'subscription',
    params: { channel: `ticker.${name}.100ms`, data: { instrument_name: name, timestamp: ts, state: 'open', mark_price: 95010.5, index_price: 95000.25, current_funding: 0.00001, funding_8h: 0.00008 } },
  };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function until(pred: () => boolean): Promise<void> {
  while (!pred()) await new Promise((r) => setTimeout(r, 2));
}

async function setup(extra: Partial<DeribitFeedOptions> = {}): Promise<{ srv: FakeDeribit; feed: DeribitFeed; events: MarketEvent[]; timers: FakeTimers }> {
  const srv = new FakeDeribit();
  await srv.listen();
  const timers = new FakeTimers();
  const feed = new DeribitFeed({
    url: srv.url,
    heartbeatIntervalS: 10,
    subscribeBatchSize: 4,
    pacing: { subscribeMs: 0, getInstrumentsMs: 0, rateLimitRetryMs: 1 },
    clock: { now: () => T0 },
    fundingRetryMs: 5,
    instrumentRefreshMs: 0,
    transport: { timers, random: () => 1 },
    ...extra,
  });
  const events: MarketEvent[] = [];
  feed.events$.subscribe((e) => events.push(e));
  cleanups.push(() => srv.close());
  cleanups.push(() => feed.stop());
  return { srv, feed, events, timers };
}

const fundingCount = (events: MarketEvent[]): number => events.filter((e) => e.kind === 'funding').length;

describe('DeribitFeed against a fake Deribit on 127.0.0.1', () => {
  it('connects: heartbeat, instruments, batched subscriptions, funding bootstrap', async () => {
    const { srv, feed, events } = await setup();
    feed.start();
    await until(() => fundingCount(events) === 12);

    const methods = srv.methods(1);
    expect(methods.slice(0, 7)).toEqual(['public/set_heartbeat', ...Array(6).fill('public/get_instruments')]);
    expect(srv.requests[0]?.params).toEqual({ interval: 10 });
    expect(srv.requests.slice(1, 7).map((r) => r.params)).toEqual(
      ['BTC', 'ETH', 'USDC'].flatMap((currency) => ['option', 'future'].map((kind) => ({ currency, kind, expired: false }))),
    );
    const subs = srv.requests.filter((r) => r.method === 'public/subscribe').map((r) => r.params['channels'] as string[]);
    const all = [...INDEX_CHANNELS, ...EXPECTED_TICKERS.map((n) => `ticker.${n}.100ms`)];
    expect(subs.map((b) => b.length)).toEqual([4, 4, 4, 3]);
    expect(subs.flat().sort()).toEqual([...all].sort());
    expect([...feed.subscribedChannels()].sort()).toEqual([...all].sort());
    const fundingReqs = srv.requests.filter((r) => r.method === 'public/get_funding_rate_history');
    expect(fundingReqs.map((r) => r.params)).toEqual(
      ['BTC-PERPETUAL', 'ETH-PERPETUAL', 'SOL_USDC-PERPETUAL', 'XRP_USDC-PERPETUAL'].map((n) => ({ instrument_name: n, start_timestamp: (T0 - 7 * 86400) * 1000, end_timestamp: T0 * 1000 })),
    );

    expect(events[0]).toMatchObject({ kind: 'status', state: 'connected', timestamp: T0 });
    const defs = events.filter((e) => e.kind === 'instrument');
    expect(defs.map((d) => d.instrument).sort()).toEqual([...EXPECTED_TICKERS].sort());
    expect(defs.find((d) => d.instrument === 'XRP_USDC-26JUN26-2d2-C')).toMatchObject({ strike: 2.2, quote: 'USDC', inverse: false, expirationTimestamp: EXP_JUN / 1000 });
    const btcFunding = events.filter((e): e is FundingRate => e.kind === 'funding' && e.instrumentId === 'BTC-PERPETUAL');
    expect(btcFunding.map((f) => [f.timestamp, f.interest])).toEqual([
      [T0 - 3 * H, 3e-6],
      [T0 - 2 * H, 2e-6],
      [T0 - H, 1e-6],
    ]);
    for (const e of events) expect(MarketEventSchema.safeParse(e).success).toBe(true);
    expect(feed.stats()).toMatchObject({ source: 'DERIBIT', connected: true, reconnects: 0, dropped: {} });
  });

  it('answers test_request with public/test, and only that heartbeat type', async () => {
    const { srv, feed, events } = await setup();
    feed.start();
    await until(() => fundingCount(events) === 12);
    const before = srv.requests.length;
    srv.send({ jsonrpc: '2.0', method: 'heartbeat', params: { type: 'heartbeat' } });
    srv.send({ jsonrpc: '2.0', method: 'heartbeat', params: { type: 'test_request' } });
    await until(() => srv.requests.length === before + 1);
    expect(srv.requests.at(-1)).toMatchObject({ method: 'public/test', params: {} });
    expect(feed.stats().dropped).toEqual({});
  });

  it('normalizes notifications; a malformed frame is counted and the feed carries on', async () => {
    const { srv, feed, events } = await setup();
    feed.start();
    await until(() => fundingCount(events) === 12);
    srv.send('{"jsonrpc":"2.0","method":"subscription","params":{"chan');
    srv.send({ jsonrpc: '2.0', method: 'subscription', params: { channel: 'ticker.BTC-26JUN26-100000-C.100ms', data: { instrument_name: 'BTC-26JUN26-100000-C', mark_iv: 'x' } } });
    srv.send(optionTicker('BTC-26JUN26-100000-C', 1768435200123));
    srv.send({ jsonrpc: '2.0', method: 'subscription', params: { channel: 'deribit_price_index.sol_usdc', data: { index_name: 'sol_usdc', price: 187.25, timestamp: 1768435200456 } } });
    await until(() => events.some((e) => e.kind === 'index'));
    const q = events.find((e): e is OptionQuote => e.kind === 'option');
    expect(q).toMatchObject({ instrument: 'BTC-26JUN26-100000-C', forward: 97000.5, indexPrice: 95000.25, bidIv: 0.515, askIv: null, timestamp: 1768435200.123, receivedAt: T0 });
    expect(q?.markIv).toBeCloseTo(0.5231, 14);
    expect(events.find((e) => e.kind === 'index')).toMatchObject({ base: 'SOL', quote: 'USDC', price: 187.25 });
    expect(feed.stats().dropped).toEqual({ malformed: 1, 'bad-ticker': 1 });
    expect(feed.stats().lastMessageAt).toBe(T0);
  });

  it('reconnects after the server drops the socket, resubscribes, and does not repeat funding points', async () => {
    const { srv, feed, events, timers } = await setup();
    feed.start();
    await until(() => fundingCount(events) === 12);
    srv.sockets[0]?.terminate();
    await until(() => events.some((e) => e.kind === 'status' && e.state === 'disconnected'));
    expect(feed.stats().connected).toBe(false);
    timers.advance(1000); // backoff: min(2^0 s, 30 s) * random() = 1 s
    await until(() => srv.methods(2).filter((m) => m === 'public/get_funding_rate_history').length === 4);
    await until(() => srv.requests.filter((r) => r.conn === 2 && r.method === 'public/get_funding_rate_history').length === 4);
    const subs2 = srv.requests.filter((r) => r.conn === 2 && r.method === 'public/subscribe').flatMap((r) => r.params['channels'] as string[]);
    expect(subs2.sort()).toEqual([...INDEX_CHANNELS, ...EXPECTED_TICKERS.map((n) => `ticker.${n}.100ms`)].sort());
    expect(srv.methods(2)[0]).toBe('public/set_heartbeat');
    await new Promise((r) => setTimeout(r, 20));
    expect(fundingCount(events)).toBe(12); // same points served again: deduplicated by timestamp
    expect(events.filter((e) => e.kind === 'status').map((e) => e.kind === 'status' && e.state)).toEqual(['connected', 'disconnected', 'connected']);
    expect(feed.stats()).toMatchObject({ connected: true, reconnects: 1 });
  });

  it('after a reconnect, resubscribes at once from the known instruments, then re-reads the listings in the background and reconciles', async () => {
    const { srv, feed, events, timers } = await setup();
    feed.start();
    await until(() => fundingCount(events) === 12);
    const defsBefore = events.filter((e) => e.kind === 'instrument').length;
    // while the socket is down, one option is delisted and one is listed
    const btcOpts = srv.instruments.get('BTC:option') as Array<Record<string, unknown>>;
    srv.instruments.set('BTC:option', [...btcOpts.filter((o) => o['instrument_name'] !== 'BTC-25SEP26-120000-C'), option('BTC-26JUN26-110000-C', 'BTC', 110000, 'call', EXP_JUN, 'BTC')]);
    srv.sockets[0]?.terminate();
    await until(() => events.some((e) => e.kind === 'status' && e.state === 'disconnected'));
    timers.advance(1000);
    await until(() => feed.subscribedChannels().has('ticker.BTC-26JUN26-110000-C.100ms') && srv.methods(2).includes('public/unsubscribe'));
    const m2 = srv.methods(2);
    // fresh data first: heartbeat, then every known channel (4 batches of 4), before any listing is read
    expect(m2.slice(0, 5)).toEqual(['public/set_heartbeat', ...Array(4).fill('public/subscribe')]);
    const firstSubs = srv.requests.filter((r) => r.conn === 2 && r.method === 'public/subscribe').slice(0, 4).flatMap((r) => r.params['channels'] as string[]);
    expect(firstSubs.sort()).toEqual([...INDEX_CHANNELS, ...EXPECTED_TICKERS.map((n) => `ticker.${n}.100ms`)].sort());
    expect(m2.indexOf('public/get_instruments')).toBeGreaterThan(4);
    expect(m2.filter((m) => m === 'public/get_instruments')).toHaveLength(6);
    // reconciled: the delisted one unsubscribed, the new one announced and subscribed, every definition announced again
    expect(srv.requests.find((r) => r.conn === 2 && r.method === 'public/unsubscribe')?.params).toEqual({ channels: ['ticker.BTC-25SEP26-120000-C.100ms'] });
    expect(feed.subscribedChannels().has('ticker.BTC-25SEP26-120000-C.100ms')).toBe(false);
    expect(feed.instrumentNames()).toContain('BTC-26JUN26-110000-C');
    expect(feed.instrumentNames()).not.toContain('BTC-25SEP26-120000-C');
    await until(() => events.filter((e) => e.kind === 'instrument').length >= 2 * defsBefore);
    expect(events.filter((e) => e.kind === 'instrument' && e.instrument === 'BTC-26JUN26-110000-C')).toHaveLength(1);
    // ticks flow on the new socket
    srv.send(optionTicker('BTC-26JUN26-100000-C', T0 * 1000 + 5_000));
    await until(() => events.some((e) => e.kind === 'option' && e.timestamp === T0 + 5));
    await until(() => fundingCount(events) === 12 && srv.methods(2).filter((m) => m === 'public/get_funding_rate_history').length === 4);
  });

  it('watchdog: a silent server is dropped and the feed reconnects', async () => {
    const { srv, feed, events, timers } = await setup({ silenceTimeoutMs: 30_000 });
    feed.start();
    await until(() => fundingCount(events) === 12);
    timers.advance(31_000);
    await until(() => events.some((e) => e.kind === 'status' && e.state === 'disconnected'));
    expect(events.find((e) => e.kind === 'status' && e.state === 'disconnected')).toMatchObject({ reason: expect.stringMatching(/^watchdog/) });
    timers.advance(1000);
    await until(() => srv.sockets.length === 2 && feed.stats().connected);
    expect(feed.stats().reconnects).toBe(1);
  });

  it('fetches the just-settled funding hour when a perpetual ticker crosses the hour, retrying until published', async () => {
    const { srv, feed, events } = await setup();
    feed.start();
    await until(() => fundingCount(events) === 12);
    const boundaryMs = (T0 + H) * 1000;
    srv.send(perpTicker('BTC-PERPETUAL', boundaryMs - 100));
    srv.send(perpTicker('BTC-PERPETUAL', boundaryMs - 50)); // same hour: nothing to fetch
    srv.send(perpTicker('BTC-PERPETUAL', boundaryMs + 100)); // crosses 01:00 UTC
    const histReq = (): Req[] => srv.requests.filter((r) => r.method === 'public/get_funding_rate_history' && r.params['end_timestamp'] === boundaryMs);
    await until(() => histReq().length === 1);
    expect(histReq()[0]?.params).toEqual({ instrument_name: 'BTC-PERPETUAL', start_timestamp: boundaryMs - 2 * H * 1000, end_timestamp: boundaryMs });
    // not published yet: the feed retries (fundingRetryMs = 5 ms here)
    srv.funding.get('BTC-PERPETUAL')?.set(boundaryMs, 4.5e-6);
    await until(() => fundingCount(events) === 13);
    const last = events.filter((e): e is FundingRate => e.kind === 'funding').at(-1);
    expect(last).toMatchObject({ instrumentId: 'BTC-PERPETUAL', interest: 4.5e-6, intervalHours: 1, timestamp: T0 + H, base: 'BTC', quote: 'USD' });
    const futs = events.filter((e) => e.kind === 'future');
    expect(futs).toHaveLength(3);
    expect(futs[2]).toMatchObject({ perpetual: true, currentFunding: 0.00001, funding8h: 0.00008 });
    expect(histReq().length).toBe(2); // first answer lacked the 01:00 point; the retry found it
    await new Promise((r) => setTimeout(r, 30));
    expect(fundingCount(events)).toBe(13);
    expect(histReq().length).toBe(2); // published: no further attempts
  });

  it('refreshes the listing: new instruments are announced and subscribed, delisted ones unsubscribed', async () => {
    const { srv, feed, events } = await setup({ instrumentRefreshMs: 40 });
    feed.start();
    await until(() => fundingCount(events) === 12);
    const btcOpts = srv.instruments.get('BTC:option') as Array<Record<string, unknown>>;
    srv.instruments.set('BTC:option', [...btcOpts.filter((o) => o['instrument_name'] !== 'BTC-25SEP26-120000-C'), option('BTC-26JUN26-110000-C', 'BTC', 110000, 'call', EXP_JUN, 'BTC')]);
    await until(() => srv.requests.some((r) => r.method === 'public/unsubscribe') && feed.subscribedChannels().has('ticker.BTC-26JUN26-110000-C.100ms'));
    expect(srv.requests.find((r) => r.method === 'public/unsubscribe')?.params).toEqual({ channels: ['ticker.BTC-25SEP26-120000-C.100ms'] });
    expect(feed.subscribedChannels().has('ticker.BTC-25SEP26-120000-C.100ms')).toBe(false);
    expect(events.filter((e) => e.kind === 'instrument' && e.instrument === 'BTC-26JUN26-110000-C')).toHaveLength(1);
    expect(feed.instrumentNames()).toContain('BTC-26JUN26-110000-C');
    expect(feed.instrumentNames()).not.toContain('BTC-25SEP26-120000-C');
  });

  it('a subscription refused during a listing refresh is asked for again at the next refresh', async () => {
    const { srv, feed, events } = await setup({ instrumentRefreshMs: 40 });
    feed.start();
    await until(() => fundingCount(events) === 12);
    const channel = 'ticker.BTC-26JUN26-110000-C.100ms';
    srv.failOnce.set('public/subscribe', { code: 11050, message: 'bad_request' });
    const btcOpts = srv.instruments.get('BTC:option') as Array<Record<string, unknown>>;
    srv.instruments.set('BTC:option', [...btcOpts, option('BTC-26JUN26-110000-C', 'BTC', 110000, 'call', EXP_JUN, 'BTC')]);
    const asked = () => srv.requests.filter((r) => r.method === 'public/subscribe' && (r.params['channels'] as string[]).includes(channel));
    await until(() => feed.subscribedChannels().has(channel));
    expect(asked().length).toBe(2); // refused once, asked again
    expect(srv.sockets).toHaveLength(1); // on the same socket
  });

  it('retries a rate-limited request, and reconnects when setup gets an error answer', async () => {
    const { srv, feed, events } = await setup();
    srv.failOnce.set('public/get_instruments', { code: 10028, message: 'too_many_requests' });
    feed.start();
    await until(() => fundingCount(events) === 12);
    expect(srv.methods(1).filter((m) => m === 'public/get_instruments')).toHaveLength(7);
    expect(srv.sockets).toHaveLength(1);

    const { srv: srv2, feed: feed2, events: events2, timers: timers2 } = await setup();
    srv2.failOnce.set('public/set_heartbeat', { code: 10009, message: 'invalid_argument' });
    feed2.start();
    await until(() => events2.some((e) => e.kind === 'status' && e.state === 'disconnected'));
    expect(events2.find((e) => e.kind === 'status' && e.state === 'disconnected')).toMatchObject({ reason: expect.stringContaining('10009') });
    timers2.advance(1000);
    await until(() => fundingCount(events2) === 12);
    expect(srv2.sockets).toHaveLength(2);
  });

  it('a request without an answer times out and forces a reconnect', async () => {
    // 1 s: long enough that answered requests never time out on a loaded 2-core machine
    const { srv, feed, events, timers } = await setup({ requestTimeoutMs: 1000 });
    srv.ignoreOnce.add('public/subscribe');
    feed.start();
    await until(() => events.some((e) => e.kind === 'status' && e.state === 'disconnected'));
    expect(events.find((e) => e.kind === 'status' && e.state === 'disconnected')).toMatchObject({ reason: expect.stringContaining('public/subscribe: no answer within 1000 ms') });
    timers.advance(1000);
    await until(() => fundingCount(events) === 12);
    expect(srv.sockets).toHaveLength(2);
    expect(feed.stats().reconnects).toBe(1);
  });

  it('stop() emits disconnected, completes, and never reconnects', async () => {
    const { srv, feed, events, timers } = await setup();
    let completed = false;
    feed.events$.subscribe({ complete: () => (completed = true) });
    feed.start();
    await until(() => fundingCount(events) === 12);
    await feed.stop();
    expect(completed).toBe(true);
    expect(events.at(-1)).toMatchObject({ kind: 'status', state: 'disconnected', reason: 'stopped' });
    timers.advance(120_000);
    feed.start();
    await new Promise((r) => setTimeout(r, 20));
    expect(srv.sockets).toHaveLength(1);
    expect(feed.stats().connected).toBe(false);
  });

  it('rejects pairs outside the DERIBIT table', () => {
    expect(() => new DeribitFeed({ pairs: [{ base: 'BTC', quote: 'USDC' }] })).toThrow(/unsupported pair BTC\/USDC/);
  });
});
