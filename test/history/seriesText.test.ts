/**
 * The iVSummary series text assembled by UTC day (src/history/seriesText.ts) against a reference computed in the test:
 * the whole range's points rendered by ONE DuckDB query over [from, to] (the series SQL of src/history/reads.ts with
 * its inclusive bounds, aggregated at once), character for character, over random ranges that start and end inside
 * days, every interval, one and all constant maturities, JSON and CSV. Then the rendered-day cache: a repeat is served
 * from it, a write into a kept day (a backfill) and the compaction's deletion are seen at once, and the byte bound holds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryStore, type IvSummaryRow } from '../../src/history/store.js';
import { ivSummarySeriesSql } from '../../src/history/reads.js';
import { dayStretches, ivSummarySeriesText, IV_SERIES_FIELDS } from '../../src/history/seriesText.js';
import { RenderedDays } from '../../src/history/renderedDays.js';
import { compact } from '../../src/history/compaction.js';
import { IV_SUMMARY_CONST_MATS } from '../../src/cache/history.js';
import type { IvSummary } from '../../src/cache/snapshot.js';

const DAY = 86400;
const START = 1_790_035_200; // 2026-09-22 00:00 UTC
const DAYS = 4;
const ref = { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' };
let store: HistoryStore;
let seed = 7;
const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);

/** A summary at `obs` with figures drawn at random (some null: a delta without a strike). */
function summary(obs: number): IvSummary {
  const fig = () => (rnd() < 0.05 ? null : 0.3 + rnd() * 0.5);
  const constMat = IV_SUMMARY_CONST_MATS.filter(() => rnd() > 0.05).map((l, i) => ({
    constMat: l,
    expirationTimestamp: obs + (i + 1) * 7 * DAY,
    atmVol: 0.4 + rnd() * 0.3,
    delta25Skew: fig(),
    delta10Skew: fig(),
    delta25Bfly: fig(),
    delta10Bfly: fig(),
  }));
  return { observationTimestamp: obs, listed: [], constMat };
}

/** Rows of one key every ~40 s (irregular, two at the same second sometimes), over [START, START + DAYS days). */
function rows(): IvSummaryRow[] {
  const out: IvSummaryRow[] = [];
  let seq = 1;
  for (let t = START + 0.25; t < START + DAYS * DAY; t += 20 + rnd() * 40) {
    out.push({ ...ref, sequence: seq++, summary: summary(t) });
    if (rnd() < 0.02) out.push({ ...ref, sequence: seq++, summary: summary(t) });
  }
  return out;
}

/** The reference: one query over [from, to], aggregated at once (what the route did before the cut by day). */
async function reference(fromS: number, toS: number, intervalS: number, constMat: string | null, format: 'json' | 'csv'): Promise<string> {
  const sql = ivSummarySeriesSql(ref, fromS, toS, intervalS, constMat);
  const cols = ['observation_timestamp', 'sequence', 'const_mat', 'expiry', 'atm_vol', 'delta25_skew', 'delta10_skew', 'delta25_bfly', 'delta10_bfly'];
  const order = `ORDER BY observation_timestamp, array_position([${IV_SUMMARY_CONST_MATS.map((l) => `'${l}'`).join(',')}], const_mat)`;
  if (format === 'csv') {
    const line = `concat_ws(',', ${cols.map((c) => `coalesce(CAST(${c} AS VARCHAR), '')`).join(', ')})`;
    const t = (await store.query(`SELECT coalesce(string_agg(${line}, chr(10) ${order}), '') AS t FROM (${sql})`))[0]!.t as string;
    return t ? `${t}\n` : '';
  }
  const struct = `struct_pack(${IV_SERIES_FIELDS.map((f, i) => `"${f}" := ${cols[i]}`).join(', ')})`;
  return (await store.query(`SELECT coalesce(to_json(list(${struct} ${order}))::VARCHAR, '[]') AS j FROM (${sql})`))[0]!.j as string;
}

beforeAll(async () => {
  store = await HistoryStore.open(':memory:', { threads: 1 });
  const all = rows();
  for (let i = 0; i < all.length; i += 2000) await store.write({ surfaces: [], fits: [], curves: [], ivSummary: all.slice(i, i + 2000), funding: [] });
});

afterAll(async () => {
  await store?.close();
});

describe('iVSummary series text by day', () => {
  it('cuts [from, to] at UTC day starts: whole days half-open, the last stretch closed', () => {
    expect(dayStretches(START + 100, START + 2 * DAY)).toEqual([
      { day: START / DAY, fromS: START + 100, toS: START + DAY, toIncluded: false, whole: false },
      { day: START / DAY + 1, fromS: START + DAY, toS: START + 2 * DAY, toIncluded: false, whole: true },
      { day: START / DAY + 2, fromS: START + 2 * DAY, toS: START + 2 * DAY, toIncluded: true, whole: false },
    ]);
    expect(dayStretches(START + 5, START + 9)).toEqual([{ day: START / DAY, fromS: START + 5, toS: START + 9, toIncluded: true, whole: false }]);
  });

  it('equals the one-query answer character for character (random ranges, every interval, JSON and CSV)', async () => {
    let points = 0;
    let wholeDays = 0;
    const hits0 = store.renderedDays.stats().hits;
    for (let i = 0; i < 24; i++) {
      const a = START - DAY / 2 + rnd() * (DAYS + 1) * DAY;
      const b = i % 6 === 0 ? Math.ceil(a / DAY) * DAY + DAY : a + rnd() * (DAYS * DAY - (a - START)); // some end exactly at a day start
      const [fromS, toS] = [Math.round(a * 4) / 4, Math.max(Math.round(a * 4) / 4, b)];
      const intervalS = [60, 300, 3600, 86400][i % 4]!;
      const constMat = i % 3 === 0 ? null : IV_SUMMARY_CONST_MATS[i % IV_SUMMARY_CONST_MATS.length]!;
      wholeDays += dayStretches(fromS, toS).filter((d) => d.whole).length;
      for (const format of ['json', 'csv'] as const) {
        const want = await reference(fromS, toS, intervalS, constMat, format);
        // twice: rendered, then (whole days) from the cache
        for (let k = 0; k < 2; k++) expect(await ivSummarySeriesText(store, { ref, fromS, toS, intervalS, constMat, format }), `${fromS}..${toS} ${intervalS} ${constMat} ${format}`).toBe(want);
        if (format === 'json') points += (JSON.parse(want) as unknown[]).length;
      }
    }
    expect(points).toBeGreaterThan(10_000); // the ranges held real series, not empty answers
    // every whole day's second ask came from the cache (at least: some days were kept by an earlier range)
    expect(wholeDays).toBeGreaterThan(4);
    expect(store.renderedDays.stats().hits - hits0).toBeGreaterThanOrEqual(2 * wholeDays);
  });

  it('serves a repeat from the kept days; a backfilled point and a deletion are seen at once', async () => {
    const q = { ref, fromS: START + 3600, toS: START + 3 * DAY + 3600, intervalS: 60, constMat: '1M', format: 'json' as const };
    const first = await ivSummarySeriesText(store, q);
    const before = store.renderedDays.stats();
    expect(await ivSummarySeriesText(store, q)).toBe(first);
    const after = store.renderedDays.stats();
    expect(after.hits - before.hits).toBe(2); // the two whole days inside the range
    expect(after.misses).toBe(before.misses);

    // a point written late into the first whole day, at a minute of its own (before the first point of that minute)
    const day1 = START + DAY;
    const late = day1 + 7200 + 0.125;
    expect(JSON.parse(first).some((p: { observationTimestamp: number }) => p.observationTimestamp === late)).toBe(false);
    await store.write({ surfaces: [], fits: [], curves: [], ivSummary: [{ ...ref, sequence: 999_999, summary: summary(late) }], funding: [] });
    const withLate = await ivSummarySeriesText(store, q);
    expect(withLate).toBe(await reference(q.fromS, q.toS, 60, '1M', 'json'));
    expect(JSON.parse(withLate).some((p: { observationTimestamp: number }) => p.observationTimestamp === late)).toBe(true);

    // the compaction's retention deletes the older days: every kept day is stale
    const compacted = await compact(store, { nowS: day1 + 2 * DAY, fullH: 1, retentionD: 1 });
    expect(compacted.ivSummary).toBeGreaterThan(1000);
    const afterDelete = await ivSummarySeriesText(store, q);
    expect(afterDelete).toBe(await reference(q.fromS, q.toS, 60, '1M', 'json'));
    expect(JSON.parse(afterDelete).every((p: { observationTimestamp: number }) => p.observationTimestamp >= day1 + DAY)).toBe(true);
  });

  it('keeps at most its byte bound (text, key and a fixed cost per entry), least recently used out', () => {
    const entry = (id: string, text: string) => text.length + id.length + 160;
    const c = new RenderedDays(entry('a', 'xxxx') * 2 + 2);
    c.set('a', 1, 'xxxx');
    c.set('b', 1, 'yyyy');
    expect(c.get('a', 1)).toBe('xxxx'); // a is now the most recent
    c.set('c', 1, 'zzzz'); // three entries are over the bound: b goes
    expect(c.get('b', 1)).toBeUndefined();
    expect(c.get('a', 1)).toBe('xxxx');
    expect(c.get('a', 2)).toBeUndefined(); // another version: stale, dropped
    expect(c.get('a', 1)).toBeUndefined();
    c.set('big', 1, 'x'.repeat(400)); // larger than the bound: not kept
    expect(c.get('big', 1)).toBeUndefined();
    expect(c.stats()).toMatchObject({ entries: 1, bytes: entry('c', 'zzzz') });
    // empty days are not free: 200,000 of them stay within the bound
    const d = new RenderedDays(1024 * 1024);
    for (let i = 0; i < 200_000; i++) d.set(`json|DERIBIT|BTC/USD|SVI|86400|*|${i}`, 1, '');
    expect(d.stats().bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(d.stats().entries).toBeLessThan(6000);
    // a bound of 0 keeps nothing
    const none = new RenderedDays(0);
    none.set('e', 1, '');
    expect(none.stats().entries).toBe(0);
  });

  it("the compaction's retention makes only the days it reached stale", async () => {
    const s = await HistoryStore.open(':memory:', { threads: 1 });
    try {
      const all = rows().filter((r) => r.summary.observationTimestamp < START + 3 * DAY);
      await s.write({ surfaces: [], fits: [], curves: [], ivSummary: all, funding: [] });
      const q = { ref, fromS: START, toS: START + 3 * DAY, intervalS: 3600, constMat: null, format: 'csv' as const };
      const full = await ivSummarySeriesText(s, q);
      // the retention cut inside the first day: that day changes, the second and third are still served from the cache
      const r = await compact(s, { nowS: START + 30 * DAY + 3600, fullH: 1, retentionD: 30 });
      expect(r.ivSummary).toBeGreaterThan(0);
      const before = s.renderedDays.stats();
      const text = await ivSummarySeriesText(s, { ...q, fromS: START + DAY });
      const after = s.renderedDays.stats();
      expect(after.hits - before.hits).toBe(2);
      expect(after.misses - before.misses).toBe(0);
      expect(full.endsWith(text)).toBe(true);
      const again = await ivSummarySeriesText(s, q);
      expect(again).not.toBe(full); // the first day lost its first hour
      expect(s.renderedDays.stats().misses - after.misses).toBe(1);
    } finally {
      await s.close();
    }
  });
});
