/**
 * OKX instId grammar and the REST instrument listing (test/fixtures/okx/rest-instruments-*, real
 * 2025-05-08 listings). Expected expiries are computed independently with Date.UTC.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { familyOf, pairOfFamily, parseOkxExpiryToken, parseOkxInstId, swapOf } from '../../adapters/okx/instruments.js';
import { OkxDropKinds, normalizeOkxInstruments } from '../../adapters/okx/normalize.js';
import { InstrumentDefinitionSchema } from '../../src/domain/events.js';

const json = (name: string): unknown => JSON.parse(readFileSync(new URL(`../fixtures/okx/${name}`, import.meta.url), 'utf8')) as unknown;
const at8 = (y: number, m: number, d: number): number => Date.UTC(y, m - 1, d, 8) / 1000;
const RECV = 1_746_700_000;

describe('parseOkxInstId', () => {
  it('decodes options, futures and swaps of the supported families', () => {
    expect(parseOkxInstId('BTC-USD-250509-70000-C')).toEqual({
      ok: true,
      instrument: {
        name: 'BTC-USD-250509-70000-C',
        family: 'BTC-USD',
        pair: { base: 'BTC', quote: 'USD' },
        type: 'option',
        expirationTimestamp: at8(2025, 5, 9),
        strike: 70000,
        optionType: 'C',
        inverse: true,
      },
    });
    const fut = parseOkxInstId('ETH-USD-251226');
    expect(fut.ok && fut.instrument).toMatchObject({ type: 'future', expirationTimestamp: at8(2025, 12, 26), strike: null, optionType: null, inverse: true });
    const swap = parseOkxInstId('BTC-USD-SWAP');
    expect(swap.ok && swap.instrument).toMatchObject({ type: 'perpetual', expirationTimestamp: null, family: 'BTC-USD' });
    const put = parseOkxInstId('ETH-USD-211227-4150-P');
    expect(put.ok && put.instrument).toMatchObject({ strike: 4150, optionType: 'P', expirationTimestamp: at8(2021, 12, 27) });
  });

  it('recognises ids of other families as unsupported, not malformed', () => {
    for (const id of ['BTC-USDT-SWAP', 'BTC-USDT-220624', 'SOL-USD-SWAP', 'BTC-USD_UM_XPERP-310404', 'BTC-USDT', 'BTC-USD', 'FIL-USDT-220325']) {
      const r = parseOkxInstId(id);
      expect(r.ok, id).toBe(false);
      expect(!r.ok && r.reason, id).toBe('unsupported');
    }
  });

  it('rejects malformed ids and impossible dates or strikes', () => {
    for (const id of ['', 'BTC', 'BTC-USD-250231', 'BTC-USD-251301-1000-C', 'BTC-USD-250509-abc-C', 'BTC-USD-250509-0-C', 'BTC-USD-250509-70000-X', 'BTC-USD-250509-70000', 'btc-usd-SWAP', 42, null]) {
      const r = parseOkxInstId(id);
      expect(r.ok, String(id)).toBe(false);
      expect(!r.ok && r.reason, String(id)).toBe('malformed');
    }
  });

  it('expiry tokens are 08:00 UTC; families and swaps round-trip', () => {
    expect(parseOkxExpiryToken('250509')).toBe(1746777600);
    expect(parseOkxExpiryToken('240229')).toBe(at8(2024, 2, 29));
    expect(parseOkxExpiryToken('250229')).toBeNull();
    expect(familyOf({ base: 'ETH', quote: 'USD' })).toBe('ETH-USD');
    expect(swapOf({ base: 'BTC', quote: 'USD' })).toBe('BTC-USD-SWAP');
    expect(pairOfFamily('BTC-USD')).toEqual({ base: 'BTC', quote: 'USD' });
    expect(pairOfFamily('SOL-USD')).toBeNull();
  });
});

describe('normalizeOkxInstruments (real 2025-05-08 listings)', () => {
  it('options: every item kept, expiry = expTime (08:00 UTC), strike and type from the listing agree', () => {
    const items = json('rest-instruments-OPTION-2025-05-08.trimmed.json') as Record<string, string>[];
    const r = normalizeOkxInstruments({ code: '0', msg: '', data: items }, RECV);
    expect(r.dropped).toEqual([]);
    expect(r.events).toHaveLength(26);
    for (const [i, ev] of r.events.entries()) {
      const it = items[i] as Record<string, string>;
      expect(InstrumentDefinitionSchema.safeParse(ev).success).toBe(true);
      expect(ev.instrument).toBe(it['instId']);
      expect(ev.expirationTimestamp).toBe(Number(it['expTime']) / 1000);
      expect(ev.strike).toBe(Number(it['stk']));
      expect(ev.optionType).toBe(it['optType']);
      expect(ev.timestamp).toBe(Number(it['listTime']) / 1000);
      expect(ev.inverse).toBe(true);
    }
    expect(r.events[0]).toMatchObject({ instrument: 'BTC-USD-250509-70000-C', base: 'BTC', quote: 'USD', type: 'option', expirationTimestamp: at8(2025, 5, 9), strike: 70000 });
  });

  it('futures: the 13 BTC-USD/ETH-USD expiries kept, the 12 USDT/USDC ones unsupported', () => {
    const r = normalizeOkxInstruments(json('rest-instruments-FUTURES-2025-05-08.json'), RECV);
    expect(r.events.map((e) => e.instrument)).toEqual([
      'BTC-USD-250509', 'BTC-USD-250516', 'BTC-USD-250530', 'BTC-USD-250627', 'BTC-USD-250926', 'BTC-USD-251226', 'BTC-USD-260327',
      'ETH-USD-250509', 'ETH-USD-250516', 'ETH-USD-250530', 'ETH-USD-250627', 'ETH-USD-250926', 'ETH-USD-251226',
    ]);
    expect(r.dropped.every((d) => d.kind === OkxDropKinds.unsupportedInstrument)).toBe(true);
    expect(r.dropped).toHaveLength(12);
    expect(r.events[6]).toMatchObject({ type: 'future', expirationTimestamp: at8(2026, 3, 27), strike: null, inverse: true });
  });

  it('swaps: BTC-USD-SWAP and ETH-USD-SWAP kept as perpetuals', () => {
    const r = normalizeOkxInstruments(json('rest-instruments-SWAP-2025-05-08.trimmed.json'), RECV);
    expect(r.events.map((e) => [e.instrument, e.type, e.expirationTimestamp])).toEqual([
      ['BTC-USD-SWAP', 'perpetual', null],
      ['ETH-USD-SWAP', 'perpetual', null],
    ]);
    expect(r.dropped.map((d) => d.kind)).toEqual(Array(4).fill(OkxDropKinds.unsupportedInstrument));
    expect(r.events[0]?.timestamp).toBe(1535424203);
  });

  it('flags inconsistent items and a non-"0" code', () => {
    const items = json('rest-instruments-OPTION-2025-05-08.trimmed.json') as Record<string, string>[];
    const base = items[0] as Record<string, string>;
    const r = normalizeOkxInstruments(
      [
        { ...base, expTime: String(Number(base['expTime']) + 3 * 86_400_000) },
        { ...base, stk: '71000' },
        { ...base, optType: 'P' },
        { ...base, instType: 'FUTURES' },
        { ...base, state: 'suspend' },
        { ...base, expTime: String(Number(base['expTime']) + 3_600_000) },
        { ...base, stk: 'seventy' },
      ],
      RECV,
    );
    expect(r.dropped.map((d) => d.kind)).toEqual(['bad-instrument', 'bad-instrument', 'bad-instrument', 'bad-instrument', 'inactive-instrument', 'bad-instrument']);
    // an expTime within a day of the name's date wins over the name
    expect(r.events).toHaveLength(1);
    expect(r.events[0]?.expirationTimestamp).toBe(at8(2025, 5, 9) + 3600);
    expect(normalizeOkxInstruments({ code: '50011', msg: 'Too Many Requests' }, RECV).dropped).toEqual([{ kind: 'rest-error', detail: 'code 50011 Too Many Requests' }]);
  });
});
