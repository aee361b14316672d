/**
 * Benchmark 1, ingest: normalized option-ticker events per second through each exchange normalizer,
 * on one core (this thread), from recorded messages as text lines: JSON.parse + normalizer, beside
 * bare JSON.parse of the same lines (the physical limit: the wire format has to be parsed anyway).
 *
 * Corpora (recorded messages):
 * - Deribit: every option ticker of data/replay/*.jsonl (the real BTC chains of 2020-05-14 and
 *   2026-05-26, 2,066 tickers, one event each), with their index messages;
 * - OKX: the documented opt-summary push (test/fixtures/okx/docs-examples.json) widened to a
 *   200-option push of one family (instIds varied over 100 strikes, call and put; numbers as recorded),
 *   as OKX pushes a whole family per message, after the recorded BTC-USD index push;
 * - Bybit: the recorded option ticker snapshots (test/fixtures/bybit: tardis 2023-04-05 and the
 *   documented BTC option ticker), symbols varied over 100 strikes (one event per message).
 * Figure: option events/s = events / (time of parse + normalize). Limit: events/s if normalizing were
 * free = events per message x bare JSON.parse messages/s. Ratio = figure / limit.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { normalizeDeribit } from '../adapters/deribit/normalize.js';
import { okxNormalizer } from '../adapters/okx/normalize.js';
import { bybitNormalizer } from '../adapters/bybit/normalize.js';
import { parseJsonlLine } from '../adapters/replay/jsonl.js';
import type { Normalizer } from '../src/domain/feeds.js';
import { QUICK, type BenchRow } from './lib.js';

const root = new URL('../', import.meta.url).pathname;
const TARGET = 100_000;

function deribitLines(): string[] {
  const dir = `${root}data/replay`;
  const out: string[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.jsonl')).sort()) {
    for (const l of readFileSync(`${dir}/${f}`, 'utf8').split('\n')) if (l.trim()) out.push(l);
  }
  return out;
}

function okxLines(): { warm: string[]; lines: string[] } {
  const docs = JSON.parse(readFileSync(`${root}test/fixtures/okx/docs-examples.json`, 'utf8')).examples;
  const push = docs['ws opt-summary push'];
  const item = push.data[0];
  const index = readFileSync(`${root}test/fixtures/okx/tardis-xperp-index-and-funding-2026-08-04.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l.includes('index-tickers'))
    .map((l) => JSON.stringify(parseJsonlLine(l).kind === 'message' ? (parseJsonlLine(l) as { value: unknown }).value : null));
  const lines: string[] = [];
  for (let p = 0; p < 10; p++) {
    const data = [];
    for (let k = 0; k < 100; k++) {
      for (const cp of ['C', 'P']) {
        data.push({ ...item, instId: `BTC-USD-241013-${40_000 + 1000 * k}-${cp}`, ts: String(Number(item.ts) + p) });
      }
    }
    lines.push(JSON.stringify({ ...push, data }));
  }
  return { warm: index, lines };
}

function bybitLines(): string[] {
  const recorded = readFileSync(`${root}test/fixtures/bybit/tardis-option-tickers-2023-04-05.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
  const docs = JSON.parse(readFileSync(`${root}test/fixtures/bybit/docs-examples.json`, 'utf8')).examples;
  recorded.push(docs['ws tickers.BTC-6JAN23-17500-C (Option)']);
  const out: string[] = [];
  for (const m of recorded) {
    const [base, date, , cp] = String(m.data.symbol).split('-');
    for (let k = 0; k < 100; k++) {
      const symbol = `${base}-${date}-${(k + 1) * (base === 'BTC' ? 1000 : base === 'ETH' ? 50 : 1)}-${cp}`;
      out.push(JSON.stringify({ ...m, topic: `tickers.${symbol}`, data: { ...m.data, symbol } }));
    }
  }
  return out;
}

interface Run {
  messages: number;
  events: number;
  ms: number;
}

/** Parse (+ normalize when given) the lines in rounds until `durationMs` passed; option events counted. */
function loop(lines: readonly string[], durationMs: number, normalize: Normalizer | null, recvS: number): Run {
  let messages = 0;
  let events = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < durationMs) {
    for (const l of lines) {
      const msg = JSON.parse(l);
      if (normalize) {
        const r = normalize(msg, recvS);
        if (r.ok) for (const e of r.events) if (e.kind === 'option') events++;
      }
      messages++;
    }
    t = performance.now();
  }
  return { messages, events, ms: t - t0 };
}

/** Run the ingest benchmark; rows for the table. */
export function runIngest(): BenchRow[] {
  const durationMs = QUICK ? 1_000 : 4_000;
  const cases: Array<{ name: string; lines: string[]; warm: string[]; normalizer: () => Normalizer; recvS: number }> = [
    { name: 'Deribit normalizeDeribit', lines: deribitLines(), warm: [], normalizer: () => normalizeDeribit, recvS: 1_779_823_700 },
    { name: 'OKX okxNormalizer', ...okxLines(), normalizer: () => okxNormalizer(), recvS: 1_728_703_160 },
    { name: 'Bybit bybitNormalizer', lines: bybitLines(), warm: [], normalizer: () => bybitNormalizer(), recvS: 1_680_652_811 },
  ];
  const rows: BenchRow[] = [];
  for (const c of cases) {
    const n = c.normalizer();
    for (const w of c.warm) n(JSON.parse(w), c.recvS);
    loop(c.lines, 300, n, c.recvS); // JIT warm-up
    loop(c.lines, 300, null, c.recvS);
    const full = loop(c.lines, durationMs, n, c.recvS);
    const bare = loop(c.lines, durationMs, null, c.recvS);
    const eventsPerS = (full.events / full.ms) * 1000;
    const eventsPerMessage = full.events / full.messages;
    const limit = ((bare.messages / bare.ms) * 1000) * eventsPerMessage;
    rows.push({
      section: 'ingest',
      name: `${c.name}: option events/s`,
      value: eventsPerS,
      unit: 'events/s',
      limit,
      limitName: 'bare JSON.parse',
      ratio: eventsPerS / limit,
      target: '>= 100,000/s on one core',
      met: eventsPerS >= TARGET,
      extra: {
        messagesPerS: (full.messages / full.ms) * 1000,
        bareParseMessagesPerS: (bare.messages / bare.ms) * 1000,
        eventsPerMessage,
        corpusMessages: c.lines.length,
        messageBytesMean: c.lines.reduce((a, l) => a + l.length, 0) / c.lines.length,
      },
    });
  }
  return rows;
}
