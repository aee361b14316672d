/**
 * Bybit symbol grammar and instruments-info pages (the docs' examples in test/fixtures/bybit).
 * Expected expiries computed independently with Date.UTC.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pairOfBaseCoin, parseBybitExpiryToken, parseBybitSymbol } from '../../adapters/bybit/instruments.js';
import { BybitDropKinds, normalizeBybitInstruments } from '../../adapters/bybit/normalize.js';
import { InstrumentDefinitionSchema } from '../../src/domain/events.js';

const docs = (JSON.parse(readFileSync(new URL('../fixtures/bybit/docs-examples.json', import.meta.url), 'utf8')) as { examples: Record<string, unknown> }).examples;
const at8 = (y: number, m: number, d: number): number => Date.UTC(y, m - 1, d, 8) / 1000;
const RECV = 1_700_000_000;

describe('parseBybitSymbol', () => {
  it('options with and without the settle-coin suffix', () => {
    expect(parseBybitSymbol('BTC-27MAR26-70000-C')).toEqual({
      ok: true,
      instrument: { name: 'BTC-27MAR26-70000-C', pair: { base: 'BTC', quote: 'USDC' }, type: 'option', expirationTimestamp: at8(2026, 3, 27), strike: 70000, optionType: 'C', inverse: false },
    });
    const sol = parseBybitSymbol('SOL-28APR23-24-C');
    expect(sol.ok && sol.instrument).toMatchObject({ pair: { base: 'SOL', quote: 'USDC' }, strike: 24, expirationTimestamp: at8(2023, 4, 28) });
    const eth = parseBybitSymbol('ETH-3JAN23-1250-P');
    expect(eth.ok && eth.instrument).toMatchObject({ optionType: 'P', expirationTimestamp: at8(2023, 1, 3) });
    const usdc = parseBybitSymbol('ETH-26JUN26-2500.5-P-USDC');
    expect(usdc.ok && usdc.instrument).toMatchObject({ strike: 2500.5, pair: { base: 'ETH', quote: 'USDC' } });
    const usdt = parseBybitSymbol('BTC-27MAR26-70000-P-USDT');
    expect(usdt).toEqual({ ok: false, reason: 'unsupported', detail: 'BTC-27MAR26-70000-P-USDT (USDT-settled)' });
  });

  it('USDC perpetuals and futures; USDT and inverse contracts recognised as not ours', () => {
    for (const [s, type] of [['BTCPERP', 'perpetual'], ['SOLPERP', 'perpetual'], ['ETHUSDC', 'perpetual'], ['BTC-26DEC25', 'future']] as const) {
      const r = parseBybitSymbol(s);
      expect(r.ok && r.instrument.type, s).toBe(type);
      expect(r.ok && r.instrument.inverse, s).toBe(false);
    }
    const fut = parseBybitSymbol('BTC-26DEC25');
    expect(fut.ok && fut.instrument.expirationTimestamp).toBe(at8(2025, 12, 26));
    for (const s of ['BTCUSDT', 'BTCUSD', 'BTCUSDU23', 'BTCUSDT-26DEC25', 'XRPPERP', 'DOGE-26DEC25', 'BIOUSDT', 'XRP-27MAR26-2-C']) {
      const r = parseBybitSymbol(s);
      expect(!r.ok && r.reason, s).toBe('unsupported');
    }
    for (const s of ['', 'BTC-31FEB26-1000-C', 'BTC-27MAR26-x-C', 'BTC-27MAR26-1000-Q', 'BTC-27MAR26-1000', 'btcperp', 'BTC-27MAR26-1000-C-USDC-X', 7]) {
      const r = parseBybitSymbol(s);
      expect(!r.ok && r.reason, String(s)).toBe('malformed');
    }
    expect(parseBybitExpiryToken('6JAN23')).toBe(at8(2023, 1, 6));
    expect(parseBybitExpiryToken('29FEB25')).toBeNull();
    expect(pairOfBaseCoin('SOL')).toEqual({ base: 'SOL', quote: 'USDC' });
    expect(pairOfBaseCoin('XRP')).toBeNull();
  });
});

describe('normalizeBybitInstruments (docs examples)', () => {
  it('keeps the USDC-settled option with its deliveryTime; the USDT one is not ours', () => {
    const usdc = normalizeBybitInstruments(docs['GET /v5/market/instruments-info category=option (older docs version 16b7b4958 2025-03-28, USDC-settled option)'], RECV);
    expect(usdc.dropped).toEqual([]);
    expect(usdc.events).toEqual([
      { kind: 'instrument', source: 'BYBIT', instrument: 'ETH-3JAN23-1250-P', base: 'ETH', quote: 'USDC', type: 'option', expirationTimestamp: 1672732800, strike: 1250, optionType: 'P', inverse: false, timestamp: 1672560000 },
    ]);
    expect(InstrumentDefinitionSchema.safeParse(usdc.events[0]).success).toBe(true);
    expect(usdc.listing).toEqual([{ instrument: { name: 'ETH-3JAN23-1250-P', pair: { base: 'ETH', quote: 'USDC' }, type: 'option', expirationTimestamp: 1672732800, strike: 1250, optionType: 'P', inverse: false }, fundingIntervalHours: null }]);
    const usdt = normalizeBybitInstruments(docs['GET /v5/market/instruments-info category=option'], RECV);
    expect(usdt.events).toEqual([]);
    expect(usdt.dropped.map((d) => d.kind)).toEqual([BybitDropKinds.unsupportedInstrument]);
  });

  it('linear: the cursor is returned; USDT contracts skipped; a USDC perpetual (the same item as BTCPERP, settleCoin USDC) kept with its funding interval', () => {
    const page = docs['GET /v5/market/instruments-info category=linear'] as { result: { list: Record<string, unknown>[] } };
    const r = normalizeBybitInstruments(page, RECV);
    expect(r.nextPageCursor).toBe('first%3DBIOUSDT%26last%3DBIOUSDT');
    expect(r.events).toEqual([]);
    const item = page.result.list[0] as Record<string, unknown>;
    const perp = { ...item, symbol: 'BTCPERP', baseCoin: 'BTC', quoteCoin: 'USDC', settleCoin: 'USDC', status: 'Trading' };
    const r2 = normalizeBybitInstruments({ retCode: 0, retMsg: 'OK', result: { category: 'linear', list: [perp, { ...perp, contractType: 'InversePerpetual' }, { ...perp, status: 'PreLaunch' }, { ...perp, baseCoin: 'ETH' }] }, time: 1 }, RECV);
    expect(r2.events).toEqual([{ kind: 'instrument', source: 'BYBIT', instrument: 'BTCPERP', base: 'BTC', quote: 'USDC', type: 'perpetual', expirationTimestamp: null, strike: null, optionType: null, inverse: false, timestamp: 1735032510 }]);
    expect(r2.listing[0]?.fundingIntervalHours).toBe(8); // fundingInterval 480 minutes
    expect(r2.dropped.map((d) => d.kind)).toEqual(['unsupported-instrument', 'inactive-instrument', 'bad-instrument']);
    expect(normalizeBybitInstruments({ retCode: 10006, retMsg: 'Too many visits!', result: {} }, RECV).dropped).toEqual([{ kind: 'rest-error', detail: 'retCode 10006 Too many visits!' }]);
  });
});
