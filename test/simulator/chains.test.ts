/**
 * Deribit-shaped chains of the simulator: expiry pattern against real Deribit listings, 08:00 UTC
 * expiries after now, strike grids around spot, instrument object shapes against recorded
 * get_instruments objects, linear naming with 'd', and roll-off.
 */
import { sampleJson } from '../helpers/fixtures.js';
import { describe, expect, it } from 'vitest';
import {
  DeribitChains,
  deribitDateCode,
  lastFriday,
  listExpiries,
  PRODUCTS,
  strikeGrid,
  strikeText,
} from '../../adapters/simulator/chains.js';
import { Market } from '../../adapters/simulator/market.js';

const json = (f: string) => sampleJson('deribit', f);
const BTC = PRODUCTS.find((p) => p.prefix === 'BTC')!;
const DAY = 86_400_000;

function chainsAt(ms: number, seed = 1) {
  let t = ms;
  const market = new Market({ seed, clock: () => t });
  const chains = new DeribitChains(market);
  return {
    market,
    chains,
    set(ms2: number) {
      t = ms2;
    },
  };
}

/** JSON type name: 'array', 'null', or typeof. */
const typeOf = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);

describe('simulator chains: expiry pattern', () => {
  it('lists exactly the option expiries Deribit listed on 2026-05-20 07:50 UTC (nautilus get_expirations)', () => {
    const rec = json('nautilus__rest-get_expirations_any_2026-05-20.json');
    const at = Math.floor(rec.usIn / 1000); // 2026-05-20T07:50:53Z
    const ours = listExpiries(at, BTC.optionSchedule).map((e) => e.code);
    expect(ours).toEqual(rec.result.option);
  });

  it('lists exactly the BTC/ETH futures Deribit listed on 2025-05-02 (crypto-market-raw-data)', () => {
    const rec: Array<{ instrument_name: string; settlement_period: string }> = json('crypto-market-raw-data__get_instruments_future_BTC+ETH_2025-05-02.json');
    const real = rec.filter((i) => i.instrument_name.startsWith('BTC-') && i.settlement_period !== 'perpetual').map((i) => i.instrument_name.slice(4));
    const ours = listExpiries(Date.UTC(2025, 4, 2, 12), BTC.futureSchedule!).map((e) => e.code);
    expect(ours).toEqual(real);
  });

  it('covers the option expiries of the 2025-05-08 listing; any extra is a daily', () => {
    const rec: Array<{ instrument_name: string; base_currency: string }> = json('crypto-market-raw-data__get_instruments_option_BTC+ETH_2025-05-08.json');
    const real = new Set(rec.filter((i) => i.base_currency === 'BTC').map((i) => i.instrument_name.split('-')[1]!));
    const ours = listExpiries(Date.UTC(2025, 4, 8, 12), BTC.optionSchedule);
    for (const code of real) expect(ours.map((e) => e.code)).toContain(code);
    for (const e of ours) if (!real.has(e.code)) expect(e.period).toBe('day');
  });

  it('puts every expiry after now at 08:00 UTC with the right settlement_period, at any time of day', () => {
    for (const now of [Date.UTC(2026, 0, 1, 7, 59, 59), Date.UTC(2026, 0, 1, 8, 0, 0), Date.UTC(2026, 5, 26, 8, 0, 1), Date.UTC(2027, 11, 31, 23)]) {
      const ex = listExpiries(now, BTC.optionSchedule);
      expect(ex.length).toBeGreaterThanOrEqual(10);
      for (const e of ex) {
        expect(e.ms).toBeGreaterThan(now);
        expect(e.ms % DAY).toBe(8 * 3_600_000);
        const d = new Date(e.ms);
        const lastFri = lastFriday(d.getUTCFullYear(), d.getUTCMonth()) === e.ms;
        expect(e.period).toBe(lastFri ? 'month' : d.getUTCDay() === 5 ? 'week' : 'day');
        expect(e.code).toBe(deribitDateCode(e.ms));
      }
      // 4 dailies, weeklies within 3 weeks, 3 monthlies, 4 quarterlies (Mar/Jun/Sep/Dec).
      const quarterlies = ex.filter((e) => e.period === 'month' && new Date(e.ms).getUTCMonth() % 3 === 2);
      expect(quarterlies.length).toBeGreaterThanOrEqual(4);
      expect(ex[ex.length - 1]!.ms - now).toBeGreaterThan(270 * DAY);
    }
    expect(deribitDateCode(Date.UTC(2025, 4, 9, 8))).toBe('9MAY25');
    expect(lastFriday(2026, 2)).toBe(Date.UTC(2026, 2, 27, 8));
  });
});

describe('simulator chains: strikes and instruments', () => {
  it('builds strike grids around spot with Deribit-like spacing', () => {
    // Daily BTC near 90k: 500 near the money; quarterly: 2000 near the money, range ~0.2x..4.5x.
    const daily = strikeGrid(90_000, 0.5 * Math.sqrt(3 / 365));
    expect(daily).toContain(90_000);
    expect(daily.filter((k) => Math.abs(k - 90_000) <= 1000)).toEqual([89_000, 89_500, 90_000, 90_500, 91_000]);
    const quarterly = strikeGrid(90_000, 0.5);
    expect(quarterly.filter((k) => Math.abs(k - 90_000) <= 4000)).toEqual([86_000, 88_000, 90_000, 92_000, 94_000]);
    expect(quarterly[0]!).toBeGreaterThanOrEqual(90_000 / 5);
    expect(quarterly[quarterly.length - 1]!).toBeLessThanOrEqual(90_000 * 4.5);
    // Steps never shrink away from the money.
    const above = quarterly.filter((k) => k >= 90_000);
    for (let i = 2; i < above.length; i++) expect(above[i]! - above[i - 1]!).toBeGreaterThanOrEqual(above[i - 1]! - above[i - 2]! - 1e-9);
    expect(strikeText(2.2)).toBe('2d2');
    expect(strikeText(0.625)).toBe('0d625');
    expect(strikeText(100000)).toBe('100000');
  });

  it('lists BTC/ETH inverse and SOL/XRP linear options, futures and perpetuals with strikes around spot', () => {
    const now = Date.UTC(2026, 4, 26, 19, 27, 44);
    const { chains, market } = chainsAt(now);
    const all = chains.all();
    const names = new Set(all.map((i) => i.name));
    for (const p of ['BTC-PERPETUAL', 'ETH-PERPETUAL', 'SOL_USDC-PERPETUAL', 'XRP_USDC-PERPETUAL', 'BTC-26JUN26', 'ETH-25DEC26']) expect(names).toContain(p);
    for (const prefix of ['BTC', 'ETH', 'SOL_USDC', 'XRP_USDC']) {
      const opts = chains.options(prefix);
      expect(opts.length).toBeGreaterThan(prefix.includes('USDC') ? 80 : 400);
      const byExpiry = new Map<number, number[]>();
      for (const o of opts) {
        expect(o.expiryMs).toBeGreaterThan(now);
        expect(o.json.expiration_timestamp).toBe(o.expiryMs);
        if (o.optionType === 'call') (byExpiry.get(o.expiryMs) ?? byExpiry.set(o.expiryMs, []).get(o.expiryMs)!).push(o.strike!);
      }
      const S = market.spot(opts[0]!.underlying);
      for (const strikes of byExpiry.values()) {
        expect(Math.min(...strikes)).toBeLessThan(S);
        expect(Math.max(...strikes)).toBeGreaterThan(S);
        expect(strikes.filter((k) => Math.abs(Math.log(k / S)) < 0.05).length).toBeGreaterThanOrEqual(3);
      }
      // Every strike has a call and a put.
      expect(opts.filter((o) => o.optionType === 'put').length).toBe(opts.filter((o) => o.optionType === 'call').length);
    }
    // Names: prefix-DMMMYY-strike-C/P; linear strikes use 'd' as the decimal point.
    for (const o of chains.options()) {
      const parts = o.name.split('-');
      expect(parts[0]).toBe(o.product.prefix);
      expect(parts[1]).toBe(deribitDateCode(o.expiryMs));
      expect(Number(parts[2]!.replace('d', '.'))).toBe(o.strike);
      expect(parts[3]).toBe(o.optionType === 'call' ? 'C' : 'P');
    }
    expect(chains.options('XRP_USDC').some((o) => /^XRP_USDC-\d+[A-Z]{3}\d\d-\d+d\d+-[CP]$/.test(o.name))).toBe(true);
    // Options on an expiry with a listed future point at it (Deribit underlying_index).
    const withFuture = chains.options('BTC').filter((o) => o.futureName);
    expect(withFuture.length).toBeGreaterThan(0);
    for (const o of withFuture) expect(names).toContain(o.futureName!);
  });

  it('builds instrument objects with the fields and JSON types of recorded Deribit objects', () => {
    const { chains } = chainsAt(Date.UTC(2025, 4, 8, 12));
    const recOpt: Array<Record<string, unknown>> = json('crypto-market-raw-data__get_instruments_option_BTC+ETH_2025-05-08.json');
    const recFut: Array<Record<string, unknown>> = json('crypto-market-raw-data__get_instruments_future_BTC+ETH_2025-05-02.json');
    const recUsdc: Array<Record<string, unknown>> = json('cryptofeed__rest-get_instruments_USDC_expired-false.json').result;
    const pairs: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [recOpt.find((i) => i.instrument_name === 'BTC-27JUN25-100000-C')!, chains.get('BTC-27JUN25-100000-C')!.json],
      [recOpt.find((i) => i.base_currency === 'ETH')!, chains.options('ETH')[0]!.json],
      [recFut.find((i) => i.instrument_name === 'BTC-27JUN25')!, chains.get('BTC-27JUN25')!.json],
      [recFut.find((i) => i.instrument_name === 'ETH-PERPETUAL')!, chains.get('ETH-PERPETUAL')!.json],
      [recUsdc.find((i) => i.instrument_name === 'SOL_USDC-PERPETUAL')!, chains.get('SOL_USDC-PERPETUAL')!.json],
      [recUsdc.find((i) => i.instrument_name === 'XRP_USDC-PERPETUAL')!, chains.get('XRP_USDC-PERPETUAL')!.json],
    ];
    for (const [real, ours] of pairs) {
      for (const [k, v] of Object.entries(real)) {
        expect(ours, `${String(ours.instrument_name)}.${k}`).toHaveProperty(k);
        expect(typeOf(ours[k]), `${String(ours.instrument_name)}.${k}`).toBe(typeOf(v));
      }
    }
    // Values that must match the recorded listing exactly.
    const ours = chains.get('BTC-27JUN25-100000-C')!.json;
    const real = recOpt.find((i) => i.instrument_name === 'BTC-27JUN25-100000-C')!;
    for (const k of ['kind', 'option_type', 'strike', 'expiration_timestamp', 'settlement_currency', 'quote_currency', 'base_currency', 'counter_currency', 'instrument_type', 'price_index', 'settlement_period', 'contract_size', 'tick_size', 'tick_size_steps', 'min_trade_amount']) {
      expect(ours[k], k).toEqual(real[k]);
    }
    expect(chains.get('BTC-PERPETUAL')!.json.expiration_timestamp).toBe(32503708800000);
    // Linear options: USDC-settled, instrument_type linear, price_index sol_usdc.
    const sol = chains.options('SOL_USDC')[0]!.json;
    expect(sol).toMatchObject({ instrument_type: 'linear', settlement_currency: 'USDC', quote_currency: 'USDC', counter_currency: 'USDC', base_currency: 'SOL', price_index: 'sol_usdc', kind: 'option' });
    // Unique instrument ids; creation before now.
    const ids = chains.all().map((i) => i.json.instrument_id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const i of chains.all()) expect(i.json.creation_timestamp as number).toBeLessThanOrEqual(Date.UTC(2025, 4, 8, 12) + 60_000);
  });

  it('rolls: expired instruments leave the listing, new expiries appear, everything stays after now', () => {
    const start = Date.UTC(2026, 4, 26, 19, 27, 44);
    const h = chainsAt(start);
    const first = Math.min(...h.chains.options('BTC').map((o) => o.expiryMs));
    const before = new Set(h.chains.all().map((i) => i.name));
    h.set(first + 1000);
    const changes = h.chains.refresh(first + 1000);
    expect(changes.expired.length).toBeGreaterThan(0);
    expect(changes.expired.every((i) => i.expiryMs === first)).toBe(true);
    expect(changes.added.length).toBeGreaterThan(0);
    for (const i of changes.added) expect(before.has(i.name)).toBe(false);
    for (const i of h.chains.all()) if (!i.perpetual) expect(i.expiryMs).toBeGreaterThan(first + 1000);
    expect(h.chains.expired().map((i) => i.name)).toEqual(changes.expired.map((i) => i.name));
    // Nothing is due until the next 08:00 UTC.
    expect(h.chains.refresh(first + 3_600_000)).toEqual({ added: [], expired: [] });
    // A week later the listing still has the full pattern.
    const later = first + 7 * DAY + 5000;
    h.set(later);
    h.chains.refresh(later);
    const codes = new Set(h.chains.options('BTC').map((o) => o.name.split('-')[1]));
    expect(codes.size).toBeGreaterThanOrEqual(10);
    for (const i of h.chains.all()) if (!i.perpetual) expect(i.expiryMs).toBeGreaterThan(later);
  });

  it('is deterministic: same start and seed give the same listing', () => {
    const a = chainsAt(Date.UTC(2026, 0, 5, 3), 9).chains.all().map((i) => i.json);
    const b = chainsAt(Date.UTC(2026, 0, 5, 3), 9).chains.all().map((i) => i.json);
    expect(a).toEqual(b);
  });
});
