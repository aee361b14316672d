/**
 * The text of the iVSummary series (GET /api/v1/global/data/iVSummary/history, JSON and CSV): the points of
 * src/history/reads.ts {@link ivSummarySeriesSqlOver}, rendered inside DuckDB (its JSON and number formatting are
 * shortest round-trip, like JS: tens of thousands of points never become JS objects), and assembled from one fragment
 * per UTC day. Every series interval (1m, 5m, 1h, 1d) divides a day, so no interval straddles two days and the
 * per-day fragments joined are the one-query answer, character for character (test/history/seriesText.test.ts).
 * Whole days come from the store's rendered-day cache (src/history/renderedDays.ts) while no write touched them;
 * what is missing is rendered by ONE query grouped by day.
 */
import { IV_SUMMARY_CONST_MATS } from '../cache/history.js';
import { ivSummarySeriesSqlOver, type ObsStretch } from './reads.js';
import type { HistoryStore } from './store.js';

/** Field names of a series point (JSON keys, CSV header), in order. */
export const IV_SERIES_FIELDS = ['observationTimestamp', 'sequence', 'constMat', 'expirationTimestamp', 'atmVol', 'delta25Skew', 'delta10Skew', 'delta25Bfly', 'delta10Bfly'] as const;
const IV_SERIES_COLUMNS = ['observation_timestamp', 'sequence', 'const_mat', 'expiry', 'atm_vol', 'delta25_skew', 'delta10_skew', 'delta25_bfly', 'delta10_bfly'];
const ORDER = `ORDER BY observation_timestamp, array_position([${IV_SUMMARY_CONST_MATS.map((l) => `'${l}'`).join(',')}], const_mat)`;
const DAY_S = 86400;

/** What a series answer covers: key, [fromS, toS] (Unix s, both included), interval (s, divides a day), one constant maturity or all. */
export interface IvSeriesRequest {
  readonly ref: { readonly source: string; readonly pair: string; readonly model: string };
  readonly fromS: number;
  readonly toS: number;
  readonly intervalS: number;
  readonly constMat: string | null;
  /** `json`: the points array `[{...},...]`; `csv`: one line per point, no header, each line ending in a newline. */
  readonly format: 'json' | 'csv';
}

/** One UTC day's part of [fromS, toS]; `whole` when it is the day's [start, end) entire. */
type DayStretch = ObsStretch & { readonly day: number; readonly whole: boolean };

/** [fromS, toS] cut at UTC day starts, oldest first. */
export function dayStretches(fromS: number, toS: number): DayStretch[] {
  const out: DayStretch[] = [];
  let a = fromS;
  for (;;) {
    const day = Math.floor(a / DAY_S);
    const end = (day + 1) * DAY_S;
    if (end > toS) {
      out.push({ day, fromS: a, toS, toIncluded: true, whole: false });
      return out;
    }
    out.push({ day, fromS: a, toS: end, toIncluded: false, whole: a === day * DAY_S });
    a = end;
  }
}

/** The SQL aggregate turning one day's points into its fragment (JSON list, or CSV lines joined by newlines). */
function fragmentAggregate(format: 'json' | 'csv'): string {
  if (format === 'csv') {
    const line = `concat_ws(',', ${IV_SERIES_COLUMNS.map((c) => `coalesce(CAST(${c} AS VARCHAR), '')`).join(', ')})`;
    return `string_agg(${line}, chr(10) ${ORDER})`;
  }
  const struct = `struct_pack(${IV_SERIES_FIELDS.map((f, i) => `"${f}" := ${IV_SERIES_COLUMNS[i]}`).join(', ')})`;
  return `to_json(list(${struct} ${ORDER}))::VARCHAR`;
}

/** Fragments of `stretches` by day, rendered by one query ('' for a day without points). */
async function renderDays(store: HistoryStore, q: IvSeriesRequest, stretches: readonly DayStretch[]): Promise<Map<number, string>> {
  const out = new Map<number, string>(stretches.map((s) => [s.day, '']));
  if (stretches.length === 0) return out;
  // adjacent stretches as one range (a month of missing days is one range scan, not thirty)
  const ranges: ObsStretch[] = [];
  for (const s of stretches) {
    const last = ranges.at(-1);
    if (last && !last.toIncluded && last.toS === s.fromS) ranges[ranges.length - 1] = { fromS: last.fromS, toS: s.toS, toIncluded: s.toIncluded };
    else ranges.push(s);
  }
  const sql = ivSummarySeriesSqlOver(q.ref, ranges, q.intervalS, q.constMat);
  const rows = await store.query(`SELECT floor(observation_timestamp / ${DAY_S})::BIGINT AS day, ${fragmentAggregate(q.format)} AS t FROM (${sql}) GROUP BY 1`);
  for (const r of rows) {
    const t = (r.t as string | null) ?? '';
    out.set(Number(r.day), q.format === 'json' ? t.slice(1, -1) : t);
  }
  return out;
}

/**
 * The series text of `q` (see {@link IvSeriesRequest.format}): whole UTC days from the store's rendered-day cache
 * when no write touched them since, the rest rendered by one query (and whole days then kept).
 * @throws RangeError for a non-finite bound; whatever DuckDB throws
 */
export async function ivSummarySeriesText(store: HistoryStore, q: IvSeriesRequest): Promise<string> {
  const key = `${q.ref.source}|${q.ref.pair}|${q.ref.model}`;
  const id = (day: number) => `${q.format}|${key}|${q.intervalS}|${q.constMat ?? '*'}|${day}`;
  const stretches = dayStretches(q.fromS, q.toS);
  // versions read before the query: a write committed meanwhile makes what is kept below stale, never served
  const versions = new Map(stretches.filter((s) => s.whole).map((s) => [s.day, store.ivSummaryVersions.version(key, s.day)]));
  const fragments = new Map<number, string>();
  for (const s of stretches) {
    const kept = s.whole ? store.renderedDays.get(id(s.day), versions.get(s.day)!) : undefined;
    if (kept !== undefined) fragments.set(s.day, kept);
  }
  const rendered = await renderDays(store, q, stretches.filter((s) => !fragments.has(s.day)));
  for (const [day, text] of rendered) {
    fragments.set(day, text);
    if (versions.has(day)) store.renderedDays.set(id(day), versions.get(day)!, text);
  }
  const parts = stretches.map((s) => fragments.get(s.day)!).filter((t) => t.length > 0);
  return q.format === 'json' ? `[${parts.join(',')}]` : parts.map((t) => `${t}\n`).join('');
}
