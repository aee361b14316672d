/**
 * ReplayFeed and the JSONL reader on recorded Deribit captures (test/fixtures/deribit/norm-*).
 * Pacing is checked through an injected sleep (the waits it is asked for), never by timing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseJsonlLine } from '../../adapters/replay/jsonl.js';
import { ReplayFeed, messageTimeS, type ReplaySummary } from '../../adapters/replay/replayFeed.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { MarketEvent } from '../../src/domain/events.js';

const fx = (name: string): string => fileURLToPath(new URL(`../fixtures/deribit/${name}`, import.meta.url));
const TICKERS = fx('norm-cryptofeed-option-tickers-2021-07-22.jsonl');
const CAPTURE = fx('norm-cryptofeed-raw-capture-2021-07-22.txt');

async function replay(path: string, opts: { speed?: number; sleep?: (ms: number) => Promise<void> } = {}): Promise<{ events: MarketEvent[]; clockAtEmit: number[]; summary: ReplaySummary; feed: ReplayFeed; clock: MarketClock }> {
  const clock = new MarketClock();
  const feed = new ReplayFeed({ path, clock, ...opts });
  const events: MarketEvent[] = [];
  const clockAtEmit: number[] = [];
  feed.events$.subscribe((e) => {
    events.push(e);
    clockAtEmit.push(clock.now());
  });
  feed.start();
  const summary = await feed.done;
  return { events, clockAtEmit, summary, feed, clock };
}

const tickerTimesS = (path: string): number[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { params: { data: { timestamp: number } } }).params.data.timestamp / 1000);

describe('parseJsonlLine', () => {
  it('reads raw lines, cryptofeed-prefixed lines, and skips connection and outgoing lines', () => {
    expect(parseJsonlLine('{"a":1}')).toEqual({ kind: 'message', value: { a: 1 }, recvS: null });
    expect(parseJsonlLine('1626993723.804855: {"a":1}')).toEqual({ kind: 'message', value: { a: 1 }, recvS: 1626993723.804855 });
    expect(parseJsonlLine('wss://www.deribit.com/ws/api/v2 <-> 1626993723.424371')).toEqual({ kind: 'skip', reason: 'connection' });
    expect(parseJsonlLine('wss://www.deribit.com/ws/api/v2 <- 1626993723.7145221: {"id":0}')).toEqual({ kind: 'skip', reason: 'outgoing' });
    expect(parseJsonlLine('   ')).toEqual({ kind: 'skip', reason: 'blank' });
    expect(parseJsonlLine('{"jsonrpc":"2.0","params":{"chan')).toMatchObject({ kind: 'bad' });
    expect(parseJsonlLine('{"localTimestamp":"2021-07-22T22:42:03.804Z","message":{"a":1}}')).toEqual({ kind: 'message', value: { a: 1 }, recvS: 1626993723.804 });
  });

  it('takes the message time from data.timestamp (ms) or usOut (µs)', () => {
    expect(messageTimeS({ params: { data: { timestamp: 1626993723632 } } })).toBe(1626993723.632);
    expect(messageTimeS({ params: { data: [{ timestamp: 1622470378005 }] } })).toBe(1622470378.005);
    expect(messageTimeS({ id: 0, result: [], usOut: 1626993723847561 })).toBe(1626993723.847561);
    expect(messageTimeS({ method: 'heartbeat', params: { type: 'test_request' } })).toBeNull();
  });
});

describe('ReplayFeed', () => {
  it('replays the 89 option tickers; the clock is the messages’ time', async () => {
    const { events, clockAtEmit, summary, feed, clock } = await replay(TICKERS);
    const times = tickerTimesS(TICKERS);
    expect(events[0]).toMatchObject({ kind: 'status', state: 'connected', timestamp: times[0] });
    const quotes = events.filter((e) => e.kind === 'option');
    expect(quotes).toHaveLength(89);
    expect(quotes.map((q) => q.receivedAt)).toEqual(times);
    // the clock was advanced to the message before its events were emitted, never backwards
    let max = 0;
    for (const [i, q] of quotes.entries()) {
      max = Math.max(max, times[i] as number);
      expect(clockAtEmit[i + 1]).toBe(max);
      expect(q.timestamp).toBe(times[i]);
    }
    expect(clock.now()).toBe(Math.max(...times));
    expect(summary).toMatchObject({ lines: 89, messages: 89, events: 90, skipped: 0, dropped: {}, stopped: false, endTime: Math.max(...times) });
    // at the end of the file the state is as of the last message: still connected
    expect(events.filter((e) => e.kind === 'status')).toHaveLength(1);
    expect(feed.stats()).toMatchObject({ connected: true, messages: 89, reconnects: 0, lastMessageAt: times.at(-1) });
  });

  it('is deterministic: the same file twice gives the identical event sequence', async () => {
    const a = await replay(CAPTURE);
    const b = await replay(CAPTURE);
    expect(a.events.length).toBeGreaterThan(80);
    expect(b.events).toEqual(a.events);
    expect(b.summary).toEqual(a.summary);
  });

  it('reads a whole cryptofeed capture: skips the connection and request lines, counts book/trades as unknown channels', async () => {
    const all = readFileSync(CAPTURE, 'utf8').replace(/\n$/, '').split('\n');
    const blank = all.filter((l) => l.trim() === '').length;
    const lines = all.filter((l) => l.trim() !== '');
    const count = (re: RegExp): number => lines.filter((l) => re.test(l)).length;
    const tickerLines = count(/"channel":"ticker\./);
    const otherChannelLines = count(/"channel":"(book|trades)\./);
    const { events, summary } = await replay(CAPTURE);
    expect(blank).toBe(1);
    expect(summary.skipped).toBe(2 + blank); // `<->` connection line, the `<-` subscribe request, a blank line
    expect(events.filter((e) => e.kind === 'option')).toHaveLength(tickerLines);
    expect(summary.dropped).toEqual({ 'unknown-channel': otherChannelLines });
    expect(summary.messages).toBe(lines.length - 2);
  });

  it('paces at recorded speed / speed through the injected sleep, before each later message', async () => {
    const waits: number[] = [];
    const order: string[] = [];
    const clock = new MarketClock();
    const feed = new ReplayFeed({
      path: TICKERS,
      clock,
      speed: 10,
      sleep: async (ms) => {
        waits.push(ms);
        order.push('sleep');
      },
    });
    feed.events$.subscribe((e) => order.push(e.kind));
    feed.start();
    await feed.done;
    const times = tickerTimesS(TICKERS);
    const expected: number[] = [];
    let prev = times[0] as number;
    for (const t of times.slice(1)) {
      if (t > prev) {
        expected.push(((t - prev) * 1000) / 10);
        prev = t;
      }
    }
    expect(waits).toHaveLength(expected.length);
    waits.forEach((w, i) => expect(w).toBeCloseTo(expected[i] as number, 6));
    expect(order.filter((o) => o === 'option')).toHaveLength(89);
    expect(order[0]).toBe('status');
    expect(order[1]).toBe('option'); // no wait before the first message
    const firstSleep = order.indexOf('sleep');
    expect(order.slice(0, firstSleep).filter((o) => o === 'option').length).toBe(times.filter((t) => t <= (times[0] as number)).length);
  });

  it('counts truncated and malformed lines and carries on', async () => {
    const [first, second] = readFileSync(TICKERS, 'utf8').split('\n');
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    const path = join(dir, 'mixed.jsonl');
    writeFileSync(path, [first, (second as string).slice(0, 80), '', 'not json', '42', second, ''].join('\n'));
    const { events, summary } = await replay(path);
    expect(events.filter((e) => e.kind === 'option')).toHaveLength(2);
    expect(summary.dropped).toEqual({ malformed: 3 });
    expect(summary.skipped).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a missing file resolves done with the error instead of throwing', async () => {
    const { events, summary } = await replay('/nonexistent/replay.jsonl');
    expect(summary.error).toMatch(/ENOENT/);
    expect(events).toEqual([]);
  });

  it('stop() ends a paced replay: disconnected, completed, done resolves as stopped', async () => {
    let release: (() => void) | undefined;
    const clock = new MarketClock();
    const feed = new ReplayFeed({ path: TICKERS, clock, speed: 1, sleep: () => new Promise<void>((r) => (release = r)) });
    const events: MarketEvent[] = [];
    let completed = false;
    feed.events$.subscribe({ next: (e) => events.push(e), complete: () => (completed = true) });
    feed.start();
    while (!release) await new Promise((r) => setTimeout(r, 1));
    const stopping = feed.stop();
    release();
    await stopping;
    const summary = await feed.done;
    expect(summary.stopped).toBe(true);
    expect(summary.messages).toBeLessThan(89);
    expect(completed).toBe(true);
    expect(events.at(-1)).toMatchObject({ kind: 'status', state: 'disconnected', reason: 'stopped' });
    expect(feed.stats().connected).toBe(false);
  });

  it('rejects a negative speed', () => {
    expect(() => new ReplayFeed({ path: TICKERS, clock: new MarketClock(), speed: -1 })).toThrow(/speed/);
  });
});
