/**
 * The normalizers' fast paths (adapters/shared/fastFields.ts) agree with the zod schemas they stand in for:
 * every value the fast path accepts gives the zod result, every value zod rejects the fast path rejects too
 * (then the normalizer runs zod for the error detail).
 */
import { describe, expect, it } from 'vitest';
import { decimalString, fastFields, StringMemo } from '../../adapters/shared/fastFields.js';
import { okxNum, OptSummarySchema } from '../../adapters/okx/wire.js';
import { bybitNum, OptionTickerSchema } from '../../adapters/bybit/wire.js';

const CASES: unknown[] = [
  '', '0', '-0', '1', '64280', '-0.0004270396398519', '0.3675', '.5', '5.', '1e5', '1E-7', '-1.5e+3', '1785870839964',
  ' 1', '1 ', 'abc', 'NaN', 'Infinity', '-Infinity', '0x10', '1e999', '--1', '+1', '1.2.3', 'e5', '.', '-', 1, 0, null, true, {}, [],
];

describe('decimalString', () => {
  it('accepts exactly what okxNum and bybitNum accept, with the same value', () => {
    for (const v of CASES) {
      const fast = decimalString(v);
      for (const schema of [okxNum, bybitNum]) {
        const z = schema.safeParse(v);
        if (z.success) expect(fast, JSON.stringify(v)).toBe(z.data);
        else expect(fast, JSON.stringify(v)).toBeUndefined();
      }
    }
  });
});

describe('fastFields', () => {
  const okxItem = {
    instType: 'OPTION', instId: 'BTC-USD-241013-60000-C', uly: 'BTC-USD', delta: '0.5', gamma: '1.2', vega: '0.0004', theta: '-0.001',
    deltaBS: '0.52', gammaBS: '0.0001', vegaBS: '12.5', thetaBS: '-40.1', lever: '20', markVol: '0.3675', bidVol: '', askVol: '0.38',
    realVol: '', volLv: '0.36', fwdPx: '62000.5', ts: '1728703160000', extra: 'kept by zod, not read',
  };
  const spec = {
    required: ['markVol', 'ts'],
    optional: ['delta', 'gamma', 'vega', 'theta', 'deltaBS', 'gammaBS', 'vegaBS', 'thetaBS', 'lever', 'bidVol', 'askVol', 'realVol', 'volLv', 'fwdPx'],
    strings: ['instId'],
    optionalStrings: ['instType', 'uly'],
  };

  it('gives the zod values on a valid OKX opt-summary item (absent optional -> null)', () => {
    const { lever: _omit, ...item } = okxItem as Record<string, string>;
    const fast = fastFields<Record<string, unknown>>(item, spec)!;
    const z = OptSummarySchema.parse(item) as Record<string, unknown>;
    for (const k of [...spec.required, ...spec.optional, ...spec.strings, ...spec.optionalStrings]) expect(fast[k], k).toEqual(z[k]);
    expect(fast['lever']).toBeNull();
  });

  it('rejects whatever zod rejects, field by field', () => {
    for (const k of [...spec.required, ...spec.optional]) {
      for (const bad of ['abc', 1, null, 'NaN', ' 1']) {
        const item = { ...okxItem, [k]: bad };
        expect(OptSummarySchema.safeParse(item).success).toBe(false);
        expect(fastFields(item, spec), `${k}=${JSON.stringify(bad)}`).toBeUndefined();
      }
    }
    for (const k of spec.required) {
      const { [k]: _gone, ...item } = okxItem as Record<string, string>;
      expect(OptSummarySchema.safeParse(item).success).toBe(false);
      expect(fastFields(item, spec)).toBeUndefined();
    }
    expect(fastFields({ ...okxItem, instId: 7 }, spec)).toBeUndefined();
    expect(fastFields({ ...okxItem, uly: 7 }, spec)).toBeUndefined();
  });

  it('Bybit option ticker: same values as OptionTickerSchema', () => {
    const data = { symbol: 'BTC-6JAN23-17500-C', bidPrice: '0', bidSize: '0', bidIv: '0', askPrice: '10', askSize: '5.1', askIv: '0.7', lastPrice: '',
      markPrice: '8.5', indexPrice: '16800.1', markPriceIv: '0.55', underlyingPrice: '16810', delta: '0.1', gamma: '0.0001', vega: '1.2', theta: '-3', predictedDeliveryPrice: '0' };
    const bybitSpec = {
      required: ['indexPrice', 'markPriceIv', 'underlyingPrice'],
      optional: ['bidPrice', 'bidSize', 'bidIv', 'askPrice', 'askSize', 'askIv', 'lastPrice', 'markPrice', 'delta', 'gamma', 'vega', 'theta', 'predictedDeliveryPrice'],
      strings: ['symbol'],
    };
    const fast = fastFields<Record<string, unknown>>(data, bybitSpec)!;
    const z = OptionTickerSchema.parse(data) as Record<string, unknown>;
    for (const k of Object.keys(data)) expect(fast[k], k).toEqual(z[k]);
    expect(fastFields({ ...data, indexPrice: 16800.1 }, bybitSpec)).toBeUndefined();
  });
});

describe('StringMemo', () => {
  it('computes each key once, and stays bounded', () => {
    let calls = 0;
    const m = new StringMemo((k: string) => {
      calls++;
      return k.length;
    }, 3);
    expect([m.get('a'), m.get('bb'), m.get('a'), m.get('bb')]).toEqual([1, 2, 1, 2]);
    expect(calls).toBe(2);
    m.get('ccc');
    m.get('dddd'); // full: cleared, then stored
    m.get('a');
    expect(calls).toBe(5);
  });
});
