/**
 * HistoryStore: the embedded time-series database of everything the service served (issue 24; docs/operations.md
 * "History"), a DuckDB file (`@duckdb/node-api`, whose npm package ships the engine: no server to run).
 *
 * Why DuckDB: a columnar engine made for analytical scans over time (the series endpoints read months of rows by
 * time range), with light-weight compression per column (ALP for doubles, dictionary for repeated strings,
 * bit-packing for integers), zone maps on every column (rows are appended in time order, so a time range prunes
 * whole row groups without an index), a write-ahead log (a committed batch survives `kill -9`; an uncommitted one
 * is rolled back on reopen, the file is never left half-written), and Parquet export built in (COPY ... TO).
 * SQLite would need a row per double or blobs we encode ourselves, and no Parquet.
 *
 * Tables (one row per published object; times are Unix seconds, DOUBLE):
 * - `surfaces`: one per published surface snapshot of (source, pair, model): sequence, observation time, the time the
 *   service published it (as-of answers select by it), spot, calibration time, its expiries' (expiry, T, forward) as
 *   lists, the ids of their fits in `fits`, the no-arbitrage status (JSON without the counts, which go into an integer
 *   list), skipped expiries (JSON), and `tier` (1 for the first snapshot of each HISTORY_BUCKET_S bucket of
 *   observation time per key: kept for the whole retention; 0: kept HISTORY_FULL_H).
 * - `fits`: one per distinct fit of one expiry; a snapshot that kept a fit unchanged refers to the same row. The
 *   parameters in columns p0..p15 under their names (one dictionary-compressed text), the numeric diagnostics in
 *   d0..d15 under theirs, the `method` text, the `warnings` (JSON) and the rest (JSON, a handful of distinct texts)
 *   each in a column of its own. Written through DuckDB's appender, in id order.
 * - `forward_curves`: one per published forward curve (the curve of a surface is the one with the same
 *   (source, pair, sequence, observation time): the calibrator stamps both with one sequence).
 * - `iv_summary`: the iVSummary figures (ATM, 25/10-delta risk reversal and butterfly) of one surface a bucket per
 *   key, one wide row each: the constant maturities 1W..9M in columns (`atm_1m`...), the listed expiries as lists.
 *   The series endpoints and the 24 h changes read them.
 * - `funding`: every funding point, unique by (source, instrument, timestamp), with the time the service first held
 *   it.
 *
 * Numbers cross into SQL as their shortest round-trip decimal text (ECMA-262 Number::toString) cast to DOUBLE by
 * DuckDB's correctly-rounded parser (or through the appender as doubles), so every double reads back bit-identical
 * (test/history/store.test.ts). Every write is one transaction on the writer's connection; reads run on three
 * connections of their own and see committed data only. DuckDB parses, plans and commits on its own threads; the
 * event loop builds the SQL text and runs the appender (about 1 microsecond a fit).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DuckDBInstance, type DuckDBAppender, type DuckDBConnection, type DuckDBPreparedStatement } from '@duckdb/node-api';
import type { IvSummary } from '../cache/snapshot.js';
import { IV_SUMMARY_CONST_MATS } from '../cache/history.js';
import { DayVersions, RenderedDays } from './renderedDays.js';

/** Parameter columns of a fit row (p0..p15): the most any model has is Vanna-Volga's 12. */
export const FIT_PARAM_COLUMNS = 16;
/** Numeric diagnostic columns of a fit row (d0..d15); further numeric fields go to the JSON of the rest. */
export const FIT_DIAG_COLUMNS = 16;
/** The figures of an iVSummary entry, as column stems: expiry, ATM, 25/10-delta risk reversal and butterfly. */
const IV_FIGURES = [
  ['exp', 'expirationTimestamp'],
  ['atm', 'atmVol'],
  ['rr25', 'delta25Skew'],
  ['rr10', 'delta10Skew'],
  ['bf25', 'delta25Bfly'],
  ['bf10', 'delta10Bfly'],
] as const;
/** Column of figure `stem` of constant maturity `label`, e.g. `atm_1m`. */
export function ivColumn(stem: string, label: string): string {
  return `${stem}_${label.toLowerCase()}`;
}

/** One surface row (see module docstring). */
export interface SurfaceRow {
  readonly source: string;
  /** `BASE/QUOTE`. */
  readonly pair: string;
  readonly model: string;
  readonly sequence: number;
  /** Observation time, Unix s. */
  readonly obs: number;
  /** When the service published it (its clock, Unix s): as-of answers select by this. */
  readonly published: number;
  readonly tier: 0 | 1;
  readonly spot: number;
  readonly calibrationMs: number;
  readonly expiries: readonly number[];
  readonly T: readonly number[];
  readonly forwards: readonly number[];
  readonly fitIds: readonly number[];
  /** JSON of the arbitrage status without `counts` (null when absent). */
  readonly arbitrage: string | null;
  /** Names and values of `arbitrage.counts`. */
  readonly countNames: string;
  readonly countValues: readonly number[];
  /** JSON of `skipped` (null when absent). */
  readonly skipped: string | null;
}

/** One fit row. */
export interface FitRow {
  readonly fitId: number;
  readonly source: string;
  readonly pair: string;
  readonly model: string;
  readonly expiry: number;
  /** Observation time of the first snapshot that served it, Unix s. */
  readonly obs: number;
  readonly inputCount: number;
  /** Parameter names, comma-separated in order. */
  readonly paramNames: string;
  /** At most {@link FIT_PARAM_COLUMNS}. */
  readonly params: readonly number[];
  /** Names of every diagnostic field, comma-separated in order (the finite numeric ones take their values from diagValues in turn). */
  readonly diagNames: string;
  /** At most {@link FIT_DIAG_COLUMNS} (the recorder puts further numbers in diagRest). */
  readonly diagValues: readonly number[];
  /** JSON of every other diagnostic field but `method` and `warnings` (few distinct texts: stored as a dictionary). */
  readonly diagRest: string;
  /** The `method` text (it quotes fitted numbers, so nearly every fit's differs: its own column, FSST-compressed). */
  readonly diagMethod: string | null;
  /** JSON of `warnings` (null when absent). */
  readonly diagWarnings: string | null;
}

/** One forward-curve row. */
export interface CurveRow {
  readonly source: string;
  readonly pair: string;
  readonly sequence: number;
  readonly obs: number;
  /** When the service published it (its clock, Unix s). */
  readonly published: number;
  readonly tier: 0 | 1;
  readonly spot: number;
  readonly expiries: readonly number[];
  readonly T: readonly number[];
  readonly forwards: readonly number[];
  readonly origins: readonly string[];
}

/** The iVSummary figures of one surface (one row: constant maturities as columns, listed expiries as lists). */
export interface IvSummaryRow {
  readonly source: string;
  readonly pair: string;
  readonly model: string;
  readonly sequence: number;
  readonly summary: IvSummary;
}

/** One funding point. */
export interface FundingRow {
  readonly source: string;
  readonly instrumentId: string;
  readonly timestamp: number;
  readonly interest: number;
  readonly base: string;
  readonly quote: string;
  readonly intervalHours: number;
  /** When the service first held it (its clock, Unix s). */
  readonly published: number;
}

/** What one write commits. */
export interface HistoryBatch {
  surfaces: SurfaceRow[];
  fits: FitRow[];
  curves: CurveRow[];
  ivSummary: IvSummaryRow[];
  funding: FundingRow[];
}

/** An empty batch. */
export function emptyBatch(): HistoryBatch {
  return { surfaces: [], fits: [], curves: [], ivSummary: [], funding: [] };
}

/** Rows in a batch. */
export function batchSize(b: HistoryBatch): number {
  return b.surfaces.length + b.fits.length + b.curves.length + b.ivSummary.length + b.funding.length;
}

const FIT_COLUMNS = [
  'fit_id BIGINT', 'source VARCHAR', 'pair VARCHAR', 'model VARCHAR', 'expiry DOUBLE', 'obs DOUBLE', 'input_count INTEGER', 'param_names VARCHAR',
  ...Array.from({ length: FIT_PARAM_COLUMNS }, (_, i) => `p${i} DOUBLE`),
  'diag_names VARCHAR',
  ...Array.from({ length: FIT_DIAG_COLUMNS }, (_, i) => `d${i} DOUBLE`),
  'diag_rest VARCHAR', 'diag_method VARCHAR', 'diag_warnings VARCHAR',
];

const IV_COLUMNS = [
  'source VARCHAR', 'pair VARCHAR', 'model VARCHAR', 'sequence BIGINT', 'obs DOUBLE',
  ...IV_SUMMARY_CONST_MATS.flatMap((l) => IV_FIGURES.map(([stem]) => `${ivColumn(stem, l)} DOUBLE`)),
  ...IV_FIGURES.map(([stem]) => `listed_${stem} DOUBLE[]`),
];

const DDL = [
  `CREATE TABLE IF NOT EXISTS surfaces (source VARCHAR, pair VARCHAR, model VARCHAR, sequence BIGINT, obs DOUBLE, published DOUBLE, tier UTINYINT,
     spot DOUBLE, calibration_ms DOUBLE, expiries DOUBLE[], t DOUBLE[], forwards DOUBLE[], fit_ids BIGINT[],
     arbitrage VARCHAR, count_names VARCHAR, count_values BIGINT[], skipped VARCHAR)`,
  `CREATE TABLE IF NOT EXISTS fits (${FIT_COLUMNS.join(', ')})`,
  `CREATE TABLE IF NOT EXISTS forward_curves (source VARCHAR, pair VARCHAR, sequence BIGINT, obs DOUBLE, published DOUBLE, tier UTINYINT, spot DOUBLE,
     expiries DOUBLE[], t DOUBLE[], forwards DOUBLE[], origins VARCHAR[])`,
  `CREATE TABLE IF NOT EXISTS iv_summary (${IV_COLUMNS.join(', ')})`,
  `CREATE TABLE IF NOT EXISTS funding (source VARCHAR, instrument_id VARCHAR, timestamp DOUBLE, interest DOUBLE, base VARCHAR,
     quote VARCHAR, interval_hours DOUBLE, published DOUBLE, PRIMARY KEY (source, instrument_id, timestamp))`,
];

/** SQL text of a string literal. */
function str(s: string | null): string {
  return s === null ? 'NULL' : `'${s.replaceAll("'", "''")}'`;
}

/** SQL text of a double (exact: shortest round-trip digits parsed by DuckDB); NULL for null and non-finite. */
function dbl(x: number | null): string {
  return x === null || !Number.isFinite(x) ? 'NULL' : `'${String(x)}'::DOUBLE`;
}

/** SQL text of a list of doubles (non-finite values are not expected: callers filter them). */
function dblList(xs: readonly number[]): string {
  return `'[${xs.map((x) => String(x)).join(',')}]'::DOUBLE[]`;
}

/** SQL text of a list of doubles that may hold nulls (non-finite values become NULL). */
function nullableList(xs: ReadonlyArray<number | null>): string {
  return `'[${xs.map((x) => (x === null || !Number.isFinite(x) ? 'NULL' : String(x))).join(',')}]'::DOUBLE[]`;
}

/** Append one fit row (columns of FIT_COLUMNS, in order). @throws RangeError past the parameter or diagnostic columns */
function appendFit(ap: DuckDBAppender, f: FitRow): void {
  if (f.params.length > FIT_PARAM_COLUMNS || f.diagValues.length > FIT_DIAG_COLUMNS) {
    throw new RangeError(`fit of ${f.model} has ${f.params.length} parameters / ${f.diagValues.length} numeric diagnostics: more than the store's columns`);
  }
  ap.appendBigInt(BigInt(f.fitId));
  ap.appendVarchar(f.source);
  ap.appendVarchar(f.pair);
  ap.appendVarchar(f.model);
  ap.appendDouble(f.expiry);
  ap.appendDouble(f.obs);
  ap.appendInteger(f.inputCount);
  ap.appendVarchar(f.paramNames);
  for (let i = 0; i < FIT_PARAM_COLUMNS; i++) {
    if (i < f.params.length) ap.appendDouble(f.params[i]!);
    else ap.appendNull();
  }
  ap.appendVarchar(f.diagNames);
  for (let i = 0; i < FIT_DIAG_COLUMNS; i++) {
    if (i < f.diagValues.length) ap.appendDouble(f.diagValues[i]!);
    else ap.appendNull();
  }
  ap.appendVarchar(f.diagRest);
  if (f.diagMethod === null) ap.appendNull();
  else ap.appendVarchar(f.diagMethod);
  if (f.diagWarnings === null) ap.appendNull();
  else ap.appendVarchar(f.diagWarnings);
  ap.endRow();
}

function intList(xs: readonly number[]): string {
  return `'[${xs.map((x) => String(Math.trunc(x))).join(',')}]'::BIGINT[]`;
}

function strList(xs: readonly string[]): string {
  return `[${xs.map(str).join(',')}]::VARCHAR[]`;
}

/** A row read back: column name -> JS value (lists as arrays, BIGINT as number). */
export type Row = Record<string, unknown>;

function toJs(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(toJs);
  return v;
}

/** Read connections of a store: as-of lookups run three reads at once (src/history/reads.ts surfaceById). */
const READ_CONNECTIONS = 3;
/** Prepared statements kept per read connection (the hot as-of texts; see {@link HistoryStore.query}). */
const PREPARED_PER_CONNECTION = 32;

/**
 * One read connection and its prepared statements. A DuckDB connection runs one statement at a time and a prepared
 * statement holds its bound values until run, so a reader is held by one query from bind to result
 * ({@link HistoryStore.query} takes a free one, or waits in turn).
 */
interface Reader {
  readonly conn: DuckDBConnection;
  readonly prepared: Map<string, DuckDBPreparedStatement>;
}

/**
 * The store. Open with {@link HistoryStore.open}; every method may throw what DuckDB throws (I/O errors, a file
 * locked by another process).
 */
export class HistoryStore {
  private writing: Promise<void> = Promise.resolve();
  private nextFitId = 1;
  private closed = false;
  private readonly free: Reader[];
  private readonly waiting: Array<(r: Reader) => void> = [];
  /** Versions of the iVSummary rows by (key, UTC day): bumped after every committed write ({@link write}). */
  readonly ivSummaryVersions = new DayVersions();
  /** The series text rendered by day (src/history/seriesText.ts), valid while {@link ivSummaryVersions} says so. */
  readonly renderedDays: RenderedDays;

  private constructor(
    private readonly instance: DuckDBInstance,
    /** The writer's connection: writes, transactions, compaction (serialized). */
    private readonly conn: DuckDBConnection,
    /** The readers' connections: see committed data only (DuckDB MVCC), never a write's open transaction. */
    private readonly readConns: readonly DuckDBConnection[],
    /** The database file's path (`:memory:` for a store in memory). */
    readonly path: string,
    renderedDaysBytes: number,
  ) {
    this.free = readConns.map((conn) => ({ conn, prepared: new Map() }));
    this.renderedDays = new RenderedDays(renderedDaysBytes);
  }

  /**
   * Open (creating when missing) the database at `path` (`:memory:` for tests and tools).
   * @param memoryLimit DuckDB's memory limit, e.g. `64MB` (the service's resident-memory budget)
   * @param renderedDaysBytes the most series text kept rendered by day (src/history/renderedDays.ts), default 64 MB
   * @throws Error when the file cannot be opened (held by another process, unreadable, not a DuckDB file)
   */
  static async open(path: string, opts: { memoryLimit?: string; threads?: number; renderedDaysBytes?: number } = {}): Promise<HistoryStore> {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const instance = await DuckDBInstance.create(path, {
      threads: String(opts.threads ?? 2),
      memory_limit: opts.memoryLimit ?? '96MB',
    });
    const conn = await instance.connect();
    for (const sql of DDL) await conn.run(sql);
    const readers: DuckDBConnection[] = [];
    for (let i = 0; i < READ_CONNECTIONS; i++) readers.push(await instance.connect());
    const store = new HistoryStore(instance, conn, readers, path, opts.renderedDaysBytes ?? 64 * 1024 * 1024);
    const r = await store.query('SELECT coalesce(max(fit_id), 0) AS m FROM fits');
    store.nextFitId = Number(r[0]?.m ?? 0) + 1;
    return store;
  }

  /** A fresh fit id (unique over the file's life). */
  newFitId(): number {
    return this.nextFitId++;
  }

  private acquire(): Promise<Reader> {
    const r = this.free.pop();
    return r ? Promise.resolve(r) : new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(r: Reader): void {
    const next = this.waiting.shift();
    if (next) next(r);
    else this.free.push(r);
  }

  /**
   * Run a read query with positional parameters ($1, $2...) on a free read connection (or the next one to be
   * freed); rows as plain JS objects. With `prepared`, the statement is prepared once per connection and kept (for
   * the few fixed texts of hot lookups: parsing and planning cost about as much as the lookup itself); texts built
   * per request are run unprepared.
   */
  async query(sql: string, params: Array<string | number | boolean | null> = [], opts: { prepared?: boolean } = {}): Promise<Row[]> {
    const reader = await this.acquire();
    try {
      let result;
      if (opts.prepared) {
        let ps = reader.prepared.get(sql);
        if (!ps) {
          ps = await reader.conn.prepare(sql);
          if (reader.prepared.size >= PREPARED_PER_CONNECTION) {
            const [oldest, old] = reader.prepared.entries().next().value!;
            old.destroySync();
            reader.prepared.delete(oldest);
          }
          reader.prepared.set(sql, ps);
        }
        ps.bind(params as never);
        result = await ps.runAndReadAll();
      } else result = await reader.conn.runAndReadAll(sql, params as never);
      return result.getRowObjectsJS().map((r) => {
        const o: Row = {};
        for (const [k, v] of Object.entries(r)) o[k] = toJs(v);
        return o;
      });
    } finally {
      this.release(reader);
    }
  }

  /** Run a statement (DDL, COPY, DELETE, CHECKPOINT); resolves to the rows it changed. */
  async run(sql: string, params: Array<string | number | boolean | null> = []): Promise<number> {
    const r = await this.conn.run(sql, params as never);
    return Number(r.rowsChanged);
  }

  /**
   * Run `fn` inside one transaction, after every write or transaction given before it (they are serialized on the
   * store's one connection); committed when `fn` resolves, rolled back when it throws.
   * @throws what `fn` or DuckDB throws
   */
  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.serialized(async () => {
      await this.conn.run('BEGIN TRANSACTION');
      try {
        const out = await fn();
        await this.conn.run('COMMIT');
        return out;
      } catch (err) {
        await this.conn.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  /** Run `fn` after every write or transaction given before it, outside a transaction (CHECKPOINT, COPY). */
  serialized<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.writing.then(() => {
      if (this.closed) throw new Error('history store is closed');
      return fn();
    });
    this.writing = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  /**
   * Commit `batch` in one transaction, after every write given before it (writes are serialized).
   * @throws whatever DuckDB throws; the transaction is then rolled back (nothing of the batch is kept)
   */
  async write(batch: HistoryBatch): Promise<void> {
    if (batchSize(batch) === 0) return;
    await this.transaction(() => this.writeNow(batch));
    // after the commit (renderedDays.ts: a fragment rendered before it is never served after it)
    for (const r of batch.ivSummary) this.ivSummaryVersions.touched(`${r.source}|${r.pair}|${r.model}`, r.summary.observationTimestamp);
  }

  /** Resolves when every write given so far is committed (or failed). */
  settled(): Promise<void> {
    return this.writing;
  }

  private async writeNow(b: HistoryBatch): Promise<void> {
    const statements: string[] = [];
    const chunk = <T>(rows: readonly T[], head: string, fmt: (r: T) => string): void => {
      for (let i = 0; i < rows.length; i += 500) statements.push(`${head} VALUES ${rows.slice(i, i + 500).map(fmt).join(',')}`);
    };
    chunk(b.curves, 'INSERT INTO forward_curves', (c) =>
      `(${str(c.source)},${str(c.pair)},${c.sequence},${dbl(c.obs)},${dbl(c.published)},${c.tier},${dbl(c.spot)},${dblList(c.expiries)},${dblList(c.T)},${dblList(c.forwards)},${strList(c.origins)})`,
    );
    chunk(b.surfaces, 'INSERT INTO surfaces', (s) =>
      `(${str(s.source)},${str(s.pair)},${str(s.model)},${s.sequence},${dbl(s.obs)},${dbl(s.published)},${s.tier},${dbl(s.spot)},${dbl(s.calibrationMs)},${dblList(s.expiries)},${dblList(s.T)},${dblList(s.forwards)},${intList(s.fitIds)},${str(s.arbitrage)},${str(s.countNames)},${intList(s.countValues)},${str(s.skipped)})`,
    );
    chunk(b.ivSummary, 'INSERT INTO iv_summary', (r) => {
      const m = r.summary;
      const byLabel = new Map(m.constMat.map((e) => [e.constMat, e]));
      const cm = IV_SUMMARY_CONST_MATS.flatMap((l) => IV_FIGURES.map(([, field]) => dbl((byLabel.get(l)?.[field] as number | null | undefined) ?? null)));
      const listed = IV_FIGURES.map(([, field]) => nullableList(m.listed.map((e) => e[field] as number | null)));
      return `(${str(r.source)},${str(r.pair)},${str(r.model)},${r.sequence},${dbl(m.observationTimestamp)},${cm.join(',')},${listed.join(',')})`;
    });
    chunk(b.funding, 'INSERT OR IGNORE INTO funding', (f) =>
      `(${str(f.source)},${str(f.instrumentId)},${dbl(f.timestamp)},${dbl(f.interest)},${str(f.base)},${str(f.quote)},${dbl(f.intervalHours)},${dbl(f.published)})`,
    );
    // fits, the bulk (one per served slice per surface), through the appender: no SQL text to build and parse; in id
    // order (the ids of one surface's fits are consecutive: its lookup reads one short stretch of the table)
    if (b.fits.length > 0) {
      const ap = await this.conn.createAppender('fits');
      try {
        for (const f of b.fits) appendFit(ap, f);
        ap.flushSync();
      } finally {
        ap.closeSync();
      }
    }
    for (const sql of statements) await this.conn.run(sql);
  }

  /** Wait for pending writes, checkpoint the WAL into the file and close. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.settled();
    this.closed = true;
    try {
      await this.conn.run('CHECKPOINT');
    } finally {
      for (const r of this.free) for (const ps of r.prepared.values()) ps.destroySync();
      for (const c of this.readConns) c.closeSync();
      this.conn.closeSync();
      this.instance.closeSync();
    }
  }
}
