/**
 * The stream hub and channel names without a network (src/api/stream/): channel parsing and aliases, the
 * interval_ms conflation (latest wins), fields/expiries filters, the iv threshold, resume from the ring and the
 * reset past it, and the bounded per-connection queue (latest wins while the socket is blocked). The cache holds
 * the surface calibrated from the REAL recorded Deribit BTC chain (test/helpers/realChainCache.ts); new
 * "recalibrations" are that snapshot with the next sequence. The WebSocket and SSE ends are tested on the
 * started service (test/integration/stream.test.ts).
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_IV_POINTS, parseChannel } from '../../src/api/stream/channels.js';
import { StreamHub, filterData, framePayload, textFrame, type Item, type StreamTransport } from '../../src/api/stream/hub.js';
import { parseSubscribe } from '../../src/api/stream/rpc.js';
import { parseEventId } from '../../src/api/routes/stream.js';
import { asyncApiDocument } from '../../src/api/stream/asyncapi.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';

const CH = 'surface.DERIBIT.BTC-USD.SVI';
let market: RealChainCache;
let base: SurfaceSnapshot;
let seq = 1;
const hubs: StreamHub[] = [];

/** Put the next "recalibration" (same numbers, next sequence) into the cache. */
function recalibrate(): number {
  seq++;
  market.cache.putSurface({ ...base, sequence: seq });
  return seq;
}

/** A transport that records what it is given; `blocked` makes it report a full socket. */
function fakeTransport() {
  const sent: Array<{ channel: string; text: string; item: Item }> = [];
  const t = {
    kind: 'ws' as const,
    blocked: false,
    closedWith: null as null | { code: number; reason: string },
    buffered: () => (t.blocked ? 1e12 : 0),
    write: (sub: { state: { channel: { name: string } } }, item: Item, text: string | Buffer) => {
      // WebSocket messages are complete frames (RFC 6455): the JSON is their payload
      sent.push({ channel: sub.state.channel.name, text: typeof text === 'string' ? text : framePayload(text).toString('utf8'), item });
      return text.length;
    },
    close: (code: number, reason: string) => {
      t.closedWith = { code, reason };
    },
  };
  return { t: t as StreamTransport & typeof t, sent };
}

const turn = () => new Promise((r) => setImmediate(r));
const data = (s: { text: string }) => JSON.parse(s.text).params.data;

beforeAll(() => {
  market = realChainCache();
  base = market.cache.getSurface('DERIBIT', market.pair, 'SVI')!;
  seq = base.sequence;
});

afterEach(() => {
  for (const h of hubs.splice(0)) h.close();
});

/** A hub on the real chain's cache; flushMs 0 (the next turn of the event loop) unless a test sets the write window. */
function hub(limits = {}) {
  const h = new StreamHub(market.cache, { limits: { statusCheckMs: 60_000, flushMs: 0, ...limits } });
  hubs.push(h);
  return h;
}

describe('channel names', () => {
  it('parses every kind, puts aliases in canonical form, and refuses malformed names with the reason', () => {
    expect(parseChannel('surface.XCHG_A.BTC-USD.SVI')).toEqual({ channel: { kind: 'surface', name: CH, source: 'DERIBIT', pair: { base: 'BTC', quote: 'USD' }, model: 'SVI' } });
    expect('channel' in parseChannel('iv_summary.XCHG_C.SOL-USDC.VANNA_VOLGA') && parseChannel('iv_summary.XCHG_C.SOL-USDC.VANNA_VOLGA')).toMatchObject({ channel: { name: 'iv_summary.BYBIT.SOL-USDC.VANNA_VOLGA' } });
    expect(parseChannel('iv.XCHG_B.BTC-USD.SABR.delta.1798099200.0.25')).toMatchObject({ channel: { kind: 'iv', name: 'iv.OKX.BTC-USD.SABR.delta.1798099200.0.25', by: 'delta', value: 0.25, expirationTimestamp: 1798099200 } });
    expect(parseChannel('forward_curve.DERIBIT.ETH-USD')).toMatchObject({ channel: { kind: 'forward_curve' } });
    expect(parseChannel('funding.XCHG_A.BTC-PERPETUAL')).toMatchObject({ channel: { name: 'funding.DERIBIT.BTC-PERPETUAL', instrumentId: 'BTC-PERPETUAL' } });
    expect(parseChannel('status')).toEqual({ channel: { kind: 'status', name: 'status' } });
    for (const bad of ['', 'surface', 'surface.DERIBIT', 'surface.NOPE.BTC-USD.SVI', 'surface.OKX.SOL-USDC.SVI', 'surface.DERIBIT.BTC-USD.HESTON', 'surface.DERIBIT.BTC-USD.SVI.x', 'iv.DERIBIT.BTC-USD.SVI.delta.1798099200.1.5', 'iv.DERIBIT.BTC-USD.SVI.gamma.1798099200.1', 'iv.DERIBIT.BTC-USD.SVI.strike.soon.1', 'x'.repeat(300), 42, null]) {
      expect(parseChannel(bad), String(bad)).toHaveProperty('error');
    }
  });

  it('subscribe params: every bad member is named, nothing half-parsed', () => {
    expect(parseSubscribe({ channels: [CH, 'bogus'] })).toMatchObject({ error: expect.stringContaining('bogus'), data: { channels: [{ channel: 'bogus' }] } });
    expect(parseSubscribe({ channels: [CH], fields: 'spotPrice' })).toHaveProperty('error');
    expect(parseSubscribe({ channels: [CH], expiries: [1.5] })).toHaveProperty('error');
    expect(parseSubscribe({ channels: [CH], threshold: -1 })).toHaveProperty('error');
    expect(parseSubscribe({ channels: [CH, 'surface.XCHG_A.BTC-USD.SVI'], since: { 'surface.XCHG_A.BTC-USD.SVI': 7 } })).toMatchObject({ since: new Map([[CH, 7]]) });
  });

  it('SSE event ids: channel:sequence pairs, bad parts ignored', () => {
    expect(parseEventId(`${CH}:12,status:3,nonsense,funding.XCHG_A.BTC-PERPETUAL:1795766400`)).toEqual(
      new Map([
        [CH, 12],
        ['status', 3],
        ['funding.DERIBIT.BTC-PERPETUAL', 1795766400],
      ]),
    );
  });
});

describe('the hub', () => {
  it('write window: the updates published within one window reach a connection in ONE corked write, at the window end', async () => {
    const h = hub({ flushMs: 40 });
    const { t, sent } = fakeTransport();
    let corks = 0;
    const flushedAt: number[] = [];
    Object.assign(t, {
      cork: () => corks++,
      uncork: () => flushedAt.push(Date.now()),
    });
    const s = h.openSession(t, 'ip:test')!;
    h.subscribe(s, (parseChannel(CH) as { channel: never }).channel, {});
    await new Promise((r) => setTimeout(r, 60));
    expect(sent.map((x) => data(x).sequence)).toEqual([seq]); // the current document, at the first window's end
    // wait for the start of a window, publish three updates within it: nothing goes out before the window ends, then
    // all three in one flush (one cork/uncork: one system call), in order
    await new Promise((r) => setTimeout(r, 40 - (Date.now() % 40) + 2));
    const start = Date.now();
    const corks0 = corks;
    const seqs = [recalibrate(), recalibrate(), recalibrate()];
    await turn();
    expect(sent).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 80));
    expect(sent.slice(1).map((x) => data(x).sequence)).toEqual(seqs);
    expect(corks - corks0).toBe(1);
    // flushed at the window's end, not before it (the next multiple of 40 ms on the wall clock after the publish)
    expect(flushedAt.at(-1)!).toBeGreaterThanOrEqual(start - (start % 40) + 40 - 2); // (a timer may round 1 ms early)
  });

  it('interval_ms: the first update at once, then at most one per interval with the latest held (conflated)', async () => {
    const h = hub();
    const { t, sent } = fakeTransport();
    const s = h.openSession(t, 'ip:test')!;
    h.subscribe(s, (parseChannel(CH) as { channel: never }).channel, { intervalMs: 60_000 });
    await turn();
    expect(sent.map((x) => data(x).sequence)).toEqual([seq]);
    recalibrate();
    recalibrate();
    const last = recalibrate();
    await turn();
    expect(sent).toHaveLength(1);
    expect(s.subs.get(CH)!.held!.sequence).toBe(last);
    const conflated = (await h.registry.getSingleMetric('volsurf_stream_conflated_total')!.get()).values.reduce((a, v) => a + v.value, 0);
    expect(conflated).toBe(2);
  });

  it('interval_ms: once the interval is over, the newest update held goes out (and only it)', async () => {
    const h = hub();
    const { t, sent } = fakeTransport();
    h.subscribe(h.openSession(t, 'ip:test')!, (parseChannel(CH) as { channel: never }).channel, { intervalMs: 100 });
    await turn();
    recalibrate();
    const newest = recalibrate();
    for (let i = 0; i < 200 && sent.length < 2; i++) await new Promise((r) => setTimeout(r, 25));
    expect(sent.map((x) => data(x).sequence).slice(1)).toEqual([newest]);
  });

  it('fields and expiries send less: identity, sequence and times always; other members as asked', async () => {
    const h = hub();
    const { t, sent } = fakeTransport();
    const s = h.openSession(t, 'ip:test')!;
    const keep = market.expiries[2]!;
    h.subscribe(s, (parseChannel(CH) as { channel: never }).channel, { fields: ['expiries', 'spotPrice'], expiries: [keep] });
    await turn();
    const d = data(sent[0]!);
    expect(Object.keys(d).sort()).toEqual(['baseCurrency', 'expiries', 'observationTimestamp', 'publishTimestamp', 'quoteCurrency', 'sequence', 'source', 'spotPrice', 'volatilityModel']);
    expect(d.expiries.map((e: { expirationTimestamp: number }) => e.expirationTimestamp)).toEqual([keep]);
    expect(filterData({ a: 1, sequence: 2, expiries: [{ expirationTimestamp: 5 }, { expirationTimestamp: 6 }] }, { expiries: [6] })).toEqual({ a: 1, sequence: 2, expiries: [{ expirationTimestamp: 6 }] });
  });

  it('iv channel: the vol at a delta; sent again only when it moved by more than the threshold', async () => {
    const h = hub();
    const { t, sent } = fakeTransport();
    const s = h.openSession(t, 'ip:test')!;
    const name = `iv.DERIBIT.BTC-USD.SVI.delta.${market.expiries[3]}.0.25`;
    h.subscribe(s, (parseChannel(name) as { channel: never }).channel, { threshold: 0.001 });
    await turn();
    const d = data(sent[0]!);
    expect(d.impliedVolatility).toBeGreaterThan(0.1);
    expect(d.strike).toBeGreaterThan(d.forwardPrice);
    recalibrate(); // same smile: no move, nothing sent
    await turn();
    expect(sent).toHaveLength(1);
  });

  it('iv channel with a list of points: one message carries every point; sent when ANY point moved by more than the threshold', async () => {
    const h = hub();
    const { t, sent } = fakeTransport();
    const s = h.openSession(t, 'ip:test')!;
    const expiry = market.expiries[3]!;
    const T = (expiry - base.observationTimestamp) / (365 * 86400);
    const F = base.forwardCurve.forward(T);
    const strikes = [Math.round(F * 0.9), Math.round(F), Math.round(F * 1.1)];
    const name = `iv.DERIBIT.BTC-USD.SVI.strike.${expiry}.${strikes.join('_')}`;
    expect(h.subscribe(s, (parseChannel(name) as { channel: never }).channel, { threshold: 0.001 })).toBe('current');
    await turn();
    // the reference: the calibrated surface read directly at (T, K, F)
    const refVols = (shift: (K: number) => number) => strikes.map((K) => base.surface.impliedVol(T, K, F) + shift(K));
    const vols = (x: { text: string }) => data(x).points.map((p: { impliedVolatility: number }) => p.impliedVolatility);
    expect(data(sent[0]!).points.map((p: { strike: number }) => p.strike)).toEqual(strikes);
    for (const [i, v] of vols(sent[0]!).entries()) expect(v).toBeCloseTo(refVols(() => 0)[i]!, 12);
    expect(data(sent[0]!)).toMatchObject({ expirationTimestamp: expiry, sequence: seq });
    expect(data(sent[0]!).forwardPrice).toBeCloseTo(F, 8);
    // a smile shifted by `shift`, published as the next sequence (not put into the cache: the other tests read it)
    const publishShifted = (shift: (K: number) => number) => {
      seq++;
      const surface = { ...base.surface, totalVarianceAt: undefined, impliedVol: (tt: number, K: number, f: number) => base.surface.impliedVol(tt, K, f) + shift(K) };
      market.cache.updates$.next({ type: 'surface', snapshot: { ...base, sequence: seq, surface } as SurfaceSnapshot });
      return seq;
    };
    publishShifted(() => 0.0005); // every point 0.05 vol pt: below the threshold
    await turn();
    expect(sent).toHaveLength(1);
    const wing = (K: number) => (K > F * 1.05 ? 0.002 : 0);
    const moved = publishShifted(wing); // one point 0.2 vol pt: the whole list goes out
    await turn();
    expect(sent).toHaveLength(2);
    expect(data(sent[1]!).sequence).toBe(moved);
    for (const [i, v] of vols(sent[1]!).entries()) expect(v).toBeCloseTo(refVols(wing)[i]!, 12);
    publishShifted((K) => wing(K) + 0.0009); // 0.09 vol pt from the last SENT: held back again
    await turn();
    expect(sent).toHaveLength(2);
    recalibrate(); // the cache's current surface carries the newest sequence again
  });

  it('iv list limits: at most MAX_IV_POINTS distinct points per channel, refused with the reason (-32602 data)', () => {
    const e = market.expiries[3]!;
    const values = (n: number) => Array.from({ length: n }, (_, i) => (0.05 + i * 0.05).toFixed(2)).join('_');
    expect(parseChannel(`iv.DERIBIT.BTC-USD.SVI.delta.${e}.${values(MAX_IV_POINTS)}`)).toMatchObject({ channel: { kind: 'iv', values: expect.any(Array) } });
    expect((parseChannel(`iv.DERIBIT.BTC-USD.SVI.delta.${e}.${values(MAX_IV_POINTS)}`) as unknown as { channel: { values: number[] } }).channel.values).toHaveLength(MAX_IV_POINTS);
    const over = parseSubscribe({ channels: [`iv.DERIBIT.BTC-USD.SVI.delta.${e}.${values(MAX_IV_POINTS + 1)}`] });
    expect(over).toMatchObject({ data: { channels: [{ reason: expect.stringContaining(`at most ${MAX_IV_POINTS} points`) }] } });
    expect(parseChannel(`iv.DERIBIT.BTC-USD.SVI.strike.${e}.90000_90000`)).toMatchObject({ error: expect.stringContaining('twice') });
    expect(parseChannel(`iv.DERIBIT.BTC-USD.SVI.delta.${e}.0.25_1.5`)).toHaveProperty('error');
    expect(parseChannel(`iv.DERIBIT.BTC-USD.SVI.strike.${e}.90000_`)).toHaveProperty('error');
  });

  it('resume: the kept updates after `since` in order; older than kept: the current one with reset; a blocked socket conflates live updates', async () => {
    const h = hub({ resumeDepth: 3, stallMs: 60_000 });
    const a = fakeTransport();
    const sa = h.openSession(a.t, 'ip:a')!;
    h.subscribe(sa, (parseChannel(CH) as { channel: never }).channel, {});
    const first = seq;
    const s1 = recalibrate();
    const s2 = recalibrate();
    const s3 = recalibrate();
    await turn();
    expect(a.sent.map((x) => data(x).sequence)).toEqual([first, s1, s2, s3]);
    // the ring holds s1..s3: since s1 replays s2, s3
    const b = fakeTransport();
    h.subscribe(h.openSession(b.t, 'ip:b')!, (parseChannel(CH) as { channel: never }).channel, {}, s1);
    await turn();
    expect(b.sent.map((x) => [data(x).sequence, data(x).reset])).toEqual([
      [s2, undefined],
      [s3, undefined],
    ]);
    // since `first` (evicted): the current one, reset
    const c = fakeTransport();
    h.subscribe(h.openSession(c.t, 'ip:c')!, (parseChannel(CH) as { channel: never }).channel, {}, first);
    await turn();
    expect(c.sent.map((x) => [data(x).sequence, data(x).reset])).toEqual([[s3, true]]);
    // a blocked socket: live updates replace each other; when it drains, only the newest is written
    a.t.blocked = true;
    recalibrate();
    await turn(); // the flush finds the socket full: the session is blocked from here
    expect(sa.blocked()).toBe(true);
    recalibrate();
    const s6 = recalibrate();
    await turn();
    expect(sa.subs.get(CH)!.queue.map((i) => i.entry.sequence)).toEqual([s6]);
    a.t.blocked = false;
    sa.flush();
    expect(a.sent.map((x) => data(x).sequence).at(-1)).toBe(s6);
    expect(a.sent).toHaveLength(5);
  });

  it('an update it cannot render is skipped and counted; it never throws into the cache\'s shared Subject', async () => {
    const h = hub();
    const { t, sent } = fakeTransport();
    h.subscribe(h.openSession(t, 'ip:x')!, (parseChannel(CH) as { channel: never }).channel, {});
    await turn();
    const others: number[] = [];
    const tap = market.cache.updates$.subscribe((u) => u.type === 'surface' && others.push(u.snapshot.sequence));
    const broken = { ...base, sequence: 999_999, surface: { ...base.surface, impliedVol: () => { throw new Error('boom'); } } } as SurfaceSnapshot;
    market.cache.updates$.next({ type: 'surface', snapshot: broken });
    const next = recalibrate();
    await turn();
    tap.unsubscribe();
    expect(others).toEqual([999_999, next]);
    expect(sent.map((x) => data(x).sequence).at(-1)).toBe(next);
    expect((await h.registry.getSingleMetric('volsurf_stream_render_errors_total')!.get()).values[0]!.value).toBe(1);
  });

  it('status: an unchanged status is sent again every statusRepeatMs with the same sequence (never silent)', async () => {
    const h = hub({ statusCheckMs: 10, statusRepeatMs: 40 });
    const { t, sent } = fakeTransport();
    h.subscribe(h.openSession(t, 'ip:test')!, { kind: 'status', name: 'status' }, {});
    for (let i = 0; i < 400 && sent.length < 4; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sent.length).toBeGreaterThanOrEqual(4);
    const seqs = sent.map((x) => data(x).sequence);
    expect(new Set(seqs).size).toBe(1);
    expect(sent.map((x) => Object.keys(data(x)).sort())).toEqual(sent.map(() => ['feeds', 'held', 'observationTimestamp', 'pairs', 'publishTimestamp', 'sequence']));
    expect(data(sent.at(-1)!).pairs).toEqual(data(sent[0]!).pairs);
  });

  it('textFrame: the RFC 6455 header of each payload length class, the payload as UTF-8', () => {
    for (const n of [0, 125, 126, 65535, 65536, 200_000]) {
      const text = 'é'.repeat(Math.floor(n / 2)) + 'x'.repeat(n % 2);
      const f = textFrame(text);
      expect(f[0]).toBe(0x81); // FIN, text, no RSV
      const len = Buffer.byteLength(text);
      if (len <= 125) expect(f[1]).toBe(len);
      else if (len <= 65535) expect([f[1], f.readUInt16BE(2)]).toEqual([126, len]);
      else expect([f[1], f.readUInt32BE(2), f.readUInt32BE(6)]).toEqual([127, 0, len]);
      expect(framePayload(f).toString('utf8')).toBe(text);
      expect(f.length).toBe(len + (len <= 125 ? 2 : len <= 65535 ? 4 : 10));
    }
  });

  it('connections per owner are limited', () => {
    const h = hub({ maxConnectionsPerKey: 2 });
    expect(h.openSession(fakeTransport().t, 'key:k')).not.toBeNull();
    expect(h.openSession(fakeTransport().t, 'key:k')).not.toBeNull();
    expect(h.openSession(fakeTransport().t, 'key:k')).toBeNull();
    expect(h.canOpen('key:other')).toBe(true);
  });
});

describe('the AsyncAPI document', () => {
  it('is AsyncAPI 3.0.0 with one channel per kind, and every $ref resolves inside it', () => {
    const doc = asyncApiDocument() as Record<string, any>;
    expect(doc.asyncapi).toBe('3.0.0');
    expect(Object.values(doc.channels).map((c: any) => c.address).sort()).toEqual(
      ['/api/v1/ws', 'forward_curve.{source}.{pair}', 'funding.{source}.{instrument}', 'iv.{source}.{pair}.{model}.{by}.{expiry}.{value}', 'iv_summary.{source}.{pair}.{model}', 'status', 'surface.{source}.{pair}.{model}'].sort(),
    );
    const refs: string[] = [];
    const walk = (x: unknown): void => {
      if (Array.isArray(x)) x.forEach(walk);
      else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) k === '$ref' ? refs.push(v as string) : walk(v);
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(20);
    for (const r of refs) {
      const target = r.replace(/^#\//, '').split('/').reduce<any>((o, k) => o?.[k.replace(/~1/g, '/')], doc);
      expect(target, r).toBeDefined();
    }
    for (const op of Object.values(doc.operations) as any[]) expect(['send', 'receive']).toContain(op.action);
  });
});
