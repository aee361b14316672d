import { describe, expect, it } from 'vitest';
import { FundingStore } from '../../src/cache/fundingStore.js';
import type { FundingRate } from '../../src/domain/events.js';

const pt = (timestamp: number, interest: number, instrumentId = 'BTC-PERPETUAL'): FundingRate => ({
  kind: 'funding',
  source: 'DERIBIT',
  instrumentId,
  base: 'BTC',
  quote: 'USD',
  interest,
  intervalHours: 1,
  timestamp,
});

describe('FundingStore', () => {
  it('keeps points sorted, dedupes by timestamp, and answers ranges newest first', () => {
    const s = new FundingStore();
    expect(s.add(pt(7200, 2e-6))).toBe(true);
    expect(s.add(pt(3600, 1e-6))).toBe(true); // out of order insert
    expect(s.add(pt(10800, -3e-6))).toBe(true);
    expect(s.add(pt(7200, 2.5e-6))).toBe(false); // re-delivery replaces, not new
    expect(s.range('DERIBIT', 'BTC-PERPETUAL', 0, 1e9, 200)).toEqual([
      { interest: -3e-6, timestamp: 10800 },
      { interest: 2.5e-6, timestamp: 7200 },
      { interest: 1e-6, timestamp: 3600 },
    ]);
    // inclusive bounds
    expect(s.range('DERIBIT', 'BTC-PERPETUAL', 3600, 7200, 200).map((p) => p.timestamp)).toEqual([7200, 3600]);
    // limit keeps the latest
    expect(s.range('DERIBIT', 'BTC-PERPETUAL', 0, 1e9, 2).map((p) => p.timestamp)).toEqual([10800, 7200]);
    expect(s.range('DERIBIT', 'ETH-PERPETUAL', 0, 1e9, 200)).toEqual([]);
    expect(s.has('DERIBIT', 'ETH-PERPETUAL')).toBe(false);
  });

  it('returns the 200 latest of 500 points in range, descending', () => {
    const s = new FundingStore();
    for (let i = 0; i < 500; i++) s.add(pt(i * 3600, i * 1e-7));
    const r = s.range('DERIBIT', 'BTC-PERPETUAL', 0, 499 * 3600, 200);
    expect(r).toHaveLength(200);
    expect(r[0]!.timestamp).toBe(499 * 3600);
    expect(r[199]!.timestamp).toBe(300 * 3600);
    for (let i = 1; i < r.length; i++) expect(r[i]!.timestamp).toBeLessThan(r[i - 1]!.timestamp);
  });

  it('is bounded: the oldest points go first', () => {
    const s = new FundingStore(10);
    for (let i = 0; i < 25; i++) s.add(pt(i, 0));
    const info = s.instruments('DERIBIT')[0]!;
    expect(info.points).toBe(10);
    expect(info.firstTimestamp).toBe(15);
    expect(info.lastTimestamp).toBe(24);
    expect(s.add(pt(3, 0))).toBe(false); // older than the bound keeps
  });
});
