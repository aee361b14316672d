/**
 * streams/viewCodec.ts: the option quotes of a chain view in columns for the calibration worker's message. The round
 * trip must give back exactly what the normalizers made, on recorded messages of all three exchanges (Deribit's real
 * chain, an OKX opt-summary session and a Bybit option-ticker session through their replay feeds), nulls and absent fields included; and the structured clone
 * of the encoded view (what postMessage sends) decodes to the same quotes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { exchangeReplayFeed } from '../../adapters/replay/exchanges.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { OptionQuote } from '../../src/domain/events.js';
import { ChainState } from '../../streams/chainState.js';
import { decodeOptions, decodeView, encodeOptions, encodeView } from '../../streams/viewCodec.js';

const RECV = 1_700_000_000.25;

function deribitOptions(): OptionQuote[] {
  const out: OptionQuote[] = [];
  for (const line of readFileSync(new URL('../../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = normalizeDeribit(JSON.parse(line), RECV);
    if (r.ok) for (const e of r.events) if (e.kind === 'option') out.push(e);
  }
  return out;
}

/** The option quotes of a recorded OKX or Bybit session, through the exchange's replay feed and normalizer. */
async function replayOptions(source: 'OKX' | 'BYBIT', file: string): Promise<OptionQuote[]> {
  const feed = exchangeReplayFeed(source, new URL(`../fixtures/${file}`, import.meta.url).pathname, new MarketClock(), 0);
  const out: OptionQuote[] = [];
  feed.events$.subscribe((e) => {
    if (e.kind === 'option') out.push(e);
  });
  feed.start();
  await feed.done;
  await feed.stop();
  return out;
}

describe('view codec', () => {
  it.each([
    ['Deribit', async () => deribitOptions()],
    ['OKX', () => replayOptions('OKX', 'okx/replay-okx-options-2021-12.jsonl')],
    ['Bybit', () => replayOptions('BYBIT', 'bybit/replay-bybit-tickers-2023-04-05.jsonl')],
  ] as const)('%s: decode(encode(quotes)) is the quotes, exactly', async (_name, load) => {
    const quotes = await load();
    expect(quotes.length).toBeGreaterThan(0);
    const back = decodeOptions(encodeOptions(quotes));
    expect(back).toEqual(quotes);
    // bit for bit, and the same keys (an absent Greeks rho stays absent)
    for (let i = 0; i < quotes.length; i++) {
      expect(Object.keys(back[i]!).sort()).toEqual(Object.keys(quotes[i]!).sort());
      if (quotes[i]!.greeks) expect(Object.keys(back[i]!.greeks!).sort()).toEqual(Object.keys(quotes[i]!.greeks!).sort());
      expect(Object.is(back[i]!.markIv, quotes[i]!.markIv)).toBe(true);
    }
  });

  it('nulls, a missing rho and -0 survive; a view survives a structured clone', () => {
    const [q] = deribitOptions();
    const odd: OptionQuote[] = [
      { ...q!, bidIv: null, askIv: null, markPriceNative: null, greeks: null },
      { ...q!, greeks: { delta: -0, gamma: 0, vega: 1, theta: -2 } },
      { ...q!, greeks: { delta: 0.5, gamma: 0, vega: 1, theta: -2, rho: 0.1 }, optionType: 'P', inverse: false },
    ];
    const back = decodeOptions(encodeOptions(odd));
    expect(back).toEqual(odd);
    expect('rho' in back[1]!.greeks!).toBe(false);
    expect(Object.is(back[1]!.greeks!.delta, -0)).toBe(true);
    expect(decodeOptions(encodeOptions([]))).toEqual([]);
    expect(() => decodeOptions({ ...encodeOptions(odd), count: 4 })).toThrow(RangeError);

    const st = new ChainState('DERIBIT', { base: 'BTC', quote: 'USD' });
    for (const o of deribitOptions()) st.apply(o);
    const view = st.view();
    expect(decodeView(structuredClone(encodeView(view)))).toEqual(view);
  });
});
