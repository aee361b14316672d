/**
 * Replay of OKX and Bybit recorded files (adapters/replay/exchanges.ts): message times, the forward
 * recovered from `deltaBS` for OKX's 2021 opt-summary format, and the replay feeds over the recorded
 * fixtures (test/fixtures/{okx,bybit}/replay-*.jsonl) with the exchanges' own normalizers.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bybitMessageTimeS, exchangeReplayFeed, okxForwardFromDelta, okxMessageTimeS, replayCodec, withOkxForwardRecovery } from '../../adapters/replay/exchanges.js';
import { okxNormalizer } from '../../adapters/okx/normalize.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { MarketEvent, OptionQuote } from '../../src/domain/events.js';

const fxPath = (p: string): string => new URL(`../fixtures/${p}`, import.meta.url).pathname;
const okxDocs = JSON.parse(readFileSync(fxPath('okx/docs-examples.json'), 'utf8')).examples;
const OKX_FILE = fxPath('okx/replay-okx-options-2021-12.jsonl');
const BYBIT_FILE = fxPath('bybit/replay-bybit-tickers-2023-04-05.jsonl');
const okxLines = readFileSync(OKX_FILE, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

async function replayAll(source: 'OKX' | 'BYBIT', path: string): Promise<{ events: MarketEvent[]; clock: MarketClock; summary: Awaited<ReturnType<typeof exchangeReplayFeed>['done']> }> {
  const clock = new MarketClock();
  const feed = exchangeReplayFeed(source, path, clock, 0);
  const events: MarketEvent[] = [];
  feed.events$.subscribe((e) => events.push(e));
  feed.start();
  const summary = await feed.done;
  await feed.stop();
  return { events, clock, summary };
}

describe('replay codecs of OKX and Bybit', () => {
  it('read each exchange message time (OKX data[0].ts ms string, Bybit envelope ts ms)', () => {
    expect(okxMessageTimeS(okxLines[1])).toBe(1640001659.508);
    expect(okxMessageTimeS({ event: 'subscribe', arg: { channel: 'opt-summary' } })).toBeNull();
    expect(okxMessageTimeS({ arg: {}, data: [{ ts: 'abc' }] })).toBeNull();
    expect(bybitMessageTimeS({ topic: 'tickers.BTCPERP', ts: 1680652810254, data: {} })).toBe(1680652810.254);
    expect(bybitMessageTimeS({ op: 'pong', args: ['1'] })).toBeNull();
    expect(replayCodec('DERIBIT').messageTime({ params: { data: { timestamp: 1626993723632 } } })).toBe(1626993723.632);
  });

  it('recover the forward from deltaBS within 1.5 bp of the printed fwdPx (OKX docs example)', () => {
    for (const it of okxDocs['GET /api/v5/public/opt-summary'].data as Record<string, string>[]) {
      const { fwdPx, ...without } = it;
      const F = okxForwardFromDelta(without)!;
      expect(Math.abs(F / Number(fwdPx) - 1)).toBeLessThan(1.5e-4);
    }
    // no information: a delta of exactly 0 or +-1, a missing vol, an expired option, a future
    const base = okxDocs['GET /api/v5/public/opt-summary'].data[0] as Record<string, string>;
    expect(okxForwardFromDelta({ ...base, deltaBS: '1' })).toBeNull();
    expect(okxForwardFromDelta({ ...base, markVol: '' })).toBeNull();
    expect(okxForwardFromDelta({ ...base, ts: '1746777600000' })).toBeNull();
    expect(okxForwardFromDelta({ ...base, instId: 'BTC-USD-220309' })).toBeNull();
  });

  it('turn the 2021 opt-summary items (no fwdPx) into quotes that the bare OKX normalizer drops as no-forward', () => {
    const push = okxLines.find((m) => m.arg.channel === 'opt-summary');
    const bare = okxNormalizer()(push, 1640001660);
    expect(bare).toMatchObject({ ok: false, kind: 'no-forward' });
    const r = withOkxForwardRecovery(okxNormalizer())(push, 1640001660);
    expect(r.ok).toBe(true);
    const quotes = (r as unknown as { events: MarketEvent[] }).events.filter((e): e is OptionQuote => e.kind === 'option');
    expect(quotes.map((q) => q.instrument)).toEqual(['ETH-USD-211222-4000-C', 'ETH-USD-211231-9600-C']);
    // the recovered forwards sit a few USD above the recorded index 3814.05, and the IVs are as printed
    for (const q of quotes) {
      expect(q.forward / 3814.05 - 1).toBeGreaterThan(0);
      expect(q.forward / 3814.05 - 1).toBeLessThan(0.002);
    }
    expect(quotes[0]!.markIv).toBe(0.7794507758);
    expect(quotes[0]!.bidIv).toBe(0.7421960156);
    expect(quotes[1]!.bidIv).toBeNull(); // "" = no bid
    // items that print fwdPx pass through untouched
    const withFwd = { arg: { channel: 'opt-summary', instFamily: 'BTC-USD' }, data: okxDocs['GET /api/v5/public/opt-summary'].data };
    const a = withOkxForwardRecovery(okxNormalizer())(withFwd, 1646733632);
    const b = okxNormalizer()(withFwd, 1646733632);
    expect(a).toEqual(b);
  });
});

describe('replay feeds over the recorded OKX and Bybit files', () => {
  it('OKX 2021-12: index and three ETH option quotes, the clock at the last message time, other channels counted as drops', async () => {
    const { events, clock, summary } = await replayAll('OKX', OKX_FILE);
    expect(summary.error).toBeUndefined();
    expect(summary.lines).toBe(8);
    expect(events.filter((e) => e.kind === 'index')).toEqual([expect.objectContaining({ source: 'OKX', base: 'ETH', quote: 'USD', price: 3814.05, timestamp: 1640001659.508 })]);
    const quotes = events.filter((e): e is OptionQuote => e.kind === 'option');
    expect(quotes.map((q) => q.instrument)).toEqual(['ETH-USD-211222-4000-C', 'ETH-USD-211231-9600-C', 'ETH-USD-211227-4150-P']);
    expect(quotes.every((q) => q.inverse && q.source === 'OKX' && q.forward > 0)).toBe(true);
    expect(clock.now()).toBe(1640588400.39);
    expect(summary.dropped['ignored-channel']).toBeGreaterThanOrEqual(4); // books, open-interest, mark-price and tickers of options, trades
  });

  it('Bybit 2023-04-05: SOL and ETH option quotes with index events; inverse and USDT tickers counted as unsupported', async () => {
    const { events, clock, summary } = await replayAll('BYBIT', BYBIT_FILE);
    expect(summary.lines).toBe(7);
    const quotes = events.filter((e): e is OptionQuote => e.kind === 'option');
    expect(quotes.map((q) => [q.instrument, q.base, q.quote, q.forward, q.markIv])).toEqual([
      ['SOL-28APR23-24-C', 'SOL', 'USDC', 20.93, 1.4674],
      ['ETH-30JUN23-200-P', 'ETH', 'USDC', 1886.16, 1.5991],
    ]);
    expect(quotes[1]!.askIv).toBeNull(); // askIv "0" = no quote
    expect(events.filter((e) => e.kind === 'index').map((e) => (e as { price: number }).price)).toEqual([20.93, 1871.27]);
    expect(summary.dropped['unsupported-instrument']).toBe(5);
    expect(clock.now()).toBe(1680673822.776);
  });
});
