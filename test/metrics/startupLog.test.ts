/**
 * Start-up log lines: one "connecting" line per feed, one "instruments loaded" line per exchange when its
 * listing burst ends (counts per pair and type), one "funding history loaded" line per exchange, and the
 * first calibrated SVI surface of each pair once; nothing twice (reconnects re-send listings).
 */
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CacheUpdate } from '../../src/cache/marketCache.js';
import type { FundingRate, InstrumentDefinition, MarketEvent } from '../../src/domain/events.js';
import { attachStartupLog, logFeedsStarting, summarizeInstruments } from '../../src/metrics/startupLog.js';
import { makeSurface } from './helpers.js';

class Capture {
  readonly lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  info(obj: Record<string, unknown>, msg: string): void {
    this.lines.push({ obj, msg });
  }
}

function def(source: 'DERIBIT' | 'OKX', base: 'BTC' | 'ETH', type: InstrumentDefinition['type'], i: number): InstrumentDefinition {
  return {
    kind: 'instrument',
    source,
    instrument: `${base}-${type}-${i}`,
    base,
    quote: 'USD',
    type,
    expirationTimestamp: type === 'perpetual' ? null : 1_800_000_000,
    strike: type === 'option' ? 1000 + i : null,
    optionType: type === 'option' ? 'C' : null,
    inverse: true,
    timestamp: 1_790_000_000,
  };
}

function funding(source: 'DERIBIT' | 'OKX', id: string, t: number): FundingRate {
  return { kind: 'funding', source, instrumentId: id, base: 'BTC', quote: 'USD', interest: 1e-5, intervalHours: 8, timestamp: t } as FundingRate;
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('start-up log', () => {
  it('summarizes a listing per pair and type', () => {
    const s = summarizeInstruments([def('DERIBIT', 'BTC', 'option', 1), def('DERIBIT', 'BTC', 'option', 2), def('DERIBIT', 'BTC', 'future', 3), def('DERIBIT', 'ETH', 'perpetual', 4)]);
    expect(s.total).toBe(4);
    expect(s.text).toBe('BTC/USD 2 options + 1 future, ETH/USD 1 perpetual');
    expect(s.byPair).toEqual({ 'BTC/USD': { option: 2, future: 1 }, 'ETH/USD': { perpetual: 1 } });
  });

  it('one line per exchange after its listing burst, funding history and first surface per pair; never twice', async () => {
    const events$ = new Subject<MarketEvent>();
    const updates$ = new Subject<CacheUpdate>();
    const log = new Capture();
    const handle = attachStartupLog(events$, log, 40, updates$);
    for (let i = 0; i < 30; i++) events$.next(def('DERIBIT', 'BTC', 'option', i));
    events$.next(def('DERIBIT', 'BTC', 'perpetual', 99));
    for (let i = 0; i < 5; i++) events$.next(def('OKX', 'ETH', 'future', i));
    events$.next(funding('DERIBIT', 'BTC-PERPETUAL', 1));
    events$.next(funding('DERIBIT', 'BTC-PERPETUAL', 2));
    events$.next(funding('DERIBIT', 'ETH-PERPETUAL', 2));
    await settle(150);
    // a reconnect re-sends the listing and funding: no new lines
    events$.next(def('DERIBIT', 'BTC', 'option', 1));
    events$.next(funding('DERIBIT', 'BTC-PERPETUAL', 3));
    await settle(150);
    const svi = makeSurface({ fits: [{}, {}, {}], calibrationMs: 84.6 });
    updates$.next({ type: 'surface', snapshot: makeSurface({ model: 'SABR' }) });
    updates$.next({ type: 'surface', snapshot: svi });
    updates$.next({ type: 'surface', snapshot: makeSurface({ sequence: 2 }) });
    updates$.next({ type: 'surface', snapshot: makeSurface({ pair: { base: 'ETH', quote: 'USD' }, fits: [{}] }) });
    handle.close();
    updates$.next({ type: 'surface', snapshot: makeSurface({ pair: { base: 'SOL', quote: 'USDC' } }) });

    const lines = log.lines.map((l) => l.msg);
    // the listing and funding lines come from separate timers: their order among themselves is not part of the contract
    expect([...lines.slice(0, 3)].sort()).toEqual(
      [
        'DERIBIT: 31 instruments loaded (BTC/USD 30 options + 1 perpetual)',
        'OKX: 5 instruments loaded (ETH/USD 5 futures)',
        'DERIBIT: funding history loaded (2 perpetuals, 3 points)',
      ].sort(),
    );
    expect(lines.slice(3)).toEqual([
      'first surface calibrated: DERIBIT BTC/USD, 3 expiries in 85 ms',
      'first surface calibrated: DERIBIT ETH/USD, 1 expiry in 12 ms',
    ]);
    expect(log.lines.find((l) => l.msg.startsWith('DERIBIT: 31 instruments'))!.obj).toMatchObject({ source: 'DERIBIT', instruments: 31 });
    expect(log.lines[3]!.obj).toEqual({ source: 'DERIBIT', pair: 'BTC/USD', expiries: 3, ms: 85 });
  });

  it('a connecting line per feed with the pairs expected of it', () => {
    const log = new Capture();
    logFeedsStarting(log, ['DERIBIT', 'OKX'], [
      { source: 'DERIBIT', pair: { base: 'BTC', quote: 'USD' } },
      { source: 'DERIBIT', pair: { base: 'SOL', quote: 'USDC' } },
    ]);
    expect(log.lines.map((l) => l.msg)).toEqual(['DERIBIT: connecting for BTC/USD, SOL/USDC', 'OKX: connecting']);
  });
});
