/**
 * A MarketCache filled from a REAL recorded Deribit chain (data/replay/*.jsonl: recorded ticker
 * messages of the whole BTC option chain), calibrated on this thread: the same normalizer, chain
 * state and calibration as the service, without sockets or workers. For inject()-based API tests,
 * the request fuzz and the REST benchmarks.
 */
import { readFileSync } from 'node:fs';
import { MarketCache } from '../../src/cache/marketCache.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { FutureQuote, IndexPrice, OptionQuote } from '../../src/domain/events.js';
import type { Pair } from '../../src/domain/markets.js';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { ChainState } from '../../streams/chainState.js';
import { calibrateChain } from '../../src/cache/snapshotBuilder.js';

/** The real 878-option BTC chain of 2026-05-26 19:27 UTC. */
export const REAL_CHAIN_FILE = new URL('../../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url).pathname;

export interface RealChainCache {
  readonly cache: MarketCache;
  readonly clock: MarketClock;
  /** Observation time of the surface, Unix s. */
  readonly observationTimestamp: number;
  readonly pair: Pair;
  /** Listed (fitted) expiries, Unix s, ascending. */
  readonly expiries: readonly number[];
  /** Forward of each listed expiry. */
  readonly forwards: readonly number[];
  /** Options held by the chain state. */
  readonly optionCount: number;
}

/**
 * Normalize every line of `file` (Deribit JSON-RPC messages), apply them to one ChainState,
 * calibrate once and put the surface and forward curve in a fresh cache whose clock stands at the
 * observation time. `staleAfterS` defaults to 30 (the service default); the feed is marked connected.
 */
export function realChainCache(file: string = REAL_CHAIN_FILE, staleAfterS = 30): RealChainCache {
  const pair: Pair = { base: 'BTC', quote: 'USD' };
  const state = new ChainState('DERIBIT', pair);
  let lastRecv = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const msg = JSON.parse(line) as { params?: { data?: { timestamp?: number } } };
    const recv = (msg.params?.data?.timestamp ?? 0) / 1000;
    const r = normalizeDeribit(msg, recv);
    if (!r.ok) continue;
    for (const ev of r.events) {
      if ((ev.kind === 'option' || ev.kind === 'future' || ev.kind === 'index') && ev.base === pair.base && ev.quote === pair.quote) {
        state.apply(ev as OptionQuote | FutureQuote | IndexPrice);
        lastRecv = Math.max(lastRecv, ev.receivedAt);
      }
    }
  }
  const view = state.view();
  const clock = new MarketClock(view.observationTimestamp);
  const cache = new MarketCache(clock, staleAfterS, [{ source: 'DERIBIT', pair }]);
  const result = calibrateChain(view, 1);
  if (!result.surface || !result.forwardCurve) throw new Error(`realChainCache: ${file} gave no surface`);
  cache.putSurface(result.surface);
  cache.putForwardCurve(result.forwardCurve);
  cache.touch('DERIBIT', pair, lastRecv);
  cache.setFeedConnected('DERIBIT', true);
  return {
    cache,
    clock,
    observationTimestamp: view.observationTimestamp,
    pair,
    expiries: result.surface.slices.map((s) => s.expirationTimestamp),
    forwards: result.surface.slices.map((s) => s.forward),
    optionCount: state.optionCount,
  };
}
