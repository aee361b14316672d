/**
 * Fuzz of the three exchange normalizers (issue 8 "A fuzz of 10,000 malformed and mutated real
 * exchange frames through each normalizer: zero crashes, every drop counted").
 *
 * Corpus: the REAL recorded frames (Deribit: test/fixtures/deribit/norm-*.jsonl, the raw capture
 * and data/replay/*.jsonl; OKX: test/fixtures/okx; Bybit: test/fixtures/bybit), listings trimmed
 * to 25 items. Each normalizer first sees the whole unmutated corpus (so the stateful OKX/Bybit
 * normalizers hold indexes, listings and books, and mutations reach the deep paths), then 10,000
 * frames, each a seeded mutation of a random corpus frame: 70 % structural (deleted, retyped,
 * extreme or renamed fields), 30 % byte-level damage of the text. Frames go through the same
 * steps as a feed: JSON.parse (a failure is counted `malformed`), then the normalizer.
 *
 * Checked: the normalizer never throws; it never hides a crash (`normalizer-error`, its internal
 * catch-all, stays at zero); every non-ok result carries one of the normalizer's published drop
 * labels and is counted in a DropCounter, so counted drops + ok frames = frames; every emitted
 * event validates against MarketEventSchema; the run is deterministic (same seed, same counts).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DropKinds, normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { OkxDropKinds, okxNormalizer } from '../../adapters/okx/normalize.js';
import { BybitDropKinds, bybitNormalizer } from '../../adapters/bybit/normalize.js';
import { parseJsonlLine } from '../../adapters/replay/jsonl.js';
import { DropCounter } from '../../adapters/shared/drops.js';
import type { Normalizer } from '../../src/domain/feeds.js';
import { MarketEventSchema } from '../../src/domain/events.js';
import { FuzzRng, mutateJson, mutateText } from './mutate.js';

const FRAMES = 10_000;
const root = new URL('../../', import.meta.url).pathname;

/** Recorded messages of `files` (JSON Lines, raw captures, tardis wrappers; a docs JSON's `ws ` examples). */
function corpus(files: string[]): unknown[] {
  const out: unknown[] = [];
  const trim = (v: unknown): unknown => {
    if (Array.isArray(v)) return { jsonrpc: '2.0', id: 1, result: v.slice(0, 25) };
    if (v && typeof v === 'object' && Array.isArray((v as { result?: unknown }).result)) {
      const r = v as { result: unknown[] };
      return { ...r, result: r.result.slice(0, 25) };
    }
    return v;
  };
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    if (f.endsWith('.json')) {
      const ex = (JSON.parse(text) as { examples: Record<string, unknown> }).examples;
      for (const [name, v] of Object.entries(ex)) {
        if (!name.startsWith('ws ')) continue;
        if (Array.isArray(v)) out.push(...v.filter((x) => x && typeof x === 'object'));
        else out.push(v);
      }
      continue;
    }
    for (const line of text.split('\n')) {
      const l = parseJsonlLine(line);
      if (l.kind === 'message') out.push(trim(l.value));
    }
  }
  return out;
}

const listDir = (dir: string, re: RegExp) =>
  readdirSync(`${root}${dir}`)
    .filter((f) => re.test(f))
    .sort()
    .map((f) => `${root}${dir}/${f}`);

interface FuzzOutcome {
  readonly frames: number;
  readonly ok: number;
  readonly events: number;
  readonly invalidEvents: string[];
  readonly thrown: string[];
  readonly unknownKinds: string[];
  readonly counter: DropCounter;
  readonly itemDrops: number;
}

/**
 * Feed the corpus once, then `FRAMES` mutated frames, through `normalizer` as a feed would.
 * `kinds`: the normalizer's published drop labels.
 */
function fuzz(seed: number, frames: unknown[], normalizer: Normalizer, kinds: readonly string[], itemDrops: () => number, recvS: number): FuzzOutcome {
  const rng = new FuzzRng(seed);
  const counter = new DropCounter('fuzz');
  const allowed = new Set([...kinds, 'malformed']);
  const invalidEvents: string[] = [];
  const thrown: string[] = [];
  const unknownKinds: string[] = [];
  let ok = 0;
  let events = 0;
  const ingest = (text: string): void => {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      counter.drop('malformed', 'invalid JSON');
      return;
    }
    let r;
    try {
      r = normalizer(msg, recvS);
    } catch (e) {
      thrown.push(`${(e as Error).message}: ${text.slice(0, 200)}`);
      return;
    }
    if (!r.ok) {
      if (typeof r.kind !== 'string' || !allowed.has(r.kind)) unknownKinds.push(String(r.kind));
      counter.drop(r.kind, r.detail);
      return;
    }
    ok++;
    for (const ev of r.events) {
      events++;
      const v = MarketEventSchema.safeParse(ev);
      if (!v.success && invalidEvents.length < 50) invalidEvents.push(`${JSON.stringify(ev).slice(0, 300)}: ${v.error.message.slice(0, 300)}`);
    }
  };
  const texts = frames.map((f) => JSON.stringify(f));
  for (const t of texts) ingest(t);
  for (let i = 0; i < FRAMES; i++) {
    const j = rng.int(frames.length);
    ingest(rng.chance(0.7) ? JSON.stringify(mutateJson(frames[j], rng)) ?? 'undefined' : mutateText(texts[j]!, rng));
  }
  return { frames: texts.length + FRAMES, ok, events, invalidEvents, thrown, unknownKinds, counter, itemDrops: itemDrops() };
}

function check(name: string, out: FuzzOutcome, internalKind: string): void {
  if (process.env.FUZZ_REPORT) console.info(`${name} fuzz: ${out.frames} frames, ${out.ok} ok (${out.events} events), drops`, out.counter.snapshot(), `item drops ${out.itemDrops}`);
  expect(out.thrown, `${name}: the normalizer threw`).toEqual([]);
  expect(out.invalidEvents, `${name}: events failing MarketEventSchema`).toEqual([]);
  expect(out.unknownKinds, `${name}: drop labels outside the published set`).toEqual([]);
  // a crash caught by the normalizer's own catch-all is still a crash
  expect(out.counter.snapshot()[internalKind] ?? 0, `${name}: internal errors`).toBe(0);
  // every frame is either normalized or counted
  expect(out.ok + out.counter.total()).toBe(out.frames);
  // the fuzz really exercised both sides: many drops of several kinds, and surviving mutations
  expect(out.counter.total()).toBeGreaterThan(FRAMES / 4);
  expect(Object.keys(out.counter.snapshot()).length).toBeGreaterThanOrEqual(4);
  expect(out.ok).toBeGreaterThan(FRAMES / 50);
  expect(out.events).toBeGreaterThan(FRAMES / 50);
}

describe('normalizer fuzz: 10,000 mutated real frames each', () => {
  it('Deribit (normalizeDeribit) on the recorded tickers, index, listings, funding and replay chains', () => {
    const files = [...listDir('test/fixtures/deribit', /^norm-.*\.(jsonl|txt)$/), ...listDir('data/replay', /\.jsonl$/)];
    const frames = corpus(files);
    expect(frames.length).toBeGreaterThan(1500);
    const recv = 1_779_823_664;
    const a = fuzz(0xdeb1, frames, normalizeDeribit, Object.values(DropKinds), () => 0, recv);
    check('Deribit', a, DropKinds.internal);
    // deterministic: the same seed gives the same counts
    const b = fuzz(0xdeb1, frames, normalizeDeribit, Object.values(DropKinds), () => 0, recv);
    expect(b.counter.snapshot()).toEqual(a.counter.snapshot());
    expect(b.events).toBe(a.events);
  });

  it('OKX (okxNormalizer, stateful) on the recorded pushes and the documented examples', () => {
    const frames = corpus([...listDir('test/fixtures/okx', /\.jsonl$/), `${root}test/fixtures/okx/docs-examples.json`]);
    expect(frames.length).toBeGreaterThan(20);
    let items = 0;
    const n = okxNormalizer({ onItemDrop: () => items++ });
    const out = fuzz(0x0c5, frames, n, Object.values(OkxDropKinds), () => items, 1_700_000_000);
    check('OKX', out, OkxDropKinds.internal);
  });

  it('Bybit (bybitNormalizer, stateful) on the recorded tickers and the documented examples', () => {
    const frames = corpus([...listDir('test/fixtures/bybit', /\.jsonl$/), `${root}test/fixtures/bybit/docs-examples.json`]);
    expect(frames.length).toBeGreaterThan(10);
    const n = bybitNormalizer();
    const out = fuzz(0xb7b1, frames, n, Object.values(BybitDropKinds), () => 0, 1_680_652_811);
    check('Bybit', out, BybitDropKinds.internal);
  });
});
