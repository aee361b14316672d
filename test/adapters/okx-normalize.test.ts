/**
 * OkxNormalizer on recorded OKX messages (test/fixtures/okx, copied from ../shared/exchange-samples/okx).
 * Expected numbers are the wire strings as JavaScript numbers, with ms -> s applied in the test; the
 * Black-76 cross-check uses src/quant (Black 1976, r = 0) as an independent reference.
 */
import { describe, expect, it } from 'vitest';
import { OkxDropKinds, OkxNormalizer, normalizeOkxFundingHistory, okxNormalizer, okxSettledFundingPoint } from '../../adapters/okx/normalize.js';
import { FundingRatePushSchema, batchOkxRequests, parseOkxNumber } from '../../adapters/okx/wire.js';
import type { FundingRate, FutureQuote, OptionQuote } from '../../src/domain/events.js';
import { black76Greeks } from '../../src/quant/black76.js';
import { clone, docsExamples, dropKind, events, fixtureLines } from '../helpers/fixtures.js';

const lines = (name: string): Record<string, unknown>[] => fixtureLines('okx', name);
const docs = docsExamples('okx');

const RECV = 1_700_000_000.25;

/** The real 2026-08-04 BTC-USD index-tickers push (tardis wrapper removed). */
const btcIndex = (lines('tardis-xperp-index-and-funding-2026-08-04.jsonl')[0] as { message: unknown }).message;

describe('opt-summary -> OptionQuote', () => {
  const push = docs['ws opt-summary push'] as Record<string, unknown>;

  it('docs push: exact numbers, bidVol "0" -> null, BS Greeks kept, index from the family index', () => {
    const n = new OkxNormalizer();
    const idx = events(n.normalize(btcIndex, RECV));
    expect(idx).toEqual([{ kind: 'index', source: 'OKX', base: 'BTC', quote: 'USD', price: 64280, timestamp: 1785870839.964, receivedAt: RECV }]);
    const [q] = events(n.normalize(push, RECV)) as OptionQuote[];
    expect(q).toEqual({
      kind: 'option',
      source: 'OKX',
      instrument: 'BTC-USD-241013-70000-P',
      base: 'BTC',
      quote: 'USD',
      expirationTimestamp: Date.UTC(2024, 9, 13, 8) / 1000,
      strike: 70000,
      optionType: 'P',
      inverse: true,
      markIv: 0.3675503331,
      bidIv: null,
      askIv: 1.1669998535,
      markPriceNative: null,
      forward: 62604.6993093463,
      indexPrice: 64280,
      greeks: { delta: -0.9999672034, gamma: 0.0000000002, vega: 0.0000114332, theta: 28.2649858387 },
      timestamp: 1728703155.65,
      receivedAt: RECV,
    });
    expect(n.indexFallbacks).toBe(0);
  });

  it('before any index of the family: the nearest-expiry forward stands in, and is counted', () => {
    const n = new OkxNormalizer();
    const [q] = events(n.normalize(push, RECV)) as OptionQuote[];
    expect(q?.indexPrice).toBe(62604.6993093463);
    expect(q?.forward).toBe(62604.6993093463);
    expect(n.indexFallbacks).toBe(1);
    // an ETH-USD index does not serve BTC-USD
    events(n.normalize(lines('tardis-okex-options-v5-2021-12.jsonl')[1], RECV));
    events(n.normalize(push, RECV));
    expect(n.indexFallbacks).toBe(2);
  });

  it('GET /public/opt-summary example as a push: call and put share the forward; BS deltas obey parity; Black-76 reproduces deltaBS', () => {
    const rest = docs['GET /api/v5/public/opt-summary'] as { data: Record<string, string>[] };
    const n = new OkxNormalizer();
    const qs = events(n.normalize({ arg: { channel: 'opt-summary', instFamily: 'BTC-USD' }, data: rest.data }, RECV)) as OptionQuote[];
    expect(qs.map((q) => q.instrument)).toEqual(['BTC-USD-220309-33000-C', 'BTC-USD-220309-33000-P']);
    const [c, p] = qs as [OptionQuote, OptionQuote];
    expect(c.forward).toBe(39016.814362906845);
    expect(p.forward).toBe(c.forward);
    expect(c.markIv).toBe(1.5551965233045728);
    expect([c.bidIv, p.bidIv]).toEqual([null, null]);
    expect([c.askIv, p.askIv]).toEqual([3.7207056835937498, 1.7968814062499998]);
    expect(c.greeks?.delta).toBe(0.9857332101544538);
    // forward Black deltas: call - put = 1 (r = 0); the coin ("PA") deltas 0.831 / -0.0147 do not.
    expect((c.greeks?.delta ?? 0) - (p.greeks?.delta ?? 0)).toBeCloseTo(1, 12);
    expect(c.greeks?.gamma).toBe(p.greeks?.gamma);
    const T = (c.expirationTimestamp - c.timestamp) / (365 * 86_400);
    expect(T).toBeCloseTo(79168.758 / (365 * 86_400), 12);
    const g = black76Greeks(c.forward, c.strike, T, c.markIv, 'C');
    expect(Math.abs(g.delta - (c.greeks?.delta ?? 0))).toBeLessThan(1e-4);
    expect(Math.abs(g.gamma / (c.greeks?.gamma ?? 1) - 1)).toBeLessThan(5e-3);
    // the fallback index is the (only) expiry's forward
    expect(c.indexPrice).toBe(c.forward);
  });

  it('2021 pushes without fwdPx are dropped (no forward), each item counted once', () => {
    const msgs = lines('tardis-okex-options-v5-2021-12.jsonl');
    const itemDrops: string[] = [];
    const n = new OkxNormalizer({ onItemDrop: (k) => itemDrops.push(k) });
    const r = n.normalize(msgs[5], RECV); // two items, both without fwdPx
    expect(dropKind(r)).toBe(OkxDropKinds.noForward);
    expect(itemDrops).toEqual([OkxDropKinds.noForward]);
    expect(dropKind(n.normalize(msgs[7], RECV))).toBe(OkxDropKinds.noForward);
    expect(itemDrops).toHaveLength(1);
  });

  it('a push with good and bad items keeps the good ones and reports the bad ones', () => {
    const good = clone(push) as { data: Record<string, string>[] };
    const bad = { ...(good.data[0] as Record<string, string>), instId: 'BTC-USD-241013-72000-C', markVol: 'abc' };
    const closed = { ...(good.data[0] as Record<string, string>), instId: 'BTC-USD-241013-68000-C', ts: String(Date.UTC(2024, 9, 13, 8)) };
    const itemDrops: string[] = [];
    const n = new OkxNormalizer({ onItemDrop: (k, d) => itemDrops.push(`${k}:${d.split(':')[0]}`) });
    const evs = events(n.normalize({ ...good, data: [bad, good.data[0], closed] }, RECV));
    expect(evs.map((e) => (e as OptionQuote).instrument)).toEqual(['BTC-USD-241013-70000-P']);
    expect(itemDrops).toEqual(['bad-opt-summary:BTC-USD-241013-72000-C', 'closed-instrument:BTC-USD-241013-68000-C at/after expiry']);
  });

  it('string handling: strict decimals, "" = missing, JSON numbers rejected', () => {
    const item = (patch: Record<string, unknown>): unknown => ({ ...clone(push), data: [{ ...(push['data'] as Record<string, unknown>[])[0], ...patch }] });
    const q = (patch: Record<string, unknown>): OptionQuote => events(new OkxNormalizer().normalize(item(patch), RECV))[0] as OptionQuote;
    expect(q({ askVol: '' }).askIv).toBeNull();
    expect(q({ bidVol: '0.35' }).bidIv).toBe(0.35);
    expect(q({ bidVol: '0.0' }).bidIv).toBeNull();
    expect(q({ deltaBS: '' }).greeks).toBeNull();
    for (const markVol of ['', '0', '-0.2', 'abc', ' 0.36', '0x1', 'NaN', 'Infinity', 0.36]) {
      expect(dropKind(new OkxNormalizer().normalize(item({ markVol }), RECV)), String(markVol)).toBe(OkxDropKinds.badOptSummary);
    }
    expect(dropKind(new OkxNormalizer().normalize(item({ fwdPx: '' }), RECV))).toBe(OkxDropKinds.noForward);
    expect(parseOkxNumber('-0.0004270396398519')).toBe(-0.0004270396398519);
    expect(parseOkxNumber('1785870839964')).toBe(1785870839964);
    expect(parseOkxNumber('')).toBeNull();
    expect(parseOkxNumber(undefined)).toBeNull();
    expect(parseOkxNumber('1,5')).toBeUndefined();
    expect(parseOkxNumber('1e999')).toBeUndefined();
  });
});

describe('index, mark-price and tickers -> IndexPrice and FutureQuote', () => {
  it('index-tickers: supported families only', () => {
    const n = new OkxNormalizer();
    const eth = lines('tardis-okex-options-v5-2021-12.jsonl')[1];
    expect(events(n.normalize(eth, RECV))).toEqual([{ kind: 'index', source: 'OKX', base: 'ETH', quote: 'USD', price: 3814.05, timestamp: 1640001659.508, receivedAt: RECV }]);
    expect(n.latestIndex('ETH-USD')).toEqual({ price: 3814.05, timestamp: 1640001659.508 });
    expect(dropKind(n.normalize(lines('tardis-okex-futures-v5-2021-12.jsonl')[4], RECV))).toBe(OkxDropKinds.unsupportedIndex);
  });

  it('tickers stand in for the mark (mid of bid/ask) until the first mark-price, then mark-price rules', () => {
    const t = lines('crypto-msg-parser-tickers-push-2022-06.jsonl');
    const n = new OkxNormalizer();
    // no BTC-USD index yet
    expect(dropKind(n.normalize(t[1], RECV))).toBe(OkxDropKinds.noIndexYet);
    events(n.normalize(btcIndex, RECV));
    const [fut] = events(n.normalize(t[1], RECV)) as FutureQuote[];
    expect(fut).toEqual({
      kind: 'future',
      source: 'OKX',
      instrument: 'BTC-USD-220624',
      base: 'BTC',
      quote: 'USD',
      perpetual: false,
      expirationTimestamp: Date.UTC(2022, 5, 24, 8) / 1000,
      inverse: true,
      markPrice: (29882 + 29885.7) / 2,
      indexPrice: 64280,
      currentFunding: null,
      funding8h: null,
      timestamp: 1654166101.413,
      receivedAt: RECV,
    });
    // mark-price of the same future (the tardis FIL-USDT-220325 message with its instId set to BTC-USD-220624)
    const mp = clone(lines('tardis-okex-futures-v5-2021-12.jsonl')[0]) as { arg: { instId: string }; data: { instId: string }[] };
    mp.arg.instId = 'BTC-USD-220624';
    (mp.data[0] as { instId: string }).instId = 'BTC-USD-220624';
    const [m] = events(n.normalize(mp, RECV)) as FutureQuote[];
    expect(m?.markPrice).toBe(36.232);
    expect(m?.timestamp).toBe(1640131204.676);
    expect(events(n.normalize(t[1], RECV))).toEqual([]); // tickers ignored once a mark is held
    // spot, USDT and option tickers
    expect(dropKind(n.normalize(t[0], RECV))).toBe(OkxDropKinds.unsupportedInstrument);
    expect(dropKind(n.normalize(t[2], RECV))).toBe(OkxDropKinds.unsupportedInstrument);
    expect(dropKind(n.normalize(t[5], RECV))).toBe(OkxDropKinds.ignoredChannel);
    // the swap's ticker: empty bid -> last
    const [swap] = events(n.normalize(t[3], RECV)) as FutureQuote[];
    expect(swap).toMatchObject({ instrument: 'BTC-USD-SWAP', perpetual: true, expirationTimestamp: null, markPrice: (29933 + 29932.9) / 2, currentFunding: null });
  });
});

describe('funding-rate -> currentFunding and FundingRate points', () => {
  it('current format (docs): the settled point at fundingTime - interval with settFundingRate, once', () => {
    const n = new OkxNormalizer();
    const evs = events(n.normalize(docs['ws funding-rate push'], RECV));
    expect(evs).toEqual([
      { kind: 'funding', source: 'OKX', instrumentId: 'BTC-USD-SWAP', base: 'BTC', quote: 'USD', interest: 0.0001699799259033, intervalHours: 8, timestamp: 1700697600 },
    ]);
    expect(new Date(1700697600 * 1000).toISOString()).toBe('2023-11-23T00:00:00.000Z');
    expect(events(n.normalize(docs['ws funding-rate push'], RECV))).toEqual([]); // pushed again every 30-90 s: no duplicate
  });

  it('current format (real X-Perp capture): prevFundingTime is the settled time; the X-Perp itself is not ours', () => {
    const msg = (lines('tardis-xperp-index-and-funding-2026-08-04.jsonl')[1] as { message: { data: unknown[] } }).message;
    const p = FundingRatePushSchema.parse(msg.data[0]);
    expect(p.fundingRate).toBe(-0.0004270396398519);
    expect(p.nextFundingRate).toBeNull(); // "" = missing
    expect(okxSettledFundingPoint(p)).toEqual({ timestamp: 1785859200, interest: -0.0001996513270201, intervalHours: 8 });
    expect(dropKind(new OkxNormalizer().normalize(msg, RECV))).toBe(OkxDropKinds.unsupportedInstrument);
    expect(okxSettledFundingPoint({ ...p, settState: 'processing' })).toBeNull();
  });

  it('the swap quote carries the current funding once a mark and index are held', () => {
    const n = new OkxNormalizer();
    events(n.normalize(btcIndex, RECV));
    const t = lines('crypto-msg-parser-tickers-push-2022-06.jsonl');
    events(n.normalize(t[3], RECV)); // BTC-USD-SWAP ticker (no mark-price yet): quote without funding
    const mp = { arg: { channel: 'mark-price', instId: 'BTC-USD-SWAP' }, data: [{ instId: 'BTC-USD-SWAP', instType: 'SWAP', markPx: '37000.5', ts: '1700724675000' }] };
    events(n.normalize(mp, RECV));
    const evs = events(n.normalize(docs['ws funding-rate push'], RECV));
    const q = evs[0] as FutureQuote;
    expect(q).toMatchObject({ kind: 'future', instrument: 'BTC-USD-SWAP', markPrice: 37000.5, indexPrice: 64280, currentFunding: 0.0001875391284828, funding8h: 0.0001875391284828, timestamp: 1700724675.402 });
    expect((evs[1] as FundingRate).timestamp).toBe(1700697600);
    // later mark-price pushes keep the funding
    expect((events(n.normalize(mp, RECV))[0] as FutureQuote).currentFunding).toBe(0.0001875391284828);
  });

  it('old format (2022-03 capture): the point appears when fundingTime rolls forward, with the last rate seen', () => {
    const [btc, usdt] = lines('crypto-msg-parser-funding-rate-push-2022-03.jsonl');
    const n = new OkxNormalizer();
    expect(events(n.normalize(btc, RECV))).toEqual([]); // no mark yet, nothing settled yet
    expect(dropKind(n.normalize(usdt, RECV))).toBe(OkxDropKinds.unsupportedInstrument);
    // the next period's push (derived: fundingTime + 8 h, the forecast becomes the current rate)
    const next = clone(btc) as { data: Record<string, string>[] };
    const d = next.data[0] as Record<string, string>;
    d['fundingRate'] = d['nextFundingRate'] as string;
    d['fundingTime'] = String(1646323200000 + 8 * 3_600_000);
    expect(events(n.normalize(next, RECV))).toEqual([
      { kind: 'funding', source: 'OKX', instrumentId: 'BTC-USD-SWAP', base: 'BTC', quote: 'USD', interest: 0.0000734174532791, intervalHours: 8, timestamp: 1646323200 },
    ]);
    expect(events(n.normalize(next, RECV))).toEqual([]);
  });

  it('REST funding-rate-history (docs): ascending, realizedRate, 8 h gaps; noteFunding dedupes against the stream', () => {
    const r = normalizeOkxFundingHistory(docs['GET /api/v5/public/funding-rate-history']);
    expect(r.dropped).toEqual([]);
    expect(r.events).toEqual([
      { kind: 'funding', source: 'OKX', instrumentId: 'BTC-USD-SWAP', base: 'BTC', quote: 'USD', interest: 0.0002279755647389, intervalHours: 8, timestamp: 1703030400 },
      { kind: 'funding', source: 'OKX', instrumentId: 'BTC-USD-SWAP', base: 'BTC', quote: 'USD', interest: 0.0000746572360545, intervalHours: 8, timestamp: 1703059200 },
    ]);
    const n = new OkxNormalizer();
    expect(n.noteFunding('BTC-USD-SWAP', 1700697600)).toBe(true);
    expect(events(n.normalize(docs['ws funding-rate push'], RECV))).toEqual([]);
    const noRealized = normalizeOkxFundingHistory({ code: '0', data: [{ instId: 'ETH-USD-SWAP', fundingRate: '0.0001', fundingTime: '1703030400000', realizedRate: '' }] });
    expect(noRealized.events[0]).toMatchObject({ instrumentId: 'ETH-USD-SWAP', base: 'ETH', interest: 0.0001, intervalHours: 8 });
    expect(normalizeOkxFundingHistory({ code: '0', data: [{ instId: 'BTC-USD-SWAP', fundingRate: 'x', fundingTime: '1' }] }).dropped[0]?.kind).toBe('bad-funding');
  });
});

describe('control frames, malformed and unknown messages: counted, never thrown', () => {
  it('events and odd inputs', () => {
    const n = okxNormalizer();
    expect(events(n('pong', RECV))).toEqual([]);
    // the docs' subscribe acknowledgement (#public-data-websocket-option-summary-channel, "Response Example")
    expect(events(n({ id: '1512', event: 'subscribe', arg: { channel: 'opt-summary', instFamily: 'BTC-USD' }, connId: 'a4d3ae55' }, RECV))).toEqual([]);
    expect(events(n({ event: 'notice', code: '64008', msg: 'The connection will soon be closed for a service upgrade. Please reconnect.', connId: 'a4d3ae55' }, RECV))).toEqual([]);
    const err = n({ id: '1512', event: 'error', code: '60012', msg: 'Invalid request', connId: 'a4d3ae55' }, RECV);
    expect(err).toEqual({ ok: false, kind: 'ws-error', detail: '60012 Invalid request' });
    expect(dropKind(n({ event: 'login' }, RECV))).toBe(OkxDropKinds.unknownEvent);
    expect(dropKind(n({ arg: { channel: 'candle1m', instId: 'BTC-USD-SWAP' }, data: [] }, RECV))).toBe(OkxDropKinds.unknownChannel);
    expect(dropKind(n(lines('tardis-okex-options-v5-2021-12.jsonl')[0], RECV))).toBe(OkxDropKinds.ignoredChannel);
    for (const bad of [null, 42, 'ping', [], {}, { arg: 1, data: 2 }, { arg: { channel: 'opt-summary' }, data: [null, 7, 'x'] }, { event: 5 }]) {
      const r = n(bad, RECV);
      expect(r.ok, JSON.stringify(bad)).toBe(false);
    }
    expect(dropKind(n(docs['ws opt-summary push'], Number.NaN))).toBe(OkxDropKinds.malformed);
  });
});

describe('batchOkxRequests', () => {
  it('keeps each frame within the byte limit, order preserved, nothing lost', () => {
    const args = Array.from({ length: 40 }, (_, i) => ({ channel: 'mark-price', instId: `BTC-USD-2506${String(i).padStart(2, '0')}` }));
    const { frames, batches } = batchOkxRequests('subscribe', args, 400, (i) => String(i + 1));
    expect(frames.length).toBeGreaterThan(1);
    for (const f of frames) expect(Buffer.byteLength(f)).toBeLessThanOrEqual(400);
    expect(batches.flat()).toEqual(args);
    expect(JSON.parse(frames[0] as string)).toMatchObject({ id: '1', op: 'subscribe' });
    expect(() => batchOkxRequests('subscribe', args, 40)).toThrow(RangeError);
    expect(batchOkxRequests('subscribe', args).frames).toHaveLength(1);
  });
});
