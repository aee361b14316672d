/**
 * OkxFeed against a tiny fake OKX on 127.0.0.1: an HTTP server for the REST bootstrap (serving the
 * real 2025-05-08 listings of test/fixtures/okx in OKX's envelope, and the docs' funding history,
 * paged with `after`) and a WebSocket server (port 0) that acknowledges subscriptions, answers the
 * text `ping` with `pong` and pushes recorded messages. No timed assertions: every wait is for a
 * condition, and "not sent" is checked behind a later frame on the same socket (TCP keeps order).
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { WebSocket as ServerSocket } from 'ws';
import { OkxFeed, type OkxFeedOptions } from '../../adapters/okx/feed.js';
import type { MarketEvent, OptionQuote } from '../../src/domain/events.js';
import { collectEvents, sendJson, startFakeExchange, until, useCleanups } from '../helpers/fakeExchange.js';
import { docsExamples, fixtureText } from '../helpers/fixtures.js';

const fx = (name: string): string => fixtureText('okx', name);
const docs = docsExamples('okx');
const listings: Record<string, Record<string, unknown>[]> = {
  OPTION: JSON.parse(fx('rest-instruments-OPTION-2025-05-08.trimmed.json')) as Record<string, unknown>[],
  FUTURES: JSON.parse(fx('rest-instruments-FUTURES-2025-05-08.json')) as Record<string, unknown>[],
  SWAP: JSON.parse(fx('rest-instruments-SWAP-2025-05-08.trimmed.json')) as Record<string, unknown>[],
};
const fundingHistory = (docs['GET /api/v5/public/funding-rate-history'] as { data: Record<string, string>[] }).data;
const btcIndexPush = (JSON.parse(fx('tardis-xperp-index-and-funding-2026-08-04.jsonl').split('\n')[0] as string) as { message: unknown }).message;

/** 2023-12-20T11:00Z: the docs' funding points (00:00 and 08:00 that day) are inside a 7-day lookback; every 2025 listing is live. */
const NOW_S = Date.parse('2023-12-20T11:00:00Z') / 1000;
const clock = { now: () => NOW_S };

const cleanups = useCleanups();

interface Sub {
  readonly conn: number;
  readonly frame: string;
  readonly msg: { id?: string; op: string; args: { channel: string; instId?: string; instFamily?: string }[] };
}

interface FakeOkx {
  readonly wsUrl: string;
  readonly baseUrl: string;
  readonly requests: URL[];
  readonly subs: Sub[];
  readonly pings: number[];
  readonly sockets: ServerSocket[];
  answerPing: boolean;
  onSubscribe: (s: ServerSocket, conn: number, sub: Sub) => void;
}

async function fakeOkx(): Promise<FakeOkx> {
  const http = (url: URL, res: ServerResponse): void => {
    const send = (data: unknown[]): void => sendJson(res, { code: '0', msg: '', data });
    if (url.pathname === '/api/v5/public/instruments') {
      const type = url.searchParams.get('instType') ?? '';
      const fam = url.searchParams.get('instFamily');
      send((listings[type] ?? []).filter((x) => fam === null || x['instFamily'] === fam));
    } else if (url.pathname === '/api/v5/public/funding-rate-history') {
      const instId = url.searchParams.get('instId');
      const after = Number(url.searchParams.get('after') ?? Infinity);
      const limit = Number(url.searchParams.get('limit') ?? 400);
      send(fundingHistory.filter((x) => x['instId'] === instId && Number(x['fundingTime']) < after).slice(0, limit));
    } else {
      res.writeHead(404).end();
    }
  };
  const connection = (s: ServerSocket, conn: number): void => {
    fake.sockets.push(s);
    s.on('message', (d) => {
      const frame = d.toString();
      if (frame === 'ping') {
        fake.pings.push(conn);
        if (fake.answerPing) s.send('pong');
        return;
      }
      const msg = JSON.parse(frame) as Sub['msg'];
      const sub: Sub = { conn, frame, msg };
      fake.subs.push(sub);
      if (msg.op === 'subscribe') {
        for (const a of msg.args) s.send(JSON.stringify({ id: msg.id, event: 'subscribe', arg: a, connId: `c${conn}` }));
        fake.onSubscribe(s, conn, sub);
      }
    });
  };
  const servers = await startFakeExchange({ http, connection }, cleanups);
  const fake: FakeOkx = {
    wsUrl: `${servers.wsBase}/ws/v5/public`,
    baseUrl: servers.baseUrl,
    requests: servers.requests,
    subs: [],
    pings: [],
    sockets: [],
    answerPing: true,
    onSubscribe: () => {},
  };
  return fake;
}

function feed(fake: FakeOkx, extra: Partial<OkxFeedOptions> = {}): { f: OkxFeed; events: MarketEvent[] } {
  const f = new OkxFeed({
    url: fake.wsUrl,
    baseUrl: fake.baseUrl,
    clock,
    restPacingMs: 0,
    fundingPageLimit: 1,
    instrumentRefreshMs: 0,
    transport: { backoffBaseMs: 20, backoffMaxMs: 50, random: () => 1 },
    ...extra,
  });
  return { f, events: collectEvents(f, cleanups) };
}

const keyOf = (a: { channel: string; instId?: string; instFamily?: string }): string => `${a.channel}|${a.instId ?? a.instFamily}`;
const argsOn = (fake: FakeOkx, conn: number): string[] =>
  fake.subs
    .filter((s) => s.conn === conn && s.msg.op === 'subscribe')
    .flatMap((s) => s.msg.args.map(keyOf))
    .sort();

const FUTURES = [
  'BTC-USD-250509', 'BTC-USD-250516', 'BTC-USD-250530', 'BTC-USD-250627', 'BTC-USD-250926', 'BTC-USD-251226', 'BTC-USD-260327',
  'ETH-USD-250509', 'ETH-USD-250516', 'ETH-USD-250530', 'ETH-USD-250627', 'ETH-USD-250926', 'ETH-USD-251226',
];
const EXPECTED_ARGS = [
  'index-tickers|BTC-USD', 'index-tickers|ETH-USD', 'opt-summary|BTC-USD', 'opt-summary|ETH-USD',
  ...['BTC-USD-SWAP', 'ETH-USD-SWAP'].flatMap((s) => [`mark-price|${s}`, `tickers|${s}`, `funding-rate|${s}`]),
  ...FUTURES.flatMap((s) => [`mark-price|${s}`, `tickers|${s}`]),
].sort();

describe('OkxFeed on a fake OKX (127.0.0.1)', () => {
  it('bootstraps instruments and paged funding history, subscribes everything in batches within 64 KB (here 600 B), joins index and opt-summary', async () => {
    const fake = await fakeOkx();
    fake.onSubscribe = (s, _conn, sub) => {
      if (sub.msg.args.some((a) => a.channel === 'opt-summary' && a.instFamily === 'BTC-USD')) {
        s.send(JSON.stringify(btcIndexPush));
        s.send(JSON.stringify(docs['ws opt-summary push']));
      }
    };
    const { f, events } = feed(fake, { maxRequestBytes: 600 });
    f.start();
    await until(
      () =>
        argsOn(fake, 1).length === EXPECTED_ARGS.length &&
        f.diagnostics().acked.length === EXPECTED_ARGS.length &&
        events.some((e) => e.kind === 'option') &&
        events.filter((e) => e.kind === 'funding').length === 2,
    );

    // REST: every family and type; funding history paged back with `after`
    const inst = fake.requests.filter((u) => u.pathname.endsWith('/instruments')).map((u) => `${u.searchParams.get('instType')}:${u.searchParams.get('instFamily')}`);
    expect(inst.sort()).toEqual(['FUTURES:BTC-USD', 'FUTURES:ETH-USD', 'OPTION:BTC-USD', 'OPTION:ETH-USD', 'SWAP:BTC-USD', 'SWAP:ETH-USD']);
    const fund = fake.requests.filter((u) => u.pathname.endsWith('/funding-rate-history') && u.searchParams.get('instId') === 'BTC-USD-SWAP');
    expect(fund.map((u) => u.searchParams.get('after'))).toEqual([null, '1703059200000', '1703030400000']);
    expect(fund.every((u) => u.searchParams.get('limit') === '1')).toBe(true);

    // events: 26 options + 13 futures + 2 swaps announced once; funding ascending; the quote joined with the index
    const defs = events.filter((e) => e.kind === 'instrument');
    expect(defs).toHaveLength(41);
    expect(new Set(defs.map((d) => d.instrument)).size).toBe(41);
    expect(events.filter((e) => e.kind === 'funding').map((e) => e.kind === 'funding' && [e.instrumentId, e.timestamp, e.interest])).toEqual([
      ['BTC-USD-SWAP', 1703030400, 0.0002279755647389],
      ['BTC-USD-SWAP', 1703059200, 0.0000746572360545],
    ]);
    const q = events.find((e): e is OptionQuote => e.kind === 'option');
    expect(q).toMatchObject({ instrument: 'BTC-USD-241013-70000-P', indexPrice: 64280, forward: 62604.6993093463, markIv: 0.3675503331, receivedAt: NOW_S });
    expect(events.filter((e) => e.kind === 'status').map((e) => e.kind === 'status' && e.state)).toEqual(['connected']);

    // subscriptions: shaped {id, op, args[{channel, instId|instFamily}]}, each frame <= 600 bytes, several frames
    const frames = fake.subs.filter((s) => s.conn === 1);
    expect(frames.length).toBeGreaterThan(1);
    for (const s of frames) {
      expect(Buffer.byteLength(s.frame)).toBeLessThanOrEqual(600);
      expect(s.msg.op).toBe('subscribe');
      expect(s.msg.id).toMatch(/^[0-9]{1,32}$/);
      for (const a of s.msg.args) expect(Object.keys(a).sort()).toEqual(a.channel === 'opt-summary' ? ['channel', 'instFamily'] : ['channel', 'instId']);
    }
    expect(argsOn(fake, 1)).toEqual(EXPECTED_ARGS);
    expect(f.diagnostics().acked).toEqual(EXPECTED_ARGS);
    expect(f.stats()).toMatchObject({ source: 'OKX', connected: true, reconnects: 0 });
  });

  it('answers silence with `ping`, counts the `pong`, and stays connected', async () => {
    const fake = await fakeOkx();
    const { f } = feed(fake, { pingAfterIdleMs: 120, pongTimeoutMs: 5_000 });
    f.start();
    await until(() => fake.pings.length >= 2 && f.diagnostics().pongs >= 2);
    expect(fake.pings.every((c) => c === 1)).toBe(true);
    expect(f.diagnostics().pingsSent).toBeGreaterThanOrEqual(2);
    expect(f.stats().reconnects).toBe(0);
  });

  it('reconnects after the server drops the socket and subscribes everything again on the new one', async () => {
    const fake = await fakeOkx();
    let dropped = false;
    fake.onSubscribe = (s, conn) => {
      if (conn === 1 && !dropped && argsOn(fake, 1).length === EXPECTED_ARGS.length) {
        dropped = true;
        s.terminate();
      }
    };
    const { f, events } = feed(fake);
    f.start();
    await until(() => argsOn(fake, 2).length === EXPECTED_ARGS.length && f.stats().connected);
    expect(argsOn(fake, 1)).toEqual(EXPECTED_ARGS);
    expect(argsOn(fake, 2)).toEqual(EXPECTED_ARGS);
    expect(f.stats().reconnects).toBe(1);
    expect(events.filter((e) => e.kind === 'status').map((e) => e.kind === 'status' && e.state)).toEqual(['connected', 'disconnected', 'connected']);
    // the catch-up after the reconnect re-read the funding history without emitting duplicates
    await until(() => fake.requests.filter((u) => u.pathname.endsWith('/funding-rate-history')).length >= 8);
    expect(events.filter((e) => e.kind === 'funding')).toHaveLength(2);
  });

  it('a missing pong ends in a reconnect', async () => {
    const fake = await fakeOkx();
    fake.answerPing = false;
    const { f } = feed(fake, { pingAfterIdleMs: 100, pongTimeoutMs: 100 });
    f.start();
    await until(() => fake.sockets.length >= 2 && f.stats().reconnects >= 1);
    expect(fake.pings[0]).toBe(1);
  });

  it('spends at most requestsPerHour subscribe requests per connection and keeps the rest for later', async () => {
    const fake = await fakeOkx();
    const { f, events } = feed(fake, { maxRequestBytes: 300, requestsPerHour: 2, pingAfterIdleMs: 150 });
    f.start();
    // once the listing is in, the feed has tried to subscribe the futures too (synchronously);
    // a ping written after that reaches the server behind any request written before it.
    await until(() => events.filter((e) => e.kind === 'instrument').length === 41);
    const pings = fake.pings.length;
    await until(() => fake.pings.length > pings);
    const reqs = fake.subs.filter((s) => s.conn === 1);
    expect(reqs).toHaveLength(2);
    expect(f.diagnostics().requestsLastHour).toBe(2);
    const sent = argsOn(fake, 1);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.length).toBeLessThan(EXPECTED_ARGS.length);
    expect(f.diagnostics().sent).toEqual(sent);
  });

  it('counts error events and malformed frames without throwing', async () => {
    const fake = await fakeOkx();
    fake.onSubscribe = (s, conn, sub) => {
      if (conn === 1 && sub === fake.subs.find((x) => x.conn === 1)) {
        s.send(JSON.stringify({ id: '1512', event: 'error', code: '60012', msg: 'Invalid request: {"op": "subscribe", "argss":[]}', connId: 'c1' }));
        s.send('{not json');
        s.send(JSON.stringify({ arg: { channel: 'opt-summary', instFamily: 'BTC-USD' }, data: [{ instId: 'BTC-USD-241013-70000-P', markVol: 'abc', ts: '1' }] }));
      }
    };
    const { f } = feed(fake);
    f.start();
    await until(() => Object.keys(f.stats().dropped).length === 3);
    expect(f.stats().dropped).toEqual({ 'ws-error': 1, malformed: 1, 'bad-opt-summary': 1 });
    expect(f.stats().connected).toBe(true);
  });
});
