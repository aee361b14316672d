/**
 * Series of the history store (issue 24; additive to the spec, in the style of Amberdata's and Laevitas' volatility
 * history endpoints):
 * - GET /api/v1/global/data/iVSummary/history: ATM vol, 25/10-delta risk reversal (`delta25Skew`, `delta10Skew`)
 *   and butterfly (`delta25Bfly`, `delta10Bfly`) of the constant maturities 1W..9M of (source, pair, model) over
 *   `[from, to]`, one point per `interval` (1m, 5m, 1h, 1d: the first stored point of each interval);
 * - GET /api/v1/global/data/surface/history: the surface's expiries (expiry, T, forward, model parameters) over
 *   `[from, to]`, one surface per `interval`.
 * `format`: `json` (default), `csv` (one row per point, and per expiry for surfaces), or `parquet` (the same rows,
 * written by DuckDB's COPY, for notebooks). Times Unix seconds (`from` default `to` - 24 h, `to` default now); vols
 * fractions. The figures are those GET iVSummary answered at each point (computed when the point was written,
 * src/history/recorder.ts). Limits: {@link MAX_SERIES_ROWS} rows, {@link MAX_SURFACES} surfaces; a larger range
 * is a 400 that says how to narrow it. Without a store: 404 (src/api/asOf.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Markets } from '../asOf.js';
import { badRequest } from '../errors.js';
import { DetailCollector, resolvePair } from '../rules.js';
import { HistoryRangeQuery, HISTORY_INTERVALS_S } from '../schemas.js';
import { ivSummarySeriesSql, surfaceSeries } from '../../history/reads.js';
import type { HistoryStore } from '../../history/store.js';
import { IV_SERIES_FIELDS, ivSummarySeriesText } from '../../history/seriesText.js';
import { IV_SUMMARY_CONST_MATS } from '../../cache/history.js';
import { MARKET_GET, num, numOrNull, routePlugin, type RouteDocs } from '../routeDefinition.js';

/** Most rows one iVSummary/history answer holds (30 days at 1 minute of one constant maturity is 43 200). */
export const MAX_SERIES_ROWS = 100_000;
/** Most surfaces one surface/history answer holds (7 days at 1 minute, both ends included). */
export const MAX_SURFACES = 10_081;

const IvSeriesQuery = HistoryRangeQuery.extend({
  constMat: z.enum(IV_SUMMARY_CONST_MATS).optional().describe('One constant maturity; absent = all seven'),
});

function csv(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<unknown>>): string {
  const cell = (v: unknown): string => (v === null || v === undefined ? '' : typeof v === 'string' && /[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : String(v));
  return [header.join(','), ...rows.map((r) => r.map(cell).join(','))].join('\n') + '\n';
}

/** The bytes of `sql`'s result written as Parquet by DuckDB. */
async function parquet(store: HistoryStore, sql: string): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'volsurf-export-'));
  try {
    const file = join(dir, 'export.parquet');
    await store.serialized(() => store.run(`COPY (${sql}) TO '${file.replaceAll("'", "''")}' (FORMAT parquet, COMPRESSION zstd)`));
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Reply = { header(k: string, v: string): unknown };
type SeriesRange = { store: HistoryStore; ref: { source: string; pair: string; model: string }; from: number; to: number; intervalS: number };

/**
 * Validated range and key of a series query, at most `max` rows of `perInterval` each.
 * @throws ApiError 400 (bad pair, from > to, too many rows: the message says how to narrow), 404 (no store)
 */
function resolveRange(markets: Markets, q: z.infer<typeof HistoryRangeQuery>, perInterval: number, max: number, what: string, narrow: string): SeriesRange {
  const errs = new DetailCollector();
  const r = resolvePair(errs, '', q.source, q.baseCurrency, q.quoteCurrency);
  errs.throwIfAny('query');
  const now = markets.live.clock.now();
  const to = q.to ?? now;
  const from = q.from ?? to - 86400;
  if (from > to) throw badRequest('from must be <= to', [{ path: 'from', message: 'Must be <= to' }]);
  const intervalS = HISTORY_INTERVALS_S[q.interval];
  const approx = Math.floor((to - from) / intervalS + 1) * perInterval;
  if (approx > max) throw badRequest(`the range holds up to ${approx} ${what}, more than ${max}: ${narrow}`, [{ path: 'from', message: `At most ${max} ${what}` }]);
  const store = markets.storeFor(Math.min(from, now));
  const ref = { source: r!.source, pair: `${r!.pair.base}/${r!.pair.quote}`, model: q.volatilityModel };
  return { store, ref, from, to, intervalS };
}

/** Content type of a series answer with format=csv (with `; charset=utf-8` on the wire). */
const CSV_TYPE = 'text/csv';
/** Content type of a series answer with format=parquet. */
const PARQUET_TYPE = 'application/vnd.apache.parquet';

/** Content type and file name of a series answer in `format`. */
function sendAs(reply: Reply, format: string, name: string): void {
  if (format === 'csv') reply.header('content-type', `${CSV_TYPE}; charset=utf-8`);
  if (format === 'parquet') reply.header('content-type', PARQUET_TYPE);
  if (format !== 'json') reply.header('content-disposition', `attachment; filename="${name}.${format}"`);
}

/**
 * The iVSummary series answer in `format`: JSON and CSV assembled by day (src/history/seriesText.ts: whole days kept
 * rendered while unchanged), Parquet by DuckDB's COPY of the same rows.
 */
async function ivSeriesAnswer(q: z.infer<typeof IvSeriesQuery>, range: SeriesRange, reply: Reply): Promise<string | Buffer> {
  const { store, ref, from, to, intervalS } = range;
  const constMat = q.constMat ?? null;
  sendAs(reply, q.format, `ivsummary-${ref.source}-${ref.pair.replace('/', '')}-${ref.model}`);
  if (q.format === 'parquet') return parquet(store, ivSummarySeriesSql(ref, from, to, intervalS, constMat));
  const text = await ivSummarySeriesText(store, { ref, fromS: from, toS: to, intervalS, constMat, format: q.format });
  if (q.format === 'csv') return `${IV_SERIES_FIELDS.join(',')}\n${text}`;
  reply.header('content-type', 'application/json; charset=utf-8');
  const head = { source: q.source, baseCurrency: q.baseCurrency, quoteCurrency: q.quoteCurrency, volatilityModel: q.volatilityModel, interval: q.interval, from, to };
  return `${JSON.stringify(head).slice(0, -1)},"points":${text}}`;
}

/** The surface series answer in `format`: JSON documents, or one row per (surface, expiry) as CSV or Parquet. */
async function surfaceSeriesAnswer(q: z.infer<typeof HistoryRangeQuery>, range: SeriesRange, reply: Reply): Promise<object | string | Buffer> {
  const { store, ref, from, to, intervalS } = range;
  const docs = await surfaceSeries(store, ref, from, to, intervalS, MAX_SURFACES);
  sendAs(reply, q.format, `surface-${ref.source}-${ref.pair.replace('/', '')}-${ref.model}`);
  if (q.format === 'json') {
    return {
      source: q.source,
      baseCurrency: q.baseCurrency,
      quoteCurrency: q.quoteCurrency,
      volatilityModel: q.volatilityModel,
      interval: q.interval,
      from,
      to,
      surfaces: docs.map((d) => ({
        observationTimestamp: d.observationTimestamp,
        sequence: d.sequence,
        spotPrice: d.spot,
        expiries: d.expiries.map((e) => ({ expirationTimestamp: e.expirationTimestamp, T: e.T, forwardPrice: e.forward, parameters: e.parameters })),
      })),
    };
  }
  const names = [...new Set(docs.flatMap((d) => d.expiries.flatMap((e) => Object.keys(e.parameters))))];
  const header = ['observationTimestamp', 'sequence', 'spotPrice', 'expirationTimestamp', 'T', 'forwardPrice', ...names];
  const rows = docs.flatMap((d) => d.expiries.map((e) => [d.observationTimestamp, d.sequence, d.spot, e.expirationTimestamp, e.T, e.forward, ...names.map((n) => e.parameters[n] ?? null)]));
  if (q.format === 'csv') return csv(header, rows);
  // Parquet: the same rows through DuckDB (a VALUES table of the rows read above)
  if (rows.length === 0) return parquet(store, `SELECT ${header.map((h) => `NULL::DOUBLE AS "${h}"`).join(', ')} WHERE false`);
  const lit = (v: unknown): string => (v === null ? 'NULL' : `'${String(v)}'::DOUBLE`);
  return parquet(store, `SELECT * FROM (VALUES ${rows.map((r) => `(${r.map(lit).join(',')})`).join(',')}) t(${header.map((h) => `"${h}"`).join(', ')})`);
}

/** 100 000 -> `100 000`: a limit as the descriptions write it. */
const spaced = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');

/** The head of a series answer (format=json): the key, the interval (one `what` per interval) and the range. */
const seriesHead = (what: 'point' | 'surface') =>
  z.object({
    source: z.string(),
    baseCurrency: z.string(),
    quoteCurrency: z.string(),
    volatilityModel: z.string(),
    interval: z.string().describe(`One ${what} per interval: 1m, 5m, 1h or 1d`),
    from: num().describe('Start of the range, Unix seconds'),
    to: num().describe('End of the range, Unix seconds'),
  });

/** GET iVSummary/history answer with format=json. */
const IvSummaryHistoryResult = seriesHead('point').extend({
  points: z
    .array(
      z.object({
        observationTimestamp: num().describe('Observation time of the surface the figures are of, Unix seconds (the first stored in its interval)'),
        sequence: num().describe('Sequence of that surface'),
        constMat: z.enum(IV_SUMMARY_CONST_MATS),
        expirationTimestamp: num().describe('observationTimestamp + the constant maturity, Unix seconds'),
        atmVol: numOrNull().describe('Forward ATM vol, fraction'),
        delta25Skew: numOrNull().describe('25-delta risk reversal vol(call) - vol(put), fraction'),
        delta10Skew: numOrNull().describe('10-delta risk reversal, fraction'),
        delta25Bfly: numOrNull().describe('25-delta butterfly (vol(call) + vol(put)) / 2 - ATM, fraction'),
        delta10Bfly: numOrNull().describe('10-delta butterfly, fraction'),
      }),
    )
    .describe('Oldest first; per time, the constant maturities in label order'),
});

/** GET surface/history answer with format=json. */
const SurfaceHistoryResult = seriesHead('surface').extend({
  surfaces: z
    .array(
      z.object({
        observationTimestamp: num().describe('Observation time of the surface, Unix seconds (the first stored in its interval)'),
        sequence: num().describe('Its sequence'),
        spotPrice: num().describe('Spot index, quote currency'),
        expiries: z
          .array(
            z.object({
              expirationTimestamp: num(),
              T: num().describe('Years to expiry from observationTimestamp, ACT/365'),
              forwardPrice: num().describe('The expiry\'s forward, quote currency'),
              parameters: z.record(z.string(), num()).describe('Model parameters (raw SVI a, b, rho, m, sigma; SABR alpha, beta, rho, nu; Vanna-Volga pillars)'),
            }),
          )
          .describe('The served expiries'),
      }),
    )
    .describe('Oldest first'),
});

/** Documentation of GET iVSummary/history: JSON, CSV or Parquet; the example market's last day at 1h, 1M. */
const ivSeriesDocs: RouteDocs = {
  response: IvSummaryHistoryResult,
  alsoContentTypes: [CSV_TYPE, PARQUET_TYPE],
  errors: MARKET_GET,
  live: { query: (ctx) => ({ ...ctx.pairQuery, volatilityModel: 'SVI', interval: '1h', constMat: '1M' }) },
};

/** Documentation of GET surface/history: JSON, CSV or Parquet; the example market's last day at 1h. */
const surfaceSeriesDocs: RouteDocs = {
  response: SurfaceHistoryResult,
  alsoContentTypes: [CSV_TYPE, PARQUET_TYPE],
  errors: MARKET_GET,
  live: { query: (ctx) => ({ ...ctx.pairQuery, volatilityModel: 'SVI', interval: '1h' }) },
};

/** The series routes (module docstring) over `markets` (its history store; 404 without one); a named fastify-plugin, `history`. */
export const historyRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('history', async (app) => {
    app.get(
      '/api/v1/global/data/iVSummary/history',
      {
        schema: {
          summary: 'History of ATM vol, 25/10-delta risk reversal and butterfly per constant maturity (1m/5m/1h/1d; JSON, CSV or Parquet)',
          tags: ['history'],
          description: `History of the iVSummary figures per constant maturity (ATM vol, 25/10-delta risk reversal and butterfly) of one (source, pair, model) over [from, to] (default: the last 24 h), one point per interval (the first stored surface of each), from the history store (docs/operations.md "History"). format=csv gives the same rows as CSV, format=parquet as a Parquet file. A range of more than ${spaced(MAX_SERIES_ROWS)} rows is a 400; without a history store, a 404.`,
          querystring: IvSeriesQuery,
          docs: ivSeriesDocs,
        },
      },
      async (req, reply) => {
        const q = req.query;
        const perInterval = q.constMat ? 1 : IV_SUMMARY_CONST_MATS.length;
        const range = resolveRange(markets, q, perInterval, MAX_SERIES_ROWS, 'rows', 'shorten [from, to], take a coarser interval or name one constMat');
        return ivSeriesAnswer(q, range, reply);
      },
    );

    app.get(
      '/api/v1/global/data/surface/history',
      {
        schema: {
          summary: 'History of the calibrated surface: expiries, forwards and model parameters per interval (1m/5m/1h/1d; JSON, CSV or Parquet)',
          tags: ['history'],
          description: `History of the calibrated surface of one (source, pair, model) over [from, to] (default: the last 24 h): one surface per interval (the first stored of each) with its expiries, forwards and model parameters. format=csv: one row per (surface, expiry), a column per parameter; format=parquet: the same rows as a Parquet file. More than ${spaced(MAX_SURFACES)} surfaces is a 400; without a history store, a 404.`,
          querystring: HistoryRangeQuery,
          docs: surfaceSeriesDocs,
        },
      },
      async (req, reply) => surfaceSeriesAnswer(req.query, resolveRange(markets, req.query, 1, MAX_SURFACES, 'surfaces', 'shorten [from, to] or take a coarser interval'), reply),
    );
  });
