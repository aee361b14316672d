/**
 * Configuration of the exchanges connected (SOURCES), the live OKX/Bybit URLs and the per-exchange
 * replay files; the pairs /ready expects for them (every pair of the spec table).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { expectedPairs } from '../../src/marketSources.js';

describe('SOURCES, live URLs and replay files', () => {
  it('defaults to all three exchanges, whose expected pairs are the nine of the spec table', () => {
    const c = loadConfig({});
    expect(c.SOURCES).toEqual(['DERIBIT', 'OKX', 'BYBIT']);
    expect(expectedPairs(c.SOURCES).map((p) => `${p.source}:${p.pair.base}/${p.pair.quote}`)).toEqual([
      'DERIBIT:BTC/USD',
      'DERIBIT:ETH/USD',
      'DERIBIT:SOL/USDC',
      'DERIBIT:XRP/USDC',
      'OKX:BTC/USD',
      'OKX:ETH/USD',
      'BYBIT:BTC/USDC',
      'BYBIT:ETH/USDC',
      'BYBIT:SOL/USDC',
    ]);
    expect(c.OKX_WS_URL).toBe('wss://ws.okx.com:8443/ws/v5/public');
    expect(c.BYBIT_OPTION_WS_URL).toBe('wss://stream.bybit.com/v5/public/option');
    expect(c.BYBIT_LINEAR_WS_URL).toBe('wss://stream.bybit.com/v5/public/linear');
  });

  it('accepts wire values and XCHG aliases in any case, without duplicates; an unknown one names SOURCES', () => {
    expect(loadConfig({ SOURCES: 'xchg_b, BYBIT,OKX' }).SOURCES).toEqual(['OKX', 'BYBIT']);
    expect(() => loadConfig({ SOURCES: 'OKX,KRAKEN' })).toThrow(/SOURCES: unknown source KRAKEN/);
    expect(() => loadConfig({ SOURCES: ' , ' })).toThrow(/SOURCES/);
  });

  it('replay takes one file per exchange; any one of them is enough', () => {
    expect(loadConfig({ MARKET_SOURCE: 'replay', REPLAY_FILE_OKX: 'okx.jsonl' }).REPLAY_FILE_OKX).toBe('okx.jsonl');
    expect(loadConfig({ MARKET_SOURCE: 'replay', REPLAY_FILE_BYBIT: 'b.jsonl' }).REPLAY_FILE).toBeUndefined();
    expect(() => loadConfig({ MARKET_SOURCE: 'replay' })).toThrow(/REPLAY_FILE/);
  });
});
