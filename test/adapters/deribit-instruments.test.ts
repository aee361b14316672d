/**
 * Deribit instrument-name parsing (adapters/deribit/instruments.ts). References: ISO dates at
 * 08:00 UTC computed by Date.parse independently of the parser; names from the recorded samples.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  indexNameOf,
  pairOfIndexName,
  parseExpiryToken,
  parseInstrumentName,
  parseStrikeToken,
  perpetualOf,
} from '../../adapters/deribit/instruments.js';

const iso = (s: string): number => Date.parse(s) / 1000;

describe('parseInstrumentName', () => {
  it('decodes an inverse BTC option with its 08:00 UTC expiry', () => {
    const r = parseInstrumentName('BTC-26JUN26-100000-C');
    expect(r).toEqual({
      ok: true,
      instrument: {
        name: 'BTC-26JUN26-100000-C',
        pair: { base: 'BTC', quote: 'USD' },
        type: 'option',
        expirationTimestamp: iso('2026-06-26T08:00:00Z'),
        strike: 100000,
        optionType: 'C',
        inverse: true,
      },
    });
  });

  it('decodes ETH puts and single-digit days', () => {
    const r = parseInstrumentName('ETH-30JUL21-2800-P');
    expect(r.ok && r.instrument.expirationTimestamp).toBe(iso('2021-07-30T08:00:00Z'));
    expect(r.ok && r.instrument.optionType).toBe('P');
    const d = parseInstrumentName('BTC-6AUG21-40000-C');
    expect(d.ok && d.instrument.expirationTimestamp).toBe(1628236800); // listing's expiration_timestamp / 1000
  });

  it('decodes linear USDC options, with d as the decimal point', () => {
    const sol = parseInstrumentName('SOL_USDC-27JUN25-150-C');
    expect(sol.ok && sol.instrument).toMatchObject({ pair: { base: 'SOL', quote: 'USDC' }, inverse: false, strike: 150, optionType: 'C' });
    const xrp = parseInstrumentName('XRP_USDC-27JUN25-2d2-C');
    expect(xrp.ok && xrp.instrument.strike).toBe(2.2);
    expect(xrp.ok && xrp.instrument.expirationTimestamp).toBe(iso('2025-06-27T08:00:00Z'));
    expect(parseStrikeToken('1d02')).toBe(1.02);
    expect(parseStrikeToken('0d5')).toBe(0.5);
  });

  it('decodes futures and perpetuals', () => {
    const f = parseInstrumentName('BTC-26JUN26');
    expect(f.ok && f.instrument).toMatchObject({ type: 'future', expirationTimestamp: iso('2026-06-26T08:00:00Z'), strike: null, optionType: null, inverse: true });
    const p = parseInstrumentName('BTC-PERPETUAL');
    expect(p.ok && p.instrument).toMatchObject({ type: 'perpetual', expirationTimestamp: null, inverse: true, pair: { base: 'BTC', quote: 'USD' } });
    const lp = parseInstrumentName('SOL_USDC-PERPETUAL');
    expect(lp.ok && lp.instrument).toMatchObject({ type: 'perpetual', inverse: false, pair: { base: 'SOL', quote: 'USDC' } });
  });

  it('recognises every combo of the recorded tardis-node sample as a combo', () => {
    const names = readFileSync(new URL('../fixtures/deribit/norm-tardis-ticker-notifications.jsonl', import.meta.url), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { params: { data: { instrument_name: string } } }).params.data.instrument_name);
    const combos = names.filter((n) => /-(FS|STRD|CSR12)-/.test(n));
    expect(combos).toHaveLength(3);
    for (const n of combos) expect(parseInstrumentName(n)).toMatchObject({ ok: false, reason: 'combo' });
    expect(parseInstrumentName('BTC-CS-30SEP22-20000_25000')).toMatchObject({ ok: false, reason: 'combo' });
  });

  it('reports currencies outside the spec table as unsupported', () => {
    for (const n of ['MATIC_USDC-9MAR24-1d02-C', 'SOL-10JUN22-28-P', 'BTC_USDC-PERPETUAL', 'UNI_USDC-PERPETUAL', 'ETH_USDC-26JUN26-3000-C']) {
      expect(parseInstrumentName(n)).toMatchObject({ ok: false, reason: 'unsupported' });
    }
  });

  it('reports impossible names as malformed', () => {
    for (const n of ['', 'BTC', 'btc-26JUN26', 'BTC-31FEB26-100-C', 'BTC-26JUN26-0-C', 'BTC-26JUN26-100-X', 'BTC-26JUN26-1e5-C', 'BTC-26JUN26--100-C', 'BTC-PERPETUAL-X', 'BTC-26XYZ26']) {
      expect(parseInstrumentName(n)).toMatchObject({ ok: false, reason: 'malformed' });
    }
    expect(parseInstrumentName(42)).toMatchObject({ ok: false, reason: 'malformed' });
    expect(parseInstrumentName(null)).toMatchObject({ ok: false, reason: 'malformed' });
  });

  it('parses expiry tokens and rejects impossible dates', () => {
    expect(parseExpiryToken('29FEB24')).toBe(iso('2024-02-29T08:00:00Z'));
    expect(parseExpiryToken('29FEB25')).toBeNull();
    expect(parseExpiryToken('0JAN25')).toBeNull();
  });

  it('maps pairs to perpetuals and index names and back', () => {
    expect(perpetualOf({ base: 'BTC', quote: 'USD' })).toBe('BTC-PERPETUAL');
    expect(perpetualOf({ base: 'XRP', quote: 'USDC' })).toBe('XRP_USDC-PERPETUAL');
    expect(indexNameOf({ base: 'SOL', quote: 'USDC' })).toBe('sol_usdc');
    expect(pairOfIndexName('eth_usd')).toEqual({ base: 'ETH', quote: 'USD' });
    expect(pairOfIndexName('btc_usdc')).toBeNull();
  });
});
