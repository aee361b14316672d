/**
 * Reads of the history store (src/history/store.ts): the surface, forward curve and funding that were served at a
 * time (as-of), the kept range, the iVSummary point nearest a time, and the series of the history endpoints.
 *
 * As-of rule (issue 24): the latest row published at or before `asOf` (ties: the highest sequence), looked for in
 * `[asOf - lookbackS, asOf]` only (a surface older than the service's STALE_AFTER_S was not served then: the
 * service answered 503 stale). Surfaces come back as the Kafka document shape (src/kafka/schemas.ts), so the caller
 * rebuilds them with the calibrator's own constructors (src/kafka/rebuild.ts): bit-identical inputs, identical
 * answers.
 */
import type { ForwardCurveMessage, SurfaceSnapshotMessage } from '../kafka/schemas.js';
import { SCHEMA_VERSION } from '../kafka/schemas.js';
import type { IvSummary } from '../cache/snapshot.js';
import { IV_SUMMARY_CONST_MATS } from '../cache/history.js';
import { ivColumn, type HistoryStore, type Row } from './store.js';

type Ref = { readonly source: string; readonly pair: string };

/**
 * How far (s) a row's observation time may lie after its publication time and still be found by the as-of reads.
 * The as-of rule is on `published` (the service clock); `obs` (the exchange's clock, live) only bounds the scan, and
 * an exchange clock running ahead of ours would otherwise hide the surface served (obs > asOf >= published).
 */
const OBS_AHEAD_SLACK_S = 60;

function splitPair(pair: string): { base: string; quote: string } {
  const [base, quote] = pair.split('/');
  return { base: base!, quote: quote! };
}

function names(s: unknown): string[] {
  return typeof s === 'string' && s.length > 0 ? s.split(',') : [];
}

/** The forward-curve document of a stored row. */
function curveMessage(r: Row): ForwardCurveMessage {
  const { base, quote } = splitPair(r.pair as string);
  const ex = r.expiries as number[];
  const T = r.t as number[];
  const F = r.forwards as number[];
  const o = r.origins as string[];
  return {
    schemaVersion: SCHEMA_VERSION,
    source: r.source as ForwardCurveMessage['source'],
    baseCurrency: base as ForwardCurveMessage['baseCurrency'],
    quoteCurrency: quote as ForwardCurveMessage['quoteCurrency'],
    observationTimestamp: r.obs as number,
    spot: r.spot as number,
    sequence: r.sequence as number,
    points: ex.map((e, i) => ({ expirationTimestamp: e, T: T[i]!, forward: F[i]!, origin: o[i] as 'future' | 'option-underlying' })),
  };
}

/**
 * The forward curve served at `asOf` for (source, pair) (`pair` = `BASE/QUOTE`): the latest PUBLISHED at or before
 * `asOf`; null when none was, or when it was observed more than `lookbackS` before `asOf` (stale then).
 */
export async function curveAsOf(store: HistoryStore, ref: Ref, asOf: number, lookbackS: number): Promise<ForwardCurveMessage | null> {
  // obs <= published: the observation window bounds the scan (zone maps on obs)
  const rows = await store.query(
    `SELECT * FROM forward_curves WHERE source = $1 AND pair = $2 AND published <= $3 AND obs <= $5 AND obs >= $4 ORDER BY published DESC, sequence DESC LIMIT 1`,
    [ref.source, ref.pair, asOf, asOf - lookbackS, asOf + OBS_AHEAD_SLACK_S],
    { prepared: true },
  );
  return rows[0] ? curveMessage(rows[0]) : null;
}

/** The diagnostics object of a fit row, fields in their original order. */
function diagnosticsOf(f: Row): Record<string, unknown> {
  const rest = JSON.parse(f.diag_rest as string) as Record<string, unknown>;
  if (typeof f.diag_warnings === 'string') rest.warnings = JSON.parse(f.diag_warnings);
  if (typeof f.diag_method === 'string') rest.method = f.diag_method;
  const out: Record<string, unknown> = {};
  let i = 0;
  for (const k of names(f.diag_names)) out[k] = k in rest ? rest[k] : f[`d${i++}`];
  return out;
}

/**
 * The surface document of a stored surface row, given its fit rows by id and its curve row; null when the curve or
 * one of its fits is missing (not written, or compacted away).
 */
function surfaceMessage(r: Row, fitsById: ReadonlyMap<number, Row>, c: Row | undefined): SurfaceSnapshotMessage | null {
  const fitRows = (r.fit_ids as number[]).map((id) => fitsById.get(id));
  if (!c || fitRows.some((f) => f === undefined)) return null;
  const { base, quote } = splitPair(r.pair as string);
  const ex = r.expiries as number[];
  const T = r.t as number[];
  const F = r.forwards as number[];
  let inputCount = 0;
  const expiries = ex.map((e, i) => {
    const f = fitRows[i]!;
    const pn = names(f.param_names);
    const pv = pn.map((_, j) => f[`p${j}`] as number);
    inputCount += f.input_count as number;
    return {
      expirationTimestamp: e,
      T: T[i]!,
      forward: F[i]!,
      parameters: Object.fromEntries(pn.map((k, j) => [k, pv[j]!])),
      diagnostics: diagnosticsOf(f) as SurfaceSnapshotMessage['expiries'][number]['diagnostics'],
      inputCount: f.input_count as number,
    };
  });
  let arbitrage: SurfaceSnapshotMessage['arbitrage'];
  if (typeof r.arbitrage === 'string') {
    const a = JSON.parse(r.arbitrage) as Record<string, unknown>;
    const cn = names(r.count_names);
    const cv = r.count_values as number[];
    a.counts = Object.fromEntries(cn.map((k, j) => [k, cv[j]!]));
    arbitrage = a as SurfaceSnapshotMessage['arbitrage'];
  }
  return {
    schemaVersion: SCHEMA_VERSION,
    source: r.source as SurfaceSnapshotMessage['source'],
    baseCurrency: base as SurfaceSnapshotMessage['baseCurrency'],
    quoteCurrency: quote as SurfaceSnapshotMessage['quoteCurrency'],
    volatilityModel: r.model as SurfaceSnapshotMessage['volatilityModel'],
    observationTimestamp: r.obs as number,
    spot: r.spot as number,
    sequence: r.sequence as number,
    calibrationMs: r.calibration_ms as number,
    inputCount,
    forwardCurve: curveMessage(c).points,
    expiries,
    ...(arbitrage ? { arbitrage } : {}),
    ...(typeof r.skipped === 'string' ? { skipped: JSON.parse(r.skipped) as SurfaceSnapshotMessage['skipped'] } : {}),
  };
}

/**
 * The fit rows of `ids` (duplicates allowed), by id. Both reads stay inside [min id, max id] (zone maps: ids grow
 * with time): a few ids (one surface) as a constant IN list, not prepared since its text varies (DuckDB prunes row
 * groups by each id, so a fit kept from long before costs one more row group, not every one between); many (a
 * series) as a semi-join with the list.
 */
async function fitsByIds(store: HistoryStore, ids: readonly number[]): Promise<Map<number, Row>> {
  const unique = [...new Set(ids.map((id) => Math.trunc(id)))];
  if (unique.length === 0) return new Map();
  let lo = Infinity;
  let hi = -Infinity;
  for (const id of unique) {
    if (id < lo) lo = id;
    if (id > hi) hi = id;
  }
  const rows =
    unique.length <= 64
      ? await store.query(`SELECT * FROM fits WHERE fit_id BETWEEN $1 AND $2 AND fit_id IN (${unique.join(',')})`, [lo, hi])
      : await store.query(`SELECT f.* FROM fits f SEMI JOIN (SELECT unnest($3::BIGINT[]) AS id) w ON f.fit_id = w.id WHERE f.fit_id BETWEEN $1 AND $2`, [
          lo,
          hi,
          `[${unique.join(',')}]`,
        ]);
  return new Map(rows.map((f) => [f.fit_id as number, f]));
}

/** Surface documents of stored surface rows: joins their fits and curves (rows whose curve is missing are left out). */
async function surfaceMessages(store: HistoryStore, rows: Row[]): Promise<SurfaceSnapshotMessage[]> {
  if (rows.length === 0) return [];
  // the fits and the curves are read at once, on the store's read connections
  const fitsRead = fitsByIds(store, rows.flatMap((r) => r.fit_ids as number[]));
  const curveKeys = rows.map((r) => `('${String(r.source)}','${String(r.pair)}',${Number(r.sequence)},'${String(r.obs)}'::DOUBLE)`);
  let obsLo = Infinity;
  let obsHi = -Infinity;
  for (const r of rows) {
    obsLo = Math.min(obsLo, r.obs as number);
    obsHi = Math.max(obsHi, r.obs as number);
  }
  const curvesRead = store.query(
    `SELECT c.* FROM forward_curves c JOIN (VALUES ${curveKeys.join(',')}) v(source, pair, sequence, obs) USING (source, pair, sequence, obs)
     WHERE c.obs BETWEEN $1 AND $2`,
    [obsLo, obsHi],
  );
  const [byId, curves] = await Promise.all([fitsRead, curvesRead]);
  const curveOf = new Map(curves.map((c) => [`${String(c.source)}:${String(c.pair)}:${Number(c.sequence)}:${String(c.obs)}`, c]));
  const out: SurfaceSnapshotMessage[] = [];
  for (const r of rows) {
    const doc = surfaceMessage(r, byId, curveOf.get(`${String(r.source)}:${String(r.pair)}:${Number(r.sequence)}:${String(r.obs)}`));
    if (doc) out.push(doc);
  }
  return out;
}

/** Which stored surface was served at a time: its key's sequence and observation time, when published, its fits. */
export interface SurfaceId {
  readonly sequence: number;
  /** Observation time, Unix s. */
  readonly obs: number;
  /** When the service published it, Unix s. */
  readonly published: number;
  readonly fitIds: readonly number[];
}

/** The latest-published-first order of the as-of rule, ties by sequence then observation time. */
const PUBLISHED_ORDER = 'struct_pack(published := published, sequence := sequence, obs := obs)';

/**
 * Which surface of (source, pair, model) was served at `asOf` (the as-of rule of the module docstring): one
 * aggregate over the key's rows observed in `[asOf - lookbackS, asOf]` (zone maps on obs bound the scan), returning
 * only the winner's identity and fit ids (the surface's lists are read by {@link surfaceById}: a top-1 sort would
 * carry every candidate's lists). Null when none was served.
 */
export async function surfaceIdAsOf(store: HistoryStore, ref: Ref & { readonly model: string }, asOf: number, lookbackS: number): Promise<SurfaceId | null> {
  const rows = await store.query(
    `SELECT max(${PUBLISHED_ORDER}) AS id, arg_max(fit_ids, ${PUBLISHED_ORDER}) AS fit_ids FROM surfaces
     WHERE source = $1 AND pair = $2 AND model = $3 AND published <= $4 AND obs <= $6 AND obs >= $5`,
    [ref.source, ref.pair, ref.model, asOf, asOf - lookbackS, asOf + OBS_AHEAD_SLACK_S],
    { prepared: true },
  );
  const id = rows[0]?.id as { published: number; sequence: number | bigint; obs: number } | null | undefined;
  if (!id) return null;
  return { published: id.published, sequence: Number(id.sequence), obs: id.obs, fitIds: rows[0]!.fit_ids as number[] };
}

/**
 * The document of the stored surface `id` of (source, pair, model): its row, its fits and its forward curve read at
 * once (three point lookups on the store's read connections). Null when a part is missing (compacted away since).
 */
export async function surfaceById(store: HistoryStore, ref: Ref & { readonly model: string }, id: SurfaceId): Promise<SurfaceSnapshotMessage | null> {
  const [rows, fits, curves] = await Promise.all([
    store.query(`SELECT * FROM surfaces WHERE source = $1 AND pair = $2 AND model = $3 AND obs = $4 AND sequence = $5`, [ref.source, ref.pair, ref.model, id.obs, id.sequence], {
      prepared: true,
    }),
    fitsByIds(store, id.fitIds),
    store.query(`SELECT * FROM forward_curves WHERE source = $1 AND pair = $2 AND obs = $3 AND sequence = $4`, [ref.source, ref.pair, id.obs, id.sequence], { prepared: true }),
  ]);
  if (!rows[0]) return null;
  return surfaceMessage(rows[0], fits, curves[0]);
}

/**
 * The surface document served at `asOf` for (source, pair, model): the latest PUBLISHED at or before `asOf` (a
 * surface observed before `asOf` but published after it was not served then); null when none was, or when it was
 * observed more than `lookbackS` before `asOf` (the service answered 503 stale then).
 */
export async function surfaceAsOf(store: HistoryStore, ref: Ref & { readonly model: string }, asOf: number, lookbackS: number): Promise<SurfaceSnapshotMessage | null> {
  const id = await surfaceIdAsOf(store, ref, asOf, lookbackS);
  return id ? surfaceById(store, ref, id) : null;
}

/** Observation times of the oldest and newest stored surface (Unix s), or null for an empty store. */
export async function keptRange(store: HistoryStore): Promise<{ from: number; to: number } | null> {
  const r = (await store.query('SELECT min(obs) AS lo, max(obs) AS hi FROM surfaces'))[0];
  return r && typeof r.lo === 'number' ? { from: r.lo, to: r.hi as number } : null;
}

/** The IvSummary of a wide iv_summary row (store.ts: constant maturities as columns, listed expiries as lists). */
function summaryOf(r: Row): IvSummary {
  const fig = (get: (stem: string) => unknown) => ({
    atmVol: get('atm') as number | null,
    delta25Skew: get('rr25') as number | null,
    delta10Skew: get('rr10') as number | null,
    delta25Bfly: get('bf25') as number | null,
    delta10Bfly: get('bf10') as number | null,
  });
  const listedExp = (r.listed_exp as number[]) ?? [];
  return Object.freeze({
    observationTimestamp: r.obs as number,
    listed: Object.freeze(listedExp.map((e, i) => Object.freeze({ expirationTimestamp: e, ...fig((stem) => (r[`listed_${stem}`] as Array<number | null>)[i] ?? null) }))),
    constMat: Object.freeze(
      IV_SUMMARY_CONST_MATS.filter((l) => typeof r[ivColumn('exp', l)] === 'number').map((l) =>
        Object.freeze({ expirationTimestamp: r[ivColumn('exp', l)] as number, constMat: l, ...fig((stem) => r[ivColumn(stem, l)] ?? null) }),
      ),
    ),
  });
}

/**
 * The stored iVSummary point of (source, pair, model) nearest to `targetS` within `toleranceS` (ties: the earlier),
 * or null: src/cache/history.ts's rule for the 24 h changes, among the points its in-memory history keeps (the
 * first of each `bucketS` bucket, default the store's own), so that an as-of answer measures its changes against
 * the point the live answer used.
 */
export async function summaryNearest(
  store: HistoryStore,
  ref: Ref & { readonly model: string },
  targetS: number,
  toleranceS: number,
  bucketS = 1,
): Promise<IvSummary | null> {
  const lo = Math.floor((targetS - toleranceS) / bucketS) * bucketS;
  const rows = await store.query(
    `WITH f AS (SELECT * FROM iv_summary WHERE source = $1 AND pair = $2 AND model = $3 AND obs BETWEEN $4 AND $5
                QUALIFY row_number() OVER (PARTITION BY floor(obs / $7) ORDER BY obs, sequence) = 1)
     SELECT * FROM f WHERE abs(obs - $6) <= $8 ORDER BY abs(obs - $6), obs LIMIT 1`,
    [ref.source, ref.pair, ref.model, lo, targetS + toleranceS, targetS, bucketS, toleranceS],
  );
  return rows[0] ? summaryOf(rows[0]) : null;
}

/** Every stored iVSummary point of (source, pair, model) in [fromS, toS], oldest first (restoring the 24 h history). */
export async function summariesBetween(store: HistoryStore, ref: Ref & { readonly model: string }, fromS: number, toS: number): Promise<IvSummary[]> {
  const rows = await store.query(`SELECT * FROM iv_summary WHERE source = $1 AND pair = $2 AND model = $3 AND obs BETWEEN $4 AND $5 ORDER BY obs, sequence`, [
    ref.source,
    ref.pair,
    ref.model,
    fromS,
    toS,
  ]);
  return rows.map(summaryOf);
}

/** The (source, pair, model) keys that have iVSummary points. */
export async function summaryKeys(store: HistoryStore): Promise<Array<{ source: string; pair: string; model: string }>> {
  const rows = await store.query('SELECT DISTINCT source, pair, model FROM iv_summary');
  return rows.map((r) => ({ source: r.source as string, pair: r.pair as string, model: r.model as string }));
}

/**
 * Funding points of (source, instrument) settled in [startS, endS] that the service held at `asOf` (published at or
 * before it), newest first, at most `limit`.
 */
export async function fundingBetween(
  store: HistoryStore,
  source: string,
  instrumentId: string,
  startS: number,
  endS: number,
  limit: number,
  asOf: number,
): Promise<Array<{ interest: number; timestamp: number }>> {
  const rows = await store.query(
    `SELECT interest, timestamp FROM funding WHERE source = $1 AND instrument_id = $2 AND timestamp BETWEEN $3 AND $4 AND published <= $6
     ORDER BY timestamp DESC LIMIT $5`,
    [source, instrumentId, startS, endS, limit, asOf],
  );
  return rows.map((r) => ({ interest: r.interest as number, timestamp: r.timestamp as number }));
}

/** Funding instruments of `source` with the points the service held at `asOf` (published at or before it). */
export async function fundingInstrumentsAsOf(store: HistoryStore, source: string, asOf: number): Promise<Row[]> {
  return store.query(
    `SELECT instrument_id, base, quote, any_value(interval_hours) AS interval_hours, count(*) AS points, min(timestamp) AS first_ts, max(timestamp) AS last_ts
     FROM funding WHERE source = $1 AND published <= $2 GROUP BY instrument_id, base, quote ORDER BY instrument_id`,
    [source, asOf],
  );
}

/** SQL text of a string literal. */
function lit(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/** SQL text of a finite number (exact). @throws RangeError for a non-finite one */
function num(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  return `'${String(x)}'::DOUBLE`;
}

/**
 * SQL of the constant-maturity iVSummary series of a key over [fromS, toS]: one point per `intervalS` (the first
 * stored point of each), every constant maturity or just `constMat`, one row per (point, constant maturity) ordered
 * by time and label. Literal SQL (no parameters) so that the same text serves a query and a COPY ... TO Parquet.
 */
export function ivSummarySeriesSql(ref: Ref & { readonly model: string }, fromS: number, toS: number, intervalS: number, constMat: string | null): string {
  return ivSummarySeriesSqlOver(ref, [{ fromS, toS, toIncluded: true }], intervalS, constMat);
}

/** A stretch of observation times, Unix s: [fromS, toS] with `toIncluded`, else [fromS, toS). */
export interface ObsStretch {
  readonly fromS: number;
  readonly toS: number;
  readonly toIncluded: boolean;
}

/**
 * {@link ivSummarySeriesSql} over the union of `stretches` (the points of each stretch as that function gives them
 * when no interval straddles two stretches: src/history/seriesText.ts cuts at UTC day starts, which every interval
 * divides). @throws RangeError for a non-finite bound or interval
 */
export function ivSummarySeriesSqlOver(ref: Ref & { readonly model: string }, stretches: readonly ObsStretch[], intervalS: number, constMat: string | null): string {
  const key = `source = ${lit(ref.source)} AND pair = ${lit(ref.pair)} AND model = ${lit(ref.model)}`;
  const within = stretches.map((s) => `(obs >= ${num(s.fromS)} AND obs ${s.toIncluded ? '<=' : '<'} ${num(s.toS)})`).join(' OR ') || 'false';
  const labels = IV_SUMMARY_CONST_MATS.filter((l) => constMat === null || l === constMat);
  const one = (l: string, order: number) =>
    `SELECT obs AS observation_timestamp, sequence, ${lit(l)} AS const_mat, ${order} AS o, ${ivColumn('exp', l)} AS expiry, ${ivColumn('atm', l)} AS atm_vol,
       ${ivColumn('rr25', l)} AS delta25_skew, ${ivColumn('rr10', l)} AS delta10_skew, ${ivColumn('bf25', l)} AS delta25_bfly, ${ivColumn('bf10', l)} AS delta10_bfly
     FROM pts WHERE ${ivColumn('exp', l)} IS NOT NULL`;
  // only the columns the labels need (the window operator carries every column it is given: with the listed
  // expiries' lists that was most of the query's time)
  const columns = ['obs', 'sequence', ...labels.flatMap((l) => ['exp', 'atm', 'rr25', 'rr10', 'bf25', 'bf10'].map((stem) => ivColumn(stem, l)))];
  return `WITH pts AS (SELECT ${columns.join(', ')} FROM iv_summary WHERE ${key} AND (${within})
       QUALIFY row_number() OVER (PARTITION BY floor(obs / ${num(intervalS)}) ORDER BY obs, sequence) = 1)
     SELECT observation_timestamp, sequence, const_mat, expiry, atm_vol, delta25_skew, delta10_skew, delta25_bfly, delta10_bfly FROM (
       ${labels.map((l) => one(l, IV_SUMMARY_CONST_MATS.indexOf(l))).join(' UNION ALL ')}
     ) ORDER BY observation_timestamp, o`;
}

/**
 * SQL of the iVSummary series of one listed expiry (`expiry`, Unix s) of a key over [fromS, toS]: one point per
 * `intervalS` (the first stored point of each interval, as {@link ivSummarySeriesSql}), oldest first; the columns
 * of {@link ivSummarySeriesSql} (`const_mat` null). Points where the expiry was not listed are absent.
 * @throws RangeError for a non-finite bound, interval or expiry
 */
export function ivSummaryExpirySeriesSql(ref: Ref & { readonly model: string }, fromS: number, toS: number, intervalS: number, expiry: number): string {
  const key = `source = ${lit(ref.source)} AND pair = ${lit(ref.pair)} AND model = ${lit(ref.model)}`;
  const at = (stem: string) => `listed_${stem}[list_position(listed_exp, ${num(expiry)})]`;
  return `SELECT obs AS observation_timestamp, sequence, NULL::VARCHAR AS const_mat, ${num(expiry)} AS expiry, ${at('atm')} AS atm_vol,
       ${at('rr25')} AS delta25_skew, ${at('rr10')} AS delta10_skew, ${at('bf25')} AS delta25_bfly, ${at('bf10')} AS delta10_bfly
     FROM iv_summary WHERE ${key} AND obs BETWEEN ${num(fromS)} AND ${num(toS)} AND list_contains(listed_exp, ${num(expiry)})
     QUALIFY row_number() OVER (PARTITION BY floor(obs / ${num(intervalS)}) ORDER BY obs, sequence) = 1
     ORDER BY obs`;
}

/** The surface parameters series of a key over [fromS, toS]: one surface per `intervalS` (the first of each), as documents. */
export async function surfaceSeries(store: HistoryStore, ref: Ref & { readonly model: string }, fromS: number, toS: number, intervalS: number, limit: number): Promise<SurfaceSnapshotMessage[]> {
  const rows = await store.query(
    `SELECT * FROM surfaces WHERE source = $1 AND pair = $2 AND model = $3 AND obs BETWEEN $4 AND $5
     QUALIFY row_number() OVER (PARTITION BY floor(obs / $6) ORDER BY obs, sequence) = 1 ORDER BY obs LIMIT $7`,
    [ref.source, ref.pair, ref.model, fromS, toS, intervalS, limit],
  );
  return surfaceMessages(store, rows);
}
