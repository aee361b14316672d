/**
 * Incremental refit input (issue 12 item 1): the chain state tracks which expiries changed since the last fitted
 * version, and the pipeline passes them with the full-fit flag (start, roll-off, reconnect, periodic safety net),
 * relative to the last SUCCESSFUL fit (a failed or skipped fit loses no change).
 */
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ChainState, type ChainView } from '../../streams/chainState.js';
import { startPipelines } from '../../streams/pipeline.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { FutureQuote, IndexPrice, MarketEvent, OptionQuote } from '../../src/domain/events.js';
import type { ChainFit } from '../../src/domain/chainFit.js';

const T0 = 1_780_000_000;
const E1 = T0 + 7 * 86400;
const E2 = T0 + 30 * 86400;
const E3 = T0 + 90 * 86400;
const BTC = { base: 'BTC', quote: 'USD' } as const;

function opt(expiry: number, strike: number, ts: number, markIv = 0.5): OptionQuote {
  return {
    kind: 'option', source: 'DERIBIT', instrument: `BTC-${expiry}-${strike}-C`, base: 'BTC', quote: 'USD', expirationTimestamp: expiry, strike, optionType: 'C',
    inverse: true, markIv, bidIv: null, askIv: null, markPriceNative: null, forward: 100_000, indexPrice: 99_000, greeks: null, timestamp: ts, receivedAt: ts,
  };
}
const fut = (expiry: number, ts: number, markPrice = 100_500): FutureQuote => ({
  kind: 'future', source: 'DERIBIT', instrument: `BTC-${expiry}`, base: 'BTC', quote: 'USD', perpetual: false, expirationTimestamp: expiry, inverse: true,
  markPrice, indexPrice: 99_000, currentFunding: null, funding8h: null, timestamp: ts, receivedAt: ts,
});
const idx = (price: number, ts: number): IndexPrice => ({ kind: 'index', source: 'DERIBIT', base: 'BTC', quote: 'USD', price, timestamp: ts, receivedAt: ts });

describe('ChainState changed expiries', () => {
  it('names the expiries changed since a version, and when a full fit is due', () => {
    const st = new ChainState('DERIBIT', BTC);
    for (const e of [E1, E2, E3]) st.apply(opt(e, 100_000, T0));
    const first = st.view();
    expect(first.full).toBe(true);
    expect(first.changedExpiries).toEqual([E1, E2, E3]);
    const v1 = first.version;

    st.apply(opt(E2, 100_000, T0 + 1, 0.51));
    st.apply(opt(E2, 110_000, T0 + 1));
    st.apply(fut(E3, T0 + 1));
    const second = st.view(v1);
    expect(second.full).toBe(false);
    expect(second.changedExpiries).toEqual([E2, E3]);
    expect(second.spotChanged).toBe(false);

    // an index move changes no slice input, only the spot; an out-of-order tick changes nothing
    const v2 = second.version;
    st.apply(idx(99_500, T0 + 2));
    expect(st.apply(opt(E1, 100_000, T0 - 10))).toBe(false);
    const third = st.view(v2);
    expect(third.changedExpiries).toEqual([]);
    expect(third.spotChanged).toBe(true);
    // relative to an older fitted version, the changes accumulate (a skipped or failed fit loses nothing)
    expect(st.view(v1).changedExpiries).toEqual([E2, E3]);

    // a reconnect asks for a full fit until a fit at or after it succeeds
    st.requireFull();
    const v3 = st.version;
    expect(st.view(v3).full).toBe(true);
    st.apply(opt(E1, 100_000, T0 + 3));
    const afterFull = st.view(v3);
    expect(afterFull.full).toBe(true);
    expect(afterFull.changedExpiries).toEqual([E1, E2, E3]);
    expect(st.view(afterFull.version).full).toBe(false);

    // an expiry rolled off: full fit, and it is no longer named
    st.rollOff(E1);
    const rolled = st.view(afterFull.version);
    expect(rolled.full).toBe(true);
    expect(rolled.changedExpiries).toEqual([E2, E3]);
    expect(rolled.periodic).toBeUndefined();

    // the periodic safety net: a full view marked periodic (it does not jump the worker queue), only while no
    // other reason asks for a full fit; it leaves nothing pending
    const v4 = rolled.version;
    const net = st.view(v4, undefined, true);
    expect(net.full).toBe(true);
    expect(net.periodic).toBe(true);
    expect(net.changedExpiries).toEqual([E2, E3]);
    expect(st.view(v4).full).toBe(false);
    st.requireFull();
    st.apply(opt(E2, 100_000, T0 + 4));
    const both = st.view(v4, undefined, true);
    expect(both.full).toBe(true);
    expect(both.periodic).toBeUndefined();
  });
});

describe('pipeline: changed expiries reach the fit entry point', () => {
  it('first view full, then only what changed since the last successful fit; full again after a reconnect', async () => {
    const events$ = new Subject<MarketEvent>();
    const clock = new MarketClock(T0);
    const cache = new MarketCache(clock, 1e9, [{ source: 'DERIBIT', pair: BTC }]);
    const seen: ChainView[] = [];
    let failNext = false;
    let resolveFit: (() => void) | null = null;
    const fit = (view: ChainView): Promise<ChainFit> => {
      seen.push(view);
      return new Promise<ChainFit>((resolve, reject) => {
        resolveFit = () => {
          if (failNext) {
            failNext = false;
            reject(new Error('injected failure'));
          } else resolve({ source: view.source, pair: view.pair, observationTimestamp: view.observationTimestamp, spot: null, points: [], models: [], skipped: [], calibrationMs: 0, version: view.version });
        };
      });
    };
    const silent = { info: () => {}, warn: () => {}, error: () => {} };
    const p = startPipelines(events$, { cache, clock, throttleMs: 0, logger: silent, fit, fullRefitEveryMs: 3_600_000 });
    const next = async (n: number) => {
      for (let i = 0; i < 200 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 5));
      expect(seen.length).toBe(n);
    };
    const done = async () => {
      resolveFit!();
      await new Promise((r) => setTimeout(r, 5));
    };
    try {
      for (const e of [E1, E2, E3]) events$.next(opt(e, 100_000, T0));
      await next(1);
      expect(seen[0]!.full).toBe(true);
      await done();

      events$.next(opt(E2, 100_000, T0 + 1, 0.52));
      await next(2);
      expect(seen[1]!.full).toBe(false);
      expect(seen[1]!.changedExpiries).toEqual([E2]);
      failNext = true;
      await done(); // failed: E2 stays pending

      events$.next(opt(E3, 100_000, T0 + 2, 0.52));
      await next(3);
      expect(seen[2]!.changedExpiries).toEqual([E2, E3]);
      await done();

      events$.next({ kind: 'status', source: 'DERIBIT', state: 'disconnected', reason: 'test', timestamp: T0 + 3 } as MarketEvent);
      events$.next({ kind: 'status', source: 'DERIBIT', state: 'connected', timestamp: T0 + 4 } as MarketEvent);
      events$.next(opt(E1, 100_000, T0 + 5, 0.52));
      await next(4);
      expect(seen[3]!.full).toBe(true);
      expect(seen[3]!.changedExpiries).toEqual([E1, E2, E3]);
      await done();
      expect(p.isSettled()).toBe(true);
    } finally {
      p.subscription.unsubscribe();
    }
  });
});
