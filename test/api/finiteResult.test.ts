/**
 * checkFiniteResult (src/api/rules.ts): a computed answer with a non-finite number is a 400 naming the first such
 * field (never a `null` in JSON); a finite one passes untouched.
 */
import { describe, expect, it } from 'vitest';
import { checkFiniteResult, DetailCollector } from '../../src/api/rules.js';

describe('checkFiniteResult', () => {
  it('passes an answer whose every number is finite (strings, booleans and nulls ignored)', () => {
    const errs = new DetailCollector();
    const ok = { instrumentId: 'r1', inverse: false, note: null, rows: [{ price: 1.5, greeks: { delta: -0.25, vega: 0 } }, { price: 2 }] };
    expect(checkFiniteResult(errs, 'request[0].', ok)).toBe(true);
    expect(errs.details).toEqual([]);
  });

  it.each([
    [{ rows: [{ price: 1 }, { price: 2, greeks: { delta: Number.NaN } }] }, 'rows[1].greeks.delta'],
    [{ a: 1, b: [1, 2, Number.POSITIVE_INFINITY] }, 'b[2]'],
    [{ price: Number.NEGATIVE_INFINITY, delta: Number.NaN }, 'price'],
    [Number.NaN, 'value'],
  ])('names the first non-finite field of %j: %s', (result, path) => {
    const errs = new DetailCollector();
    expect(checkFiniteResult(errs, 'request[3].', result)).toBe(false);
    expect(errs.details).toEqual([{ path: `request[3].${path}`, message: 'No finite value at these inputs (outside the range the models are valid in)' }]);
    expect(() => errs.throwIfAny('request')).toThrow(/invalid request: 1 problem/);
  });
});
