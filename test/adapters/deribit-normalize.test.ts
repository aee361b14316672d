/**
 * normalizeDeribit on recorded Deribit messages (test/fixtures/deribit/norm-*, copied from
 * ../shared/exchange-samples/deribit). Expected numbers are the recorded wire values with the
 * documented unit conversions (ms -> s, percent -> fraction) applied in the test itself.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MarketEventSchema, type FutureQuote, type MarketEvent, type OptionQuote } from '../../src/domain/events.js';
import { DropKinds, ivFromPrice, normalizeDeribit, normalizeFundingHistory, normalizeInstrumentList } from '../../adapters/deribit/normalize.js';
import { refBlack76 } from '../simulator/helpers.js';
import type { NormalizeResult } from '../../src/domain/feeds.js';

const fixture = (name: string): unknown[] =>
  readFileSync(new URL(`../fixtures/deribit/${name}`, import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as unknown);

const RECV = 1_700_000_000.5;

function events(r: NormalizeResult): readonly MarketEvent[] {
  if (!r.ok) throw new Error(`expected ok, got ${r.kind}: ${r.detail}`);
  return r.events;
}

function one<K extends MarketEvent['kind']>(r: NormalizeResult, kind: K): Extract<MarketEvent, { kind: K }> {
  const evs = events(r);
  expect(evs).toHaveLength(1);
  const ev = evs[0] as MarketEvent;
  expect(ev.kind).toBe(kind);
  expect(MarketEventSchema.safeParse(ev).success).toBe(true);
  return ev as Extract<MarketEvent, { kind: K }>;
}

interface RawTicker {
  params: { channel: string; data: Record<string, unknown> & { mark_iv: number; bid_iv: number; ask_iv: number; timestamp: number } };
}

describe('option tickers (cryptofeed capture, 2021-07-22)', () => {
  const msgs = fixture('norm-cryptofeed-option-tickers-2021-07-22.jsonl');

  it('converts ETH-30JUL21-2800-C exactly', () => {
    const q = one(normalizeDeribit(msgs[0], RECV), 'option') as OptionQuote;
    expect(q.instrument).toBe('ETH-30JUL21-2800-C');
    expect(q).toMatchObject({ source: 'DERIBIT', base: 'ETH', quote: 'USD', inverse: true, strike: 2800, optionType: 'C' });
    expect(q.expirationTimestamp).toBe(Date.parse('2021-07-30T08:00:00Z') / 1000);
    expect(q.markIv).toBeCloseTo(1.2074, 14);
    expect(q.bidIv).toBeCloseTo(1.1562, 14);
    expect(q.askIv).toBeCloseTo(1.2563, 14);
    expect(q.forward).toBe(2003.61);
    expect(q.indexPrice).toBe(2006.72);
    expect(q.timestamp).toBeCloseTo(1626993723.632, 6);
    expect(q.markPriceNative).toBe(0.001972);
    expect(q.greeks).toEqual({ delta: 0.03127, gamma: 0.0002, vega: 0.20072, theta: -1.64029, rho: 0.01188 });
    expect(q.receivedAt).toBe(RECV);
  });

  it('maps bid_iv/ask_iv 0 (no orders) to null', () => {
    const q = one(normalizeDeribit(msgs[1], RECV), 'option') as OptionQuote;
    expect(q.instrument).toBe('ETH-27AUG21-4000-P');
    expect(q.bidIv).toBeNull();
    expect(q.askIv).toBeNull();
    expect(q.markIv).toBeCloseTo(1.172, 14);
  });

  it('normalizes all 89 notifications; every number follows from its raw message', () => {
    expect(msgs).toHaveLength(89);
    for (const raw of msgs) {
      const d = (raw as RawTicker).params.data;
      const q = one(normalizeDeribit(raw, RECV), 'option') as OptionQuote;
      expect(q.markIv).toBeCloseTo(d.mark_iv / 100, 14);
      expect(q.bidIv).toEqual(d.bid_iv > 0 && d['best_bid_price'] !== 0 ? d.bid_iv / 100 : null);
      expect(q.askIv).toEqual(d.ask_iv > 0 && d['best_ask_price'] !== 0 ? d.ask_iv / 100 : null);
      expect(q.forward).toBe(d['underlying_price']);
      expect(q.indexPrice).toBe(d['index_price']);
      expect(q.timestamp).toBe(d.timestamp / 1000);
      expect(q.instrument).toBe(d['instrument_name']);
    }
  });
});

describe('tardis-node ticker sample: perpetual, closed, combos, unsupported', () => {
  const msgs = fixture('norm-tardis-ticker-notifications.jsonl');
  const results = msgs.map((m) => normalizeDeribit(m, RECV));

  it('copies perpetual funding fields', () => {
    const f = one(results[0] as NormalizeResult, 'future') as FutureQuote;
    expect(f).toMatchObject({ instrument: 'BTC-PERPETUAL', perpetual: true, expirationTimestamp: null, inverse: true, markPrice: 10094.1, indexPrice: 10091.15, currentFunding: 0, funding8h: 0.00016281 });
    expect(f.timestamp).toBe(1564617604.229);
    const g = one(results[1] as NormalizeResult, 'future') as FutureQuote;
    expect(g.funding8h).toBe(-0.00008477);
  });

  it('drops the closed option as closed-instrument', () => {
    expect(results[2]).toMatchObject({ ok: false, kind: 'closed-instrument' });
  });

  it('keeps old SYN.* underlying options with their forward', () => {
    const q = one(results[3] as NormalizeResult, 'option') as OptionQuote;
    expect(q).toMatchObject({ instrument: 'BTC-5JUN20-9250-C', forward: 9440.73, indexPrice: 9434.36 });
    expect(q.markIv).toBeCloseTo(0.6321, 14);
  });

  it('counts combos and unsupported currencies as their own kinds', () => {
    expect(results.slice(6, 9).map((r) => (r.ok ? 'ok' : r.kind))).toEqual(['combo-instrument', 'combo-instrument', 'combo-instrument']);
    expect(results[9]).toMatchObject({ ok: false, kind: 'unsupported-instrument' });
  });
});

describe('futures, perpetuals and the heartbeat', () => {
  it('dated future: no funding fields, expiry from its name', () => {
    const [fut, perp, opt] = fixture('norm-crypto-msg-parser-tickers-2022-06.jsonl').map((m) => normalizeDeribit(m, RECV));
    const f = one(fut as NormalizeResult, 'future') as FutureQuote;
    expect(f).toMatchObject({ instrument: 'BTC-30SEP22', perpetual: false, currentFunding: null, funding8h: null, markPrice: 30218.9, indexPrice: 29939.87 });
    expect(f.expirationTimestamp).toBe(Date.parse('2022-09-30T08:00:00Z') / 1000);
    expect((one(perp as NormalizeResult, 'future') as FutureQuote).funding8h).toBe(0.00000255);
    const o = one(opt as NormalizeResult, 'option') as OptionQuote;
    expect(o.forward).toBe(30220.5); // underlying_index BTC-30SEP22: the future's price, not the index 29939.43
    expect(o.indexPrice).toBe(29939.43);
  });

  it('2025 perpetual ticker with interest_value; test_request gives no event', () => {
    const [tick, hb] = fixture('norm-nautilus-perpetual-ticker-and-test-request.jsonl');
    const f = one(normalizeDeribit(tick, RECV), 'future') as FutureQuote;
    expect(f).toMatchObject({ instrument: 'BTC-PERPETUAL', markPrice: 92281.78, indexPrice: 92263.55, currentFunding: 0, funding8h: 0.00001742, timestamp: 1765541474.086 });
    expect(normalizeDeribit(hb, RECV)).toEqual({ ok: true, events: [] });
  });
});

describe('deribit_price_index', () => {
  const [docs] = fixture('norm-docs-price-index.jsonl');

  it('docs example -> IndexPrice BTC/USD', () => {
    const ev = one(normalizeDeribit(docs, RECV), 'index');
    expect(ev).toEqual({ kind: 'index', source: 'DERIBIT', base: 'BTC', quote: 'USD', price: 6521.17, timestamp: 1535098298.227, receivedAt: RECV });
  });

  it('maps each supported index to its pair and ignores others', () => {
    const withIndex = (name: string): unknown => ({
      jsonrpc: '2.0',
      method: 'subscription',
      params: { channel: `deribit_price_index.${name}`, data: { timestamp: 1535098298227, price: 2.5, index_name: name } },
    });
    expect(one(normalizeDeribit(withIndex('eth_usd'), RECV), 'index')).toMatchObject({ base: 'ETH', quote: 'USD' });
    expect(one(normalizeDeribit(withIndex('sol_usdc'), RECV), 'index')).toMatchObject({ base: 'SOL', quote: 'USDC' });
    expect(one(normalizeDeribit(withIndex('xrp_usdc'), RECV), 'index')).toMatchObject({ base: 'XRP', quote: 'USDC', price: 2.5 });
    expect(normalizeDeribit(withIndex('btc_usdc'), RECV)).toMatchObject({ ok: false, kind: 'unsupported-index' });
    expect(normalizeDeribit(withIndex('ada_usdc'), RECV)).toMatchObject({ ok: false, kind: 'unsupported-index' });
  });
});

describe('instrument listings (public/get_instruments)', () => {
  it('2025 option listing: one definition per option, counts per currency equal the file', () => {
    const [list] = fixture('norm-crypto-market-raw-data-get_instruments_option_BTC+ETH_2025-05-08.result.jsonl') as [Array<Record<string, unknown>>];
    const expected = { BTC: list.filter((x) => x['base_currency'] === 'BTC').length, ETH: list.filter((x) => x['base_currency'] === 'ETH').length };
    expect(expected).toEqual({ BTC: 714, ETH: 554 });
    const r = normalizeInstrumentList(list, RECV);
    expect(r.dropped).toEqual([]);
    expect(r.events.filter((d) => d.base === 'BTC')).toHaveLength(714);
    expect(r.events.filter((d) => d.base === 'ETH')).toHaveLength(554);
    for (const [i, d] of r.events.entries()) {
      const raw = list[i] as { expiration_timestamp: number; strike: number; option_type: string; creation_timestamp: number };
      expect(MarketEventSchema.safeParse(d).success).toBe(true);
      expect(d).toMatchObject({ type: 'option', quote: 'USD', inverse: true, strike: raw.strike, optionType: raw.option_type === 'call' ? 'C' : 'P' });
      expect(d.expirationTimestamp).toBe(raw.expiration_timestamp / 1000);
      expect(new Date((d.expirationTimestamp as number) * 1000).getUTCHours()).toBe(8);
      expect(d.timestamp).toBe(raw.creation_timestamp / 1000);
    }
  });

  it('2025 future listing: 14 dated futures and 2 perpetuals', () => {
    const [list] = fixture('norm-crypto-market-raw-data-get_instruments_future_BTC+ETH_2025-05-02.result.jsonl');
    const r = normalizeInstrumentList(list, RECV);
    expect(r.events.filter((d) => d.type === 'future')).toHaveLength(14);
    expect(r.events.filter((d) => d.type === 'perpetual').map((d) => [d.instrument, d.expirationTimestamp])).toEqual([
      ['BTC-PERPETUAL', null],
      ['ETH-PERPETUAL', null],
    ]);
  });

  it('2021 JSON-RPC responses through normalizeDeribit (old format without settlement_currency)', () => {
    const [btc] = fixture('norm-cryptofeed-get_instruments_BTC_2021-07-22.jsonl');
    const evs = events(normalizeDeribit(btc, RECV));
    expect(evs).toHaveLength(398);
    const defs = evs.filter((e) => e.kind === 'instrument');
    expect(defs.filter((d) => d.type === 'option')).toHaveLength(390);
    expect(defs.filter((d) => d.type === 'future')).toHaveLength(7);
    expect(defs.filter((d) => d.type === 'perpetual')).toHaveLength(1);
    const [eth] = fixture('norm-cryptofeed-get_instruments_ETH_2021-07-22.jsonl');
    expect(events(normalizeDeribit(eth, RECV))).toHaveLength(426);
  });

  it('USDC listing keeps SOL_USDC and XRP_USDC perpetuals, ignores the other 14 coins', () => {
    const [usdc] = fixture('norm-cryptofeed-get_instruments_USDC_2022-05.jsonl') as [{ result: unknown }];
    const r = normalizeInstrumentList(usdc.result, RECV);
    expect(r.events.map((d) => [d.instrument, d.base, d.quote, d.inverse, d.type])).toEqual([
      ['SOL_USDC-PERPETUAL', 'SOL', 'USDC', false, 'perpetual'],
      ['XRP_USDC-PERPETUAL', 'XRP', 'USDC', false, 'perpetual'],
    ]);
    expect(r.dropped).toHaveLength(14);
    expect(new Set(r.dropped.map((d) => d.kind))).toEqual(new Set(['unsupported-instrument']));
  });

  it('docs example: BTC-29SEP23 and BTC-PERPETUAL', () => {
    const [docs] = fixture('norm-docs-get_instruments.jsonl');
    const defs = events(normalizeDeribit(docs, RECV));
    expect(defs.map((d) => d.kind === 'instrument' && [d.instrument, d.type, d.expirationTimestamp])).toEqual([
      ['BTC-29SEP23', 'future', 1695974400],
      ['BTC-PERPETUAL', 'perpetual', null],
    ]);
  });

  it('drops listing entries inconsistent with their names', () => {
    const base = { instrument_name: 'BTC-26JUN26-100000-C', kind: 'option', strike: 100000, option_type: 'call', expiration_timestamp: Date.parse('2026-06-26T08:00:00Z') };
    const r = normalizeInstrumentList(
      [
        base,
        { ...base, expiration_timestamp: base.expiration_timestamp + 1000 },
        { ...base, strike: 90000 },
        { ...base, option_type: 'put' },
        { ...base, kind: 'future' },
        { ...base, is_active: false },
        { ...base, instrument_name: 'BTC-FS-26JUN26_PERP', kind: 'future_combo' },
        { ...base, strike: 'x' },
        'junk',
      ],
      RECV,
    );
    expect(r.events).toHaveLength(1);
    expect(r.events[0]?.timestamp).toBe(RECV); // no creation_timestamp -> receive time
    expect(r.dropped.map((d) => d.kind)).toEqual(['bad-instrument', 'bad-instrument', 'bad-instrument', 'bad-instrument', 'inactive-instrument', 'combo-instrument', 'bad-instrument', 'bad-instrument']);
    expect(normalizeInstrumentList({ not: 'an array' }, RECV).dropped).toHaveLength(1);
  });
});

describe('funding history (public/get_funding_rate_history docs example)', () => {
  const [resp] = fixture('norm-docs-get_funding_rate_history.jsonl') as [{ result: Array<{ timestamp: number; interest_1h: number }> }];

  it('interest = interest_1h, hourly, timestamps in s', () => {
    const r = normalizeFundingHistory(resp.result, 'BTC-PERPETUAL', { base: 'BTC', quote: 'USD' });
    expect(r.dropped).toEqual([]);
    expect(r.events).toEqual(
      resp.result.map((p) => ({
        kind: 'funding',
        source: 'DERIBIT',
        instrumentId: 'BTC-PERPETUAL',
        base: 'BTC',
        quote: 'USD',
        interest: p.interest_1h,
        intervalHours: 1,
        timestamp: p.timestamp / 1000,
      })),
    );
    expect(r.events[0]?.interest).toBe(-4.739622041017375e-7);
    expect(r.events[0]?.timestamp).toBe(1569891600);
    for (const e of r.events) expect(MarketEventSchema.safeParse(e).success).toBe(true);
  });

  it('sorts and dedupes by timestamp; bad points are dropped', () => {
    const pts = resp.result;
    const r = normalizeFundingHistory([pts[2], pts[0], pts[0], { timestamp: 'x', interest_1h: 1 }, { timestamp: 1, interest_1h: null }], 'BTC-PERPETUAL', { base: 'BTC', quote: 'USD' });
    expect(r.events.map((e) => e.timestamp)).toEqual([1569891600, 1569898800]);
    expect(r.dropped.map((d) => d.kind)).toEqual(['bad-funding', 'bad-funding']);
  });

  it('the response alone cannot be attributed: normalizeDeribit counts it', () => {
    expect(normalizeDeribit(resp, RECV)).toMatchObject({ ok: false, kind: 'unattributed-funding-history' });
  });
});

describe('malformed and unknown messages are counted, never thrown', () => {
  const [ticker] = fixture('norm-cryptofeed-option-tickers-2021-07-22.jsonl') as [RawTicker];
  const withData = (patch: Record<string, unknown>): unknown => ({ ...ticker, params: { ...ticker.params, data: { ...ticker.params.data, ...patch } } });
  const kindOf = (raw: unknown): string => {
    const r = normalizeDeribit(raw, RECV);
    return r.ok ? 'ok' : r.kind;
  };

  it('wrong types, NaN, missing fields, impossible values', () => {
    expect(kindOf(withData({ mark_iv: '120.74' }))).toBe('bad-ticker');
    expect(kindOf(withData({ mark_iv: Number.NaN }))).toBe('bad-ticker');
    expect(kindOf(withData({ mark_iv: Number.POSITIVE_INFINITY }))).toBe('bad-ticker');
    expect(kindOf(withData({ mark_iv: 0 }))).toBe('bad-ticker');
    expect(kindOf(withData({ mark_iv: undefined }))).toBe('bad-ticker');
    expect(kindOf(withData({ underlying_price: -1 }))).toBe('bad-ticker');
    expect(kindOf(withData({ index_price: 0 }))).toBe('bad-ticker');
    expect(kindOf(withData({ timestamp: null }))).toBe('bad-ticker');
    expect(kindOf(withData({ greeks: { delta: 'x' } }))).toBe('bad-ticker');
    expect(kindOf(withData({ instrument_name: 'ETH-30JUL21-2900-C' }))).toBe('bad-ticker');
    expect(kindOf(withData({ state: 'settlement' }))).toBe('closed-instrument');
    expect(kindOf(withData({ timestamp: Date.parse('2021-07-30T08:00:00Z') }))).toBe('closed-instrument');
    expect(kindOf({ ...ticker, params: { ...ticker.params, data: 'oops' } })).toBe('bad-ticker');
  });

  it('negative or zero strikes and bad names in the channel', () => {
    const named = (name: string): unknown => ({ ...ticker, params: { channel: `ticker.${name}.100ms`, data: { ...ticker.params.data, instrument_name: name } } });
    expect(kindOf(named('ETH-30JUL21--2800-C'))).toBe('bad-ticker');
    expect(kindOf(named('ETH-30JUL21-0-C'))).toBe('bad-ticker');
    expect(kindOf(named('ETH-31JUN21-2800-C'))).toBe('bad-ticker');
    expect(kindOf({ ...ticker, params: { channel: 'ticker.a.b.c', data: ticker.params.data } })).toBe('unknown-channel');
  });

  it('unknown channels, methods, shapes and JSON-RPC errors', () => {
    expect(kindOf({ jsonrpc: '2.0', method: 'subscription', params: { channel: 'book.BTC-PERPETUAL.raw', data: {} } })).toBe('unknown-channel');
    expect(kindOf({ jsonrpc: '2.0', method: 'subscription', params: { channel: 42, data: {} } })).toBe('malformed');
    expect(kindOf({ jsonrpc: '2.0', method: 'subscription' })).toBe('malformed');
    expect(kindOf({ jsonrpc: '2.0', method: 'unknown_method', params: {} })).toBe('unknown-method');
    expect(kindOf({ jsonrpc: '2.0', method: 'heartbeat', params: { type: 'other' } })).toBe('malformed');
    expect(kindOf({ jsonrpc: '2.0', id: 7, error: { code: 10028, message: 'too_many_requests' } })).toBe('rpc-error');
    expect(kindOf({ jsonrpc: '2.0', id: 7, result: { weird: true } })).toBe('unknown-response');
    for (const junk of [null, undefined, 42, 'text', [], [1, 2], true, {}]) expect(kindOf(junk)).toBe('malformed');
  });

  it('control responses give no events', () => {
    expect(normalizeDeribit({ jsonrpc: '2.0', id: 1, result: 'ok' }, RECV)).toEqual({ ok: true, events: [] });
    expect(normalizeDeribit({ jsonrpc: '2.0', id: 2, result: ['ticker.BTC-PERPETUAL.100ms'] }, RECV)).toEqual({ ok: true, events: [] });
    expect(normalizeDeribit({ jsonrpc: '2.0', id: 3, result: { version: '1.2.26' } }, RECV)).toEqual({ ok: true, events: [] });
  });

  it('field-by-field mutation fuzz: never throws; every event still satisfies the domain schema', () => {
    const samples = [
      ...fixture('norm-tardis-ticker-notifications.jsonl'),
      ...fixture('norm-crypto-msg-parser-tickers-2022-06.jsonl'),
      ...fixture('norm-docs-price-index.jsonl'),
    ] as Array<{ params: { data: Record<string, unknown> } }>;
    const bad: unknown[] = [null, 'x', -1, 0, Number.NaN, Number.NEGATIVE_INFINITY, {}, [], true, 1e308];
    let okCount = 0;
    let dropCount = 0;
    for (const s of samples) {
      for (const key of Object.keys(s.params.data)) {
        for (const v of bad) {
          const raw = { ...s, params: { ...s.params, data: { ...s.params.data, [key]: v } } };
          const r = normalizeDeribit(raw, RECV);
          if (r.ok) {
            okCount += 1;
            for (const ev of r.events) expect(MarketEventSchema.safeParse(ev).success).toBe(true);
          } else {
            dropCount += 1;
            expect(typeof r.kind).toBe('string');
          }
        }
      }
    }
    expect(okCount).toBeGreaterThan(0);
    expect(dropCount).toBeGreaterThan(0);
  });

  it('a non-finite receive time is refused', () => {
    expect(normalizeDeribit(ticker, Number.NaN)).toMatchObject({ ok: false, kind: DropKinds.malformed });
  });
});

describe('bid/ask IV implied from the order price when Deribit prints 0 (real 878-option BTC chain, 2026-05-26)', () => {
  const lines = readFileSync(new URL('../../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"ticker.'))
    .map((l) => JSON.parse(l) as RawTicker);

  /** Independent reference: undiscounted Black-76 (Black 1976, r = 0) on @stdlib's normal CDF, inverted by bisection. */
  function refIv(price: number, F: number, K: number, T: number, type: 'C' | 'P'): number {
    const black = (s: number) => refBlack76(type === 'C' ? 'call' : 'put', F, K, T, s);
    let lo = 1e-6;
    let hi = 20;
    for (let i = 0; i < 200; i++) {
      const mid = (lo + hi) / 2;
      if (black(mid) < price) lo = mid;
      else hi = mid;
    }
    return (lo + hi) / 2;
  }

  it('fills bid and ask IVs from best_bid_price / best_ask_price (coin x underlying_price) and matches Black-76 inversions', () => {
    let bids = 0;
    let asks = 0;
    let noIv = 0;
    const zeroWithBid = lines.filter((m) => m.params.data.bid_iv === 0 && (m.params.data['best_bid_price'] as number) > 0).length;
    for (const m of lines) {
      const d = m.params.data as RawTicker['params']['data'] & Record<string, number>;
      const q = one(normalizeDeribit(m, RECV), 'option') as OptionQuote;
      const T = (q.expirationTimestamp - d.timestamp / 1000) / (365 * 86400);
      for (const [iv, price, printed] of [
        [q.bidIv, d['best_bid_price'] as number, d.bid_iv],
        [q.askIv, d['best_ask_price'] as number, d.ask_iv],
      ] as const) {
        if (printed > 0) continue;
        if (!(price > 0)) {
          expect(iv).toBeNull();
          continue;
        }
        const usd = price * (d['underlying_price'] as number);
        const intrinsic = q.optionType === 'C' ? Math.max(q.forward - q.strike, 0) : Math.max(q.strike - q.forward, 0);
        if (usd <= intrinsic || usd >= (q.optionType === 'C' ? q.forward : q.strike)) {
          expect(iv, `${q.instrument} below intrinsic`).toBeNull();
          noIv++;
          continue;
        }
        const ref = refIv(usd, q.forward, q.strike, T, q.optionType);
        expect(iv, q.instrument).not.toBeNull();
        expect(Math.abs(iv! - ref), `${q.instrument} ${price}`).toBeLessThan(1e-7);
        if (iv === q.bidIv) bids++;
        else asks++;
      }
      if (q.bidIv !== null && q.askIv !== null) expect(q.bidIv, q.instrument).toBeLessThanOrEqual(q.askIv + 1e-12);
    }
    expect(lines).toHaveLength(878);
    expect(zeroWithBid).toBe(790);
    // most bids have an IV now (deep in-the-money bids below intrinsic value have none)
    expect(bids).toBeGreaterThan(500);
    expect(asks).toBeGreaterThan(500);
    expect(noIv).toBeGreaterThan(0);
  });

  it('a bid at or below intrinsic value, or no order, gives no IV', () => {
    const raw = lines.find((m) => m.params.channel === 'ticker.BTC-27MAY26-66000-C.100ms')!;
    const q = one(normalizeDeribit(raw, RECV), 'option') as OptionQuote;
    // 0.103 BTC x 75797.57 = 7807 USD < intrinsic 9797.57 USD
    expect(q.bidIv).toBeNull();
    expect(q.askIv).toBeGreaterThan(0);
    expect(ivFromPrice(0, true, 75797.57, 66000, 0.01, 'C')).toBeNull();
    expect(ivFromPrice(0.0001, false, 100, 100, 0, 'C')).toBeNull();
  });
});
