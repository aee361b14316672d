/**
 * BybitNormalizer on recorded Bybit messages (test/fixtures/bybit, copied from
 * ../shared/exchange-samples/bybit). Expected numbers are the wire strings as numbers with ms -> s
 * applied in the test; Bybit's printed Greeks are cross-checked with Black-76 (src/quant, r = 0).
 */
import { describe, expect, it } from 'vitest';
import { BybitDropKinds, BybitNormalizer, BybitTickerBook, bybitNormalizer, normalizeBybitFundingHistory } from '../../adapters/bybit/normalize.js';
import { batchBybitTopics, bybitRequest } from '../../adapters/bybit/wire.js';
import type { FundingRate, FutureQuote, OptionQuote } from '../../src/domain/events.js';
import { black76Greeks, black76Price } from '../../src/quant/black76.js';
import { clone, docsExamples, dropKind, events, fixtureLines } from '../helpers/fixtures.js';

const lines = (name: string): Record<string, unknown>[] => fixtureLines('bybit', name);
const docs = docsExamples('bybit');

const RECV = 1_680_700_000.5;

const [solMsg, ethMsg] = lines('tardis-option-tickers-2023-04-05.jsonl') as [Record<string, unknown>, Record<string, unknown>];
const linear = lines('tardis-linear-inverse-tickers-2023-04-05.jsonl');

describe('option tickers -> OptionQuote (+ IndexPrice)', () => {
  it('SOL-28APR23-24-C (real): exact numbers; the index comes first', () => {
    const n = new BybitNormalizer();
    expect(events(n.normalize(solMsg, RECV))).toEqual([
      { kind: 'index', source: 'BYBIT', base: 'SOL', quote: 'USDC', price: 20.93, timestamp: 1680652810.254, receivedAt: RECV },
      {
        kind: 'option',
        source: 'BYBIT',
        instrument: 'SOL-28APR23-24-C',
        base: 'SOL',
        quote: 'USDC',
        expirationTimestamp: Date.UTC(2023, 3, 28, 8) / 1000,
        strike: 24,
        optionType: 'C',
        inverse: false,
        markIv: 1.4674,
        bidIv: 0.6004,
        askIv: 2.0007,
        markPriceNative: 1.99054639,
        forward: 20.93,
        indexPrice: 20.93,
        greeks: { delta: 0.42723543, gamma: 0.0505193, vega: 0.02075941, theta: -0.06527514 },
        timestamp: 1680652810.254,
        receivedAt: RECV,
      },
    ]);
  });

  it('ETH-30JUN23-200-P (real): askIv "0" with askPrice "0" -> null; forward = underlyingPrice, not the index', () => {
    const q = events(new BybitNormalizer().normalize(ethMsg, RECV))[1] as OptionQuote;
    expect(q).toMatchObject({ instrument: 'ETH-30JUN23-200-P', markIv: 1.5991, bidIv: 1.4744, askIv: null, forward: 1886.16, indexPrice: 1871.27, markPriceNative: 0.2548522 });
  });

  it('docs option ticker: bidIv "0" -> null', () => {
    const evs = events(new BybitNormalizer().normalize(docs['ws tickers.BTC-6JAN23-17500-C (Option)'], RECV));
    expect(evs[1]).toMatchObject({ instrument: 'BTC-6JAN23-17500-C', bidIv: null, askIv: 0.514, markIv: 0.4896, forward: 16815.1, indexPrice: 16823.73 });
  });

  it("Bybit's printed delta, vega (per vol point) and theta (per day) follow Black-76 on (underlyingPrice, markPriceIv, ACT/365 to 08:00 UTC)", () => {
    for (const msg of [solMsg, ethMsg]) {
      const q = events(new BybitNormalizer().normalize(msg, RECV))[1] as OptionQuote;
      const T = (q.expirationTimestamp - q.timestamp) / (365 * 86_400);
      const g = black76Greeks(q.forward, q.strike, T, q.markIv, q.optionType);
      const pg = q.greeks as { delta: number; vega: number; theta: number; gamma: number };
      expect(Math.abs(g.delta - pg.delta)).toBeLessThan(2e-5);
      expect(Math.abs(g.vega / 100 / pg.vega - 1)).toBeLessThan(5e-4);
      expect(Math.abs(g.theta / 365 / pg.theta - 1)).toBeLessThan(5e-4);
      expect(Math.abs(g.gamma / pg.gamma - 1)).toBeLessThan(3e-3);
    }
  });

  it('IndexPrice is throttled: unchanged price within 1 s of exchange time gives no new index event', () => {
    const n = new BybitNormalizer();
    expect(events(n.normalize(solMsg, RECV)).map((e) => e.kind)).toEqual(['index', 'option']);
    const later = clone(solMsg) as { ts: number };
    later.ts += 500;
    expect(events(n.normalize(later, RECV)).map((e) => e.kind)).toEqual(['option']);
    later.ts += 600;
    expect(events(n.normalize(later, RECV)).map((e) => e.kind)).toEqual(['index', 'option']);
    const moved = clone(later) as { ts: number; data: Record<string, string> };
    moved.ts += 1;
    moved.data['indexPrice'] = '20.95';
    expect(events(n.normalize(moved, RECV))[0]).toMatchObject({ kind: 'index', price: 20.95 });
  });

  it('string handling: strict decimals, "" = missing, zero mark IV rejected, JSON numbers rejected', () => {
    const with_ = (patch: Record<string, unknown>): unknown => ({ ...clone(solMsg), data: { ...(solMsg['data'] as Record<string, unknown>), ...patch } });
    const n = (): BybitNormalizer => new BybitNormalizer();
    expect((events(n().normalize(with_({ bidIv: '', bidPrice: '' }), RECV))[1] as OptionQuote).bidIv).toBeNull();
    // a missing or 0 IV next to a real bid is implied from the bid price (issue 26): Black-76 on underlyingPrice
    for (const bidIv of ['', '0']) {
      const q = events(n().normalize(with_({ bidIv }), RECV))[1] as OptionQuote;
      const T = (q.expirationTimestamp - q.timestamp) / (365 * 86_400);
      expect(q.bidIv, bidIv).not.toBeNull();
      expect(black76Price(q.forward, q.strike, T, q.bidIv!, q.optionType)).toBeCloseTo(0.34, 9);
      // the recorded bid IV 0.6004 is Bybit's own for that price, to its 4-decimal print
      expect(Math.abs(q.bidIv! - 0.6004)).toBeLessThan(1e-3);
    }
    expect((events(n().normalize(with_({ bidPrice: '0' }), RECV))[1] as OptionQuote).bidIv).toBeNull();
    expect((events(n().normalize(with_({ delta: '' }), RECV))[1] as OptionQuote).greeks).toBeNull();
    for (const markPriceIv of ['0', '', '-1', 'abc', '1.2.3', 1.4674]) {
      expect(dropKind(n().normalize(with_({ markPriceIv }), RECV)), String(markPriceIv)).toBe(BybitDropKinds.badTicker);
    }
    expect(dropKind(n().normalize(with_({ underlyingPrice: '0' }), RECV))).toBe(BybitDropKinds.badTicker);
    expect(dropKind(n().normalize(with_({ symbol: 'SOL-28APR23-25-C' }), RECV))).toBe(BybitDropKinds.badTicker);
    expect(dropKind(n().normalize({ ...clone(solMsg), ts: Date.UTC(2023, 3, 28, 8) }, RECV))).toBe(BybitDropKinds.closed);
  });
});

describe('linear tickers: snapshot + delta merging', () => {
  it('BybitTickerBook merges the real tickers.BTCUSD delta into its snapshot', () => {
    const book = new BybitTickerBook();
    const [snap, delta] = linear as [{ type: 'snapshot'; data: Record<string, string> }, { type: 'delta'; data: Record<string, string> }];
    expect(book.apply('BTCUSD', 'delta', delta.data)).toEqual({ ok: false });
    const a = book.apply('BTCUSD', 'snapshot', snap.data);
    expect(a.ok && a.previous).toBeUndefined();
    const b = book.apply('BTCUSD', 'delta', delta.data);
    if (!b.ok) throw new Error('delta after snapshot must apply');
    expect(b.previous?.['openInterest']).toBe('449736676');
    expect(b.merged).toEqual({ ...snap.data, openInterest: '449736674' });
    // fields absent from the delta keep the snapshot's values
    expect(b.merged['markPrice']).toBe('28560.00');
    expect(b.merged['indexPrice']).toBe('28566.94');
    expect(b.merged['nextFundingTime']).toBe('1680681600000');
    expect(Object.keys(b.merged)).toHaveLength(Object.keys(snap.data).length);
    expect(book.size).toBe(1);
    book.clear();
    expect(book.apply('BTCUSD', 'delta', delta.data)).toEqual({ ok: false });
  });

  it('inverse and USDT contracts are counted as unsupported and not held', () => {
    const n = new BybitNormalizer();
    for (const m of linear) expect(dropKind(n.normalize(m, RECV))).toBe(BybitDropKinds.unsupportedInstrument);
    expect(n.book.size).toBe(0);
  });

  it('USDC future BTC-26DEC25 (docs): FutureQuote with the ISO deliveryTime as expiry', () => {
    const [q] = events(new BybitNormalizer().normalize(docs['ws tickers.BTC-26DEC25 (LinearFutures, USDC future)'], RECV)) as FutureQuote[];
    expect(q).toEqual({
      kind: 'future',
      source: 'BYBIT',
      instrument: 'BTC-26DEC25',
      base: 'BTC',
      quote: 'USDC',
      perpetual: false,
      expirationTimestamp: Date.UTC(2025, 11, 26, 8) / 1000,
      inverse: false,
      markPrice: 121144.63,
      indexPrice: 114132.51,
      currentFunding: null,
      funding8h: null,
      timestamp: 1760409119.857,
      receivedAt: RECV,
    });
  });

  it('USDC perpetual: merged deltas feed the quote; the settled rate becomes a FundingRate once nextFundingTime passes', () => {
    // No real USDC-perpetual capture exists: the docs' BTCUSDT LinearPerpetual snapshot with its
    // symbol renamed to the USDC perpetual BTCPERP; every value verbatim (fixtures/bybit/README.md).
    const snap = clone(docs['ws tickers.BTCUSDT (LinearPerpetual)']) as { topic: string; ts: number; data: Record<string, string> };
    snap.topic = 'tickers.BTCPERP';
    snap.data['symbol'] = 'BTCPERP';
    const n = new BybitNormalizer();
    expect(dropKind(n.normalize({ topic: 'tickers.BTCPERP', type: 'delta', ts: snap.ts, data: { symbol: 'BTCPERP', markPrice: '1' } }, RECV))).toBe(BybitDropKinds.deltaWithoutSnapshot);
    const [q] = events(n.normalize(snap, RECV)) as FutureQuote[];
    expect(q).toMatchObject({ instrument: 'BTCPERP', perpetual: true, expirationTimestamp: null, markPrice: 66666.6, indexPrice: 115418.19, currentFunding: -0.005, funding8h: -0.005, timestamp: 1760325052.63 });
    // a delta with only a new mark price: index and funding come from the held snapshot
    const d1 = { topic: 'tickers.BTCPERP', type: 'delta', ts: 1760325052730, data: { symbol: 'BTCPERP', markPrice: '66670.10' } };
    expect(events(n.normalize(d1, RECV))).toEqual([{ ...q, markPrice: 66670.1, timestamp: 1760325052.73 }]);
    // the first message at/after nextFundingTime (1760342400000): the -0.005 held until then settled
    const d2 = { topic: 'tickers.BTCPERP', type: 'delta', ts: 1760342400100, data: { symbol: 'BTCPERP', fundingRate: '0.0001', nextFundingTime: '1760371200000' } };
    const evs = events(n.normalize(d2, RECV));
    expect(evs[0]).toMatchObject({ kind: 'future', markPrice: 66670.1, currentFunding: 0.0001 });
    expect(evs[1] as FundingRate).toEqual({ kind: 'funding', source: 'BYBIT', instrumentId: 'BTCPERP', base: 'BTC', quote: 'USDC', interest: -0.005, intervalHours: 8, timestamp: 1760342400 });
    // later messages never repeat the point
    expect(events(n.normalize({ ...d2, ts: d2.ts + 100 }, RECV)).map((e) => e.kind)).toEqual(['future']);
    // the interval changes to 4 h: the settled point keeps the 8 h in force for it, the quote uses 4 h
    const d3 = { topic: 'tickers.BTCPERP', type: 'delta', ts: 1760371200050, data: { symbol: 'BTCPERP', fundingIntervalHour: '4', nextFundingTime: '1760385600000' } };
    const e3 = events(n.normalize(d3, RECV));
    expect(e3[1]).toMatchObject({ kind: 'funding', timestamp: 1760371200, interest: 0.0001, intervalHours: 8 });
    expect((e3[0] as FutureQuote).funding8h).toBeCloseTo(0.0002, 15);
  });
});

describe('control frames, funding history, unknown messages', () => {
  it('pong and subscribe answers give no events; failures are counted', () => {
    const n = bybitNormalizer();
    for (const m of docs['ws connect page: ping/pong/subscribe examples (in page order)'] as unknown as unknown[]) expect(events(n(m, RECV))).toEqual([]);
    expect(dropKind(n({ success: false, ret_msg: 'error:handler not found,topic:tickers.NOPE', conn_id: 'x', req_id: 's1', op: 'subscribe' }, RECV))).toBe(BybitDropKinds.subscribeError);
    expect(dropKind(n({ success: true, conn_id: 'x', data: { failTopics: ['tickers.BTC-1JAN20-1-C'], successTopics: [] }, type: 'COMMAND_RESP' }, RECV))).toBe(BybitDropKinds.subscribeError);
    expect(dropKind(n({ topic: 'orderbook.1.BTCPERP', type: 'snapshot', ts: 1, data: {} }, RECV))).toBe(BybitDropKinds.ignoredTopic);
    expect(dropKind(n({ topic: 'tickers.BTCPERP', type: 'update', ts: 1, data: {} }, RECV))).toBe(BybitDropKinds.malformed);
    expect(dropKind(n({ hello: 1 }, RECV))).toBe(BybitDropKinds.unknownMessage);
    for (const bad of [null, 3, 'pong', [], { topic: 5 }, { topic: 'tickers.X', type: 'snapshot', ts: 'now', data: {} }]) expect(n(bad, RECV).ok, JSON.stringify(bad)).toBe(false);
    expect(dropKind(n(solMsg, Number.POSITIVE_INFINITY))).toBe(BybitDropKinds.malformed);
  });

  it('REST funding history (docs): one ETHPERP point; the listed interval wins; noteFunding dedupes', () => {
    const h = docs['GET /v5/market/funding/history'];
    expect(normalizeBybitFundingHistory(h).events).toEqual([{ kind: 'funding', source: 'BYBIT', instrumentId: 'ETHPERP', base: 'ETH', quote: 'USDC', interest: 0.0001, intervalHours: 8, timestamp: 1672041600 }]);
    expect(normalizeBybitFundingHistory(h, 4).events[0]?.intervalHours).toBe(4);
    const list = [
      { symbol: 'SOLPERP', fundingRate: '-0.00002', fundingRateTimestamp: '1672041600000' },
      { symbol: 'SOLPERP', fundingRate: '0.00005', fundingRateTimestamp: '1672056000000' },
      { symbol: 'BTCUSDT', fundingRate: '0.0001', fundingRateTimestamp: '1672056000000' },
      { symbol: 'SOLPERP', fundingRate: '', fundingRateTimestamp: '1672070400000' },
    ];
    const r = normalizeBybitFundingHistory({ retCode: 0, retMsg: 'OK', result: { category: 'linear', list } });
    expect(r.events.map((e) => [e.instrumentId, e.timestamp, e.interest, e.intervalHours])).toEqual([
      ['SOLPERP', 1672041600, -0.00002, 4],
      ['SOLPERP', 1672056000, 0.00005, 4],
    ]);
    expect(r.dropped.map((d) => d.kind)).toEqual(['unsupported-instrument', 'bad-funding']);
    const n = new BybitNormalizer();
    expect(n.noteFunding('ETHPERP', 1672041600)).toBe(true);
    expect(n.noteFunding('ETHPERP', 1672041600)).toBe(false);
  });

  it('request batching: at most maxArgs topics and 21,000 characters per request, order kept', () => {
    const topics = Array.from({ length: 250 }, (_, i) => `tickers.BTC-27MAR26-${20000 + 1000 * i}-C`);
    const b = batchBybitTopics(topics, 100);
    expect(b.map((x) => x.length)).toEqual([100, 100, 50]);
    expect(b.flat()).toEqual(topics);
    const byChars = batchBybitTopics(topics, 1000, 300);
    for (const x of byChars) expect(x.reduce((n, t) => n + t.length, 0)).toBeLessThanOrEqual(300);
    expect(byChars.flat()).toEqual(topics);
    expect(JSON.parse(bybitRequest('subscribe', ['tickers.BTCPERP'], 's1'))).toEqual({ req_id: 's1', op: 'subscribe', args: ['tickers.BTCPERP'] });
  });
});
