/**
 * BybitFeed against a tiny fake Bybit on 127.0.0.1: an HTTP server for instruments-info (cursor-paged,
 * 3 items a page) and funding history, and one WebSocket server (port 0) serving both streams by
 * path (`/v5/public/option`, `/v5/public/linear`), answering subscriptions and pings in each stream's
 * own format and pushing recorded tickers. No timed assertions: every wait is for a condition.
 *
 * Listing items are built from the docs' USDC option item (ETH-3JAN23-1250-P) and linear item, with
 * the symbols of the real 2023-04-05 option captures, 16 made-up BTC strikes (to need several option
 * connections) and the USDC perpetuals BTCPERP/ETHPERP and the USDC future BTC-26DEC25.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { WebSocket as ServerSocket } from 'ws';
import { BybitFeed, type BybitFeedOptions } from '../../adapters/bybit/feed.js';
import type { FutureQuote, MarketEvent, OptionQuote } from '../../src/domain/events.js';
import { collectEvents, sendJson, startFakeExchange, until, useCleanups } from '../helpers/fakeExchange.js';
import { docsExamples, fixtureText } from '../helpers/fixtures.js';

const docs = docsExamples('bybit');
const optionMsgs = fixtureText('bybit', 'tardis-option-tickers-2023-04-05.jsonl').split('\n').filter(Boolean);

/** 2023-04-05T00:00Z: the recorded option tickers' day. */
const NOW_S = Date.parse('2023-04-05T00:00:00Z') / 1000;
const clock = { now: () => NOW_S };

const optionTemplate = ((docs['GET /v5/market/instruments-info category=option (older docs version 16b7b4958 2025-03-28, USDC-settled option)'] as { result: { list: Record<string, unknown>[] } }).result.list[0]) as Record<string, unknown>;
const linearTemplate = ((docs['GET /v5/market/instruments-info category=linear'] as { result: { list: Record<string, unknown>[] } }).result.list[0]) as Record<string, unknown>;
const usdtOption = ((docs['GET /v5/market/instruments-info category=option'] as { result: { list: Record<string, unknown>[] } }).result.list[0]) as Record<string, unknown>;

function optionItem(symbol: string): Record<string, unknown> {
  const [base, date, , cp] = symbol.split('-') as [string, string, string, string];
  const d = /^(\d+)([A-Z]{3})(\d\d)$/.exec(date) as RegExpExecArray;
  const month = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'].indexOf(d[2] as string);
  const delivery = Date.UTC(2000 + Number(d[3]), month, Number(d[1]), 8);
  return { ...optionTemplate, symbol, baseCoin: base, optionsType: cp === 'C' ? 'Call' : 'Put', deliveryTime: String(delivery), launchTime: '1672560000000' };
}
function linearItem(symbol: string, base: string, contractType: string, deliveryTime = '0'): Record<string, unknown> {
  return { ...linearTemplate, symbol, baseCoin: base, quoteCoin: 'USDC', settleCoin: 'USDC', status: 'Trading', contractType, deliveryTime, isPreListing: false, preListingInfo: null };
}

const BTC_OPTIONS = Array.from({ length: 8 }, (_, i) => 20000 + 1000 * i).flatMap((k) => [`BTC-28APR23-${k}-C`, `BTC-28APR23-${k}-P`]);
const OPTION_SYMBOLS = ['SOL-28APR23-24-C', 'ETH-30JUN23-200-P', ...BTC_OPTIONS];
const OPTIONS = [...OPTION_SYMBOLS.map(optionItem), usdtOption];
const LINEAR = [linearItem('BTCPERP', 'BTC', 'LinearPerpetual'), linearItem('ETHPERP', 'ETH', 'LinearPerpetual'), linearItem('BTC-26DEC25', 'BTC', 'LinearFutures', String(Date.UTC(2025, 11, 26, 8))), linearTemplate];
const LINEAR_TOPICS = ['tickers.BTC-26DEC25', 'tickers.BTCPERP', 'tickers.ETHPERP'];

/** The docs' BTCUSDT LinearPerpetual snapshot renamed to the USDC perpetual BTCPERP (values verbatim). */
function btcPerpSnapshot(): Record<string, unknown> {
  const s = JSON.parse(JSON.stringify(docs['ws tickers.BTCUSDT (LinearPerpetual)'])) as { topic: string; data: Record<string, string> };
  s.topic = 'tickers.BTCPERP';
  s.data['symbol'] = 'BTCPERP';
  return s;
}
const btcPerpDelta = { topic: 'tickers.BTCPERP', type: 'delta', ts: 1760325052730, cs: 9532239430, data: { symbol: 'BTCPERP', markPrice: '66670.10' } };

const cleanups = useCleanups();

interface Frame {
  readonly path: string;
  readonly conn: number;
  readonly raw: string;
  readonly msg: { req_id?: string; op: string; args?: string[] };
}

interface FakeBybit {
  readonly optionUrl: string;
  readonly linearUrl: string;
  readonly baseUrl: string;
  readonly requests: URL[];
  readonly frames: Frame[];
  readonly sockets: { path: string; conn: number; s: ServerSocket }[];
  onSubscribe: (s: ServerSocket, f: Frame) => void;
}

async function fakeBybit(): Promise<FakeBybit> {
  const http = (url: URL, res: ServerResponse): void => {
    const ok = (result: unknown): void => sendJson(res, { retCode: 0, retMsg: 'OK', result, retExtInfo: {}, time: NOW_S * 1000 });
    if (url.pathname === '/v5/market/instruments-info') {
      const category = url.searchParams.get('category');
      const all = (category === 'option' ? OPTIONS : LINEAR).filter((x) => x['baseCoin'] === url.searchParams.get('baseCoin'));
      const from = Number(url.searchParams.get('cursor') ?? '0');
      const next = from + 3 < all.length ? String(from + 3) : '';
      ok({ category, list: all.slice(from, from + 3), nextPageCursor: next });
    } else if (url.pathname === '/v5/market/funding/history') {
      const sym = url.searchParams.get('symbol');
      const list = sym === 'ETHPERP' ? (docs['GET /v5/market/funding/history'] as { result: { list: unknown[] } }).result.list : [];
      ok({ category: 'linear', list });
    } else res.writeHead(404).end();
  };
  const connection = (s: ServerSocket, conn: number, path: string): void => {
    fake.sockets.push({ path, conn, s });
    s.on('message', (d) => {
      const raw = d.toString();
      const f: Frame = { path, conn, raw, msg: JSON.parse(raw) as Frame['msg'] };
      fake.frames.push(f);
      if (f.msg.op === 'ping') {
        // each stream's own pong (docs: Connect, "Pong message example of public channels")
        s.send(path.endsWith('/option') ? JSON.stringify({ args: [String(Date.now())], op: 'pong' }) : JSON.stringify({ success: true, ret_msg: 'pong', conn_id: `c${conn}`, req_id: f.msg.req_id, op: 'ping' }));
      } else if (f.msg.op === 'subscribe') {
        s.send(
          path.endsWith('/option')
            ? JSON.stringify({ success: true, conn_id: `c${conn}`, data: { failTopics: [], successTopics: f.msg.args }, type: 'COMMAND_RESP' })
            : JSON.stringify({ success: true, ret_msg: '', conn_id: `c${conn}`, req_id: f.msg.req_id, op: 'subscribe' }),
        );
        fake.onSubscribe(s, f);
      }
    });
  };
  const servers = await startFakeExchange({ http, connection }, cleanups);
  const fake: FakeBybit = {
    optionUrl: `${servers.wsBase}/v5/public/option`,
    linearUrl: `${servers.wsBase}/v5/public/linear`,
    baseUrl: servers.baseUrl,
    requests: servers.requests,
    frames: [],
    sockets: [],
    onSubscribe: () => {},
  };
  return fake;
}

/** Push the recorded option tickers and the BTCPERP snapshot + delta when their topics are subscribed. */
function pushRecorded(s: ServerSocket, f: Frame): void {
  for (const m of optionMsgs) if (f.msg.args?.includes((JSON.parse(m) as { topic: string }).topic)) s.send(m);
  if (f.msg.args?.includes('tickers.BTCPERP')) {
    s.send(JSON.stringify(btcPerpSnapshot()));
    s.send(JSON.stringify(btcPerpDelta));
  }
}

function feed(fake: FakeBybit, extra: Partial<BybitFeedOptions> = {}): { f: BybitFeed; events: MarketEvent[] } {
  const f = new BybitFeed({
    optionUrl: fake.optionUrl,
    linearUrl: fake.linearUrl,
    baseUrl: fake.baseUrl,
    clock,
    restPacingMs: 0,
    instrumentRefreshMs: 0,
    fundingLookbackS: 120 * 86_400,
    maxOptionArgsPerConnection: 6,
    maxArgsPerRequest: 4,
    transport: { backoffBaseMs: 20, backoffMaxMs: 50, random: () => 1 },
    ...extra,
  });
  return { f, events: collectEvents(f, cleanups) };
}

const subscribed = (fake: FakeBybit, conn: number): string[] =>
  fake.frames
    .filter((x) => x.conn === conn && x.msg.op === 'subscribe')
    .flatMap((x) => x.msg.args ?? [])
    .sort();

describe('BybitFeed on a fake Bybit (127.0.0.1)', () => {
  it('pages the listings, shards the option topics, subscribes in small requests, merges linear deltas', async () => {
    const fake = await fakeBybit();
    fake.onSubscribe = pushRecorded;
    const { f, events } = feed(fake);
    f.start();
    await until(
      () =>
        events.filter((e) => e.kind === 'option').length === 2 &&
        events.filter((e) => e.kind === 'future').length === 2 &&
        events.some((e) => e.kind === 'funding') &&
        f.stats().connected,
    );

    // REST: cursor paging (3 items a page) per category and base coin
    const btcOptionCursors = fake.requests
      .filter((u) => u.pathname === '/v5/market/instruments-info' && u.searchParams.get('category') === 'option' && u.searchParams.get('baseCoin') === 'BTC')
      .map((u) => u.searchParams.get('cursor'));
    expect(btcOptionCursors).toEqual([null, '3', '6', '9', '12', '15']);
    for (const u of fake.requests.filter((x) => x.pathname === '/v5/market/instruments-info')) expect(u.searchParams.get('limit')).toBe('1000');
    const fundingReq = fake.requests.filter((u) => u.pathname === '/v5/market/funding/history');
    expect(fundingReq.map((u) => u.searchParams.get('symbol')).sort()).toEqual(['BTCPERP', 'ETHPERP']);
    expect(fundingReq.every((u) => u.searchParams.get('category') === 'linear' && u.searchParams.get('limit') === '200')).toBe(true);

    // definitions: 18 USDC options + 2 perpetuals + 1 future (USDT option and BIOUSDT skipped)
    const defs = events.filter((e) => e.kind === 'instrument').map((e) => e.instrument).sort();
    expect(defs).toEqual([...OPTION_SYMBOLS, 'BTCPERP', 'ETHPERP', 'BTC-26DEC25'].sort());

    // connections: 18 option topics over 3 sockets of <= 6, disjoint; the linear socket has the 3 USDC contracts
    const diag = f.diagnostics();
    const opt = diag.connections.filter((c) => c.kind === 'option');
    expect(opt.map((c) => c.topics)).toEqual([6, 6, 6]);
    expect(opt.flatMap((c) => c.sent).sort()).toEqual(OPTION_SYMBOLS.map((s) => `tickers.${s}`).sort());
    expect(diag.connections.find((c) => c.kind === 'linear')?.sent).toEqual(LINEAR_TOPICS);
    const optionConns = [...new Set(fake.frames.filter((x) => x.path.endsWith('/option')).map((x) => x.conn))];
    expect(optionConns).toHaveLength(3);
    for (const c of optionConns) expect(subscribed(fake, c).length).toBe(6);
    const linearConn = fake.frames.find((x) => x.path.endsWith('/linear'))?.conn as number;
    expect(subscribed(fake, linearConn)).toEqual(LINEAR_TOPICS);
    for (const x of fake.frames.filter((y) => y.msg.op === 'subscribe')) {
      expect(Object.keys(x.msg).sort()).toEqual(['args', 'op', 'req_id']);
      expect((x.msg.args ?? []).length).toBeLessThanOrEqual(4);
    }

    // events: the recorded option quotes; BTCPERP snapshot then the merged delta; REST funding point
    const sol = events.find((e): e is OptionQuote => e.kind === 'option' && e.instrument === 'SOL-28APR23-24-C');
    expect(sol).toMatchObject({ markIv: 1.4674, forward: 20.93, bidIv: 0.6004, receivedAt: NOW_S });
    const perp = events.filter((e): e is FutureQuote => e.kind === 'future' && e.instrument === 'BTCPERP');
    expect(perp.map((q) => [q.markPrice, q.indexPrice, q.currentFunding])).toEqual([
      [66666.6, 115418.19, -0.005],
      [66670.1, 115418.19, -0.005],
    ]);
    expect(events.filter((e) => e.kind === 'funding')).toEqual([
      { kind: 'funding', source: 'BYBIT', instrumentId: 'ETHPERP', base: 'ETH', quote: 'USDC', interest: 0.0001, intervalHours: 8, timestamp: 1672041600 },
    ]);
    expect(events.filter((e) => e.kind === 'status').map((e) => e.kind === 'status' && e.state)).toEqual(['connected']);
    expect(f.stats().dropped).toEqual({});
  });

  it('also shards by topic characters (here 100 per socket instead of 21,000)', async () => {
    const fake = await fakeBybit();
    const { f } = feed(fake, { maxOptionArgsPerConnection: 2000, maxArgsCharsPerConnection: 100 });
    f.start();
    await until(() => f.stats().connected && f.diagnostics().connections.every((c) => c.sent.length === c.topics));
    const opt = f.diagnostics().connections.filter((c) => c.kind === 'option');
    for (const c of opt) {
      expect(c.chars).toBeLessThanOrEqual(100);
      expect(c.sent.reduce((n, t) => n + t.length, 0)).toBe(c.chars);
    }
    // 18 topics of 24-29 characters: 3 per socket
    expect(opt.map((c) => c.topics)).toEqual([3, 3, 3, 3, 3, 3]);
    expect(opt.flatMap((c) => c.sent).sort()).toEqual(OPTION_SYMBOLS.map((s) => `tickers.${s}`).sort());
  });

  it('sends {"op":"ping"} on every socket and counts both pong formats', async () => {
    const fake = await fakeBybit();
    const { f } = feed(fake, { pingIntervalMs: 80 });
    f.start();
    await until(() => f.stats().connected && new Set(fake.frames.filter((x) => x.msg.op === 'ping').map((x) => x.conn)).size === 4 && f.diagnostics().pongs >= 4);
    const pings = fake.frames.filter((x) => x.msg.op === 'ping');
    expect(new Set(pings.map((x) => x.path))).toEqual(new Set(['/v5/public/option', '/v5/public/linear']));
    for (const p of pings) expect(Object.keys(p.msg).sort()).toEqual(['op', 'req_id']);
    expect(f.stats().reconnects).toBe(0);
  });

  it('reconnects a dropped linear socket, resubscribes it, needs a fresh snapshot, and catches funding up without duplicates', async () => {
    const fake = await fakeBybit();
    let dropped = false;
    fake.onSubscribe = (s, fr) => {
      if (dropped && fr.path.endsWith('/linear') && fr.msg.args?.includes('tickers.BTCPERP')) {
        s.send(JSON.stringify(btcPerpDelta)); // a delta before any snapshot on the new socket
        s.send(JSON.stringify(btcPerpSnapshot()));
      }
    };
    const { f, events } = feed(fake);
    f.start();
    await until(() => f.stats().connected && f.diagnostics().connections.every((c) => c.sent.length === c.topics));
    const first = fake.sockets.find((x) => x.path.endsWith('/linear'));
    await until(() => subscribed(fake, first?.conn ?? -1).length === LINEAR_TOPICS.length);
    dropped = true;
    first?.s.terminate();
    await until(() => events.some((e) => e.kind === 'future' && e.instrument === 'BTCPERP') && f.stats().connected);
    const linearConns = [...new Set(fake.frames.filter((x) => x.path.endsWith('/linear')).map((x) => x.conn))];
    expect(linearConns).toHaveLength(2);
    expect(subscribed(fake, linearConns[0] as number)).toEqual(LINEAR_TOPICS);
    expect(subscribed(fake, linearConns[1] as number)).toEqual(LINEAR_TOPICS);
    expect(f.stats().reconnects).toBe(1);
    expect(f.stats().dropped).toEqual({ 'delta-without-snapshot': 1 });
    expect(events.filter((e) => e.kind === 'status').map((e) => e.kind === 'status' && e.state)).toEqual(['connected', 'disconnected', 'connected']);
    await until(() => fake.requests.filter((u) => u.pathname === '/v5/market/funding/history').length >= 4);
    expect(events.filter((e) => e.kind === 'funding')).toHaveLength(1);
  });

  it('counts failed subscriptions and malformed frames without throwing', async () => {
    const fake = await fakeBybit();
    let sent = false;
    fake.onSubscribe = (s, fr) => {
      if (sent || !fr.path.endsWith('/option')) return;
      sent = true;
      s.send(JSON.stringify({ success: true, conn_id: 'x', data: { failTopics: [fr.msg.args?.[0]], successTopics: [] }, type: 'COMMAND_RESP' }));
      s.send('{oops');
      s.send(JSON.stringify({ topic: 'tickers.SOL-28APR23-24-C', type: 'snapshot', ts: 1680652810254, data: { symbol: 'SOL-28APR23-24-C', markPriceIv: 1.4674 } }));
    };
    const { f } = feed(fake);
    f.start();
    await until(() => Object.keys(f.stats().dropped).length === 3);
    expect(f.stats().dropped).toEqual({ 'subscribe-error': 1, malformed: 1, 'bad-ticker': 1 });
  });
});
