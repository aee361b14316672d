/**
 * The live dashboard: GET / (the page), its assets under /dashboard/assets/ (src/dashboard/public, no build
 * step) and ECharts under /dashboard/vendor/ (node_modules/echarts/dist, @fastify/static), all compressed
 * (br or gzip as the browser asks, @fastify/compress, scoped to these routes); its state as JSON
 * (GET /dashboard/api/state), pushed live as Server-Sent Events (GET /dashboard/api/stream: a full `state`
 * at connection, then `patch`es with what changed and `feeds` rows, src/dashboard/stream.ts, checked every
 * `pushIntervalMs`: the focused expiry at every check, the others every 10 s; gzip-encoded with a flush after every event when the browser accepts gzip), and the
 * 24 h history of one expiry or constant maturity (GET /dashboard/api/history).
 *
 * With a history store (issue 24; `markets.history.store`, src/history): the 24 h reference of the term structure
 * and of the smile's "24 h ago" overlay is the stored iVSummary point nearest to 24 h before the surface (one query
 * per state built, src/history/reads.ts summaryNearest, the rule of GET iVSummary?asOf), and the history series are
 * one query of the store over the 25 h before now (one point per 5 min, the points GET iVSummary/history?interval=5m
 * answers); without one, both come from the in-memory history (cache.history). `asOf` (Unix s) on the state and the
 * history: the state of what was served then (src/api/asOf.ts Markets.at: 400 for a future time, 404 when nothing
 * was served then, with the API's message) and the 25 h of series before it.
 * SSE format: WHATWG HTML Living Standard, "Server-sent events" (event/data/retry fields, blank-line framed).
 * A bad selection is a 400 with the API's error body (the page shows its message and falls back).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerResponse } from 'node:http';
import { constants as zlibConstants, createGzip } from 'node:zlib';
import fastifyCompress from '@fastify/compress';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { routePlugin } from '../routeDefinition.js';
import { DASHBOARD_HISTORY_SCHEMA_DOCS, DASHBOARD_STATE_SCHEMA_DOCS, DASHBOARD_STREAM_SCHEMA_DOCS } from './dashboardDocs.js';
import { z } from 'zod';
import { DIFF_HORIZON_S, DIFF_TOLERANCE_S, type IvSummary } from '../../cache/history.js';
import type { MarketCache } from '../../cache/marketCache.js';
import { VOLATILITY_MODELS, type SurfaceSnapshot } from '../../cache/snapshot.js';
import { buildDashboardState, historySeries, resolveSelection, selectionVersion, type DashboardSelection, type DashboardState, type HistoryPoint } from '../../dashboard/state.js';
import { DashboardDiffer } from '../../dashboard/stream.js';
import { ivSummaryExpirySeriesSql, ivSummarySeriesSql, summaryNearest } from '../../history/reads.js';
import type { Row } from '../../history/store.js';
import type { Monitoring } from '../../metrics/monitoring.js';
import type { Markets, Need } from '../asOf.js';
import { ApiError, badRequest } from '../errors.js';
import { BaseCurrencyValue, QuoteCurrencyValue, queryTimestampS, SourceValue, VolatilityModelValue } from '../schemas.js';

/** Folder of the page, its script and styles. */
export const DASHBOARD_PUBLIC_DIR = fileURLToPath(new URL('../../dashboard/public/', import.meta.url));
/** Folder of echarts.min.js. */
export const ECHARTS_DIST_DIR = path.join(path.dirname(createRequire(import.meta.url).resolve('echarts/dist/echarts.min.js')));

/** Query of the dashboard state and stream: every field optional (defaults: the first pair held, SVI). */
export const DashboardQuery = z.object({
  source: SourceValue.optional(),
  baseCurrency: BaseCurrencyValue.optional(),
  quoteCurrency: QuoteCurrencyValue.optional(),
  volatilityModel: VolatilityModelValue.optional(),
});
type DashboardQuery = z.infer<typeof DashboardQuery>;

/** Query of the state and the history series: the selection and an optional past time. */
export const DashboardAsOfQuery = DashboardQuery.extend({
  asOf: queryTimestampS.optional().describe('Show what was served at this time (Unix seconds, history store); absent = live'),
});

/** Seconds of series the history answer covers before its end (now, or asOf): the in-memory history's 25 h. */
export const DASHBOARD_HISTORY_S = 25 * 3600;

/** Query of the stream: the selection and the expiry the tab looks at (sent at every check; others every 5 s). */
export const DashboardStreamQuery = DashboardQuery.extend({
  expiry: z.coerce.number().int().positive().optional().describe('Focused expiry, Unix seconds (default: the listed expiry nearest 30 days)'),
  others: z.enum(['0', '1']).optional().describe('1: the focused smile carries every model\'s fitted curve (default: the selected model only)'),
});

/** Query of the history series: the selection and one listed expiry or one constant maturity. */
export const DashboardHistoryQuery = DashboardAsOfQuery.extend({
  expiry: z.coerce.number().int().positive().optional().describe('Listed expiry, Unix seconds'),
  constMat: z.enum(['1W', '2W', '1M', '2M', '3M', '6M', '9M']).optional().describe('Constant maturity label'),
});

/** Options of {@link dashboardRoutes}. */
export interface DashboardRouteOptions {
  /** How often the stream checks for changes and sends the feed panel, ms (default 1000). */
  readonly pushIntervalMs?: number;
  /**
   * The markets of the data routes (src/api/asOf.ts), for the history store: the 24 h reference and the series are
   * read from `markets.history.store` when it is open, and `asOf` states are built with `markets.at`. Absent: the
   * in-memory history only, and `asOf` answers 404.
   */
  readonly markets?: Markets;
}

/** One stored series row (ivSummarySeriesSql columns) as a point of the page's series. */
function historyPointOf(r: Row): HistoryPoint {
  return {
    t: r.observation_timestamp as number,
    atmVol: r.atm_vol as number | null,
    delta25Skew: r.delta25_skew as number | null,
    delta25Bfly: r.delta25_bfly as number | null,
    delta10Skew: r.delta10_skew as number | null,
    delta10Bfly: r.delta10_bfly as number | null,
  };
}

/** The dashboard page, its assets and data routes (a named fastify-plugin, `dashboard`; documentation: ./dashboardDocs.ts). */
export const dashboardRoutes = (monitoring: Monitoring, opts: DashboardRouteOptions = {}): FastifyPluginAsyncZod =>
  routePlugin('dashboard', async (app) => {
    const data = new DashboardData(monitoring, opts.markets);
    const pushIntervalMs = opts.pushIntervalMs ?? 1000;
    const streams = new Map<ServerResponse, () => void>();

    // br or gzip for the page, its assets, ECharts (1.1 MB -> ~0.37 MB) and the JSON state, in this scope only
    await app.register(fastifyCompress, { global: true, encodings: ['br', 'gzip'], threshold: 1024 });
    await app.register(fastifyStatic, { root: DASHBOARD_PUBLIC_DIR, prefix: '/dashboard/assets/', index: false });
    await app.register(fastifyStatic, {
      root: ECHARTS_DIST_DIR,
      prefix: '/dashboard/vendor/',
      decorateReply: false,
      index: false,
      maxAge: '1d',
      allowedPath: (p) => p === '/echarts.min.js' || p === 'echarts.min.js',
    });

    app.get('/', { schema: { hide: true } }, (_req, reply) => reply.type('text/html; charset=utf-8').sendFile('index.html', DASHBOARD_PUBLIC_DIR));
    app.get('/dashboard', { schema: { hide: true } }, (_req, reply) => reply.redirect('/'));

    app.get('/dashboard/api/state', { schema: { summary: 'Dashboard state (JSON), live or as of a past time', ...DASHBOARD_STATE_SCHEMA_DOCS, querystring: DashboardAsOfQuery } }, async (req, reply) => {
      const sel = data.select(req.query);
      const { asOf } = req.query;
      if (asOf !== undefined && !sel) throw new ApiError(404, 'nothing to show as of a past time: no market is known yet');
      const state = asOf !== undefined && sel ? await data.asOfState(sel, asOf) : await data.stateOf(sel);
      reply.type('application/json; charset=utf-8');
      // the same state as the stream, but with a fresh feed panel
      return JSON.stringify({ ...state, feeds: monitoring.feedPanel(), generatedAt: monitoring.now() });
    });

    app.get(
      '/dashboard/api/history',
      { schema: { summary: 'Held 24 h history (ATM, 25D/10D RR and BF) of one expiry or constant maturity, for the dashboard', ...DASHBOARD_HISTORY_SCHEMA_DOCS, querystring: DashboardHistoryQuery } },
      async (req) => {
        const sel = data.select(req.query);
        if (req.query.expiry === undefined && req.query.constMat === undefined) {
          throw badRequest('give expiry or constMat', [{ path: 'expiry', message: 'Required (or constMat)' }]);
        }
        if (!sel) return { selection: null, points: [] };
        const { origin, from, to, intervalS, points } = await data.seriesOf(sel, { expiry: req.query.expiry, constMat: req.query.constMat }, req.query.asOf);
        return { selection: { source: sel.source, baseCurrency: sel.pair.base, quoteCurrency: sel.pair.quote, volatilityModel: sel.model }, origin, from, to, intervalS, points };
      },
    );

    app.get(
      '/dashboard/api/stream',
      { schema: { summary: 'Live dashboard state pushed as Server-Sent Events (full state, then changes)', ...DASHBOARD_STREAM_SCHEMA_DOCS, querystring: DashboardStreamQuery }, config: { metrics: false } },
      (req, reply) => {
        const q = req.query;
        data.select(q); // 400 before the stream opens
        reply.hijack();
        const res = reply.raw;
        req.raw.socket.setTimeout(0);
        const events = openDashboardEvents(res, /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')));
        streams.set(res, events.end);
        const stop = pushDashboardState(data, q, events.write, res, pushIntervalMs);
        const cleanup = () => {
          stop();
          streams.delete(res);
          events.destroy();
        };
        res.on('close', cleanup);
        res.on('error', cleanup);
      },
    );

    // Open streams would keep app.close() waiting: end them first.
    app.addHook('preClose', (done) => {
      for (const end of streams.values()) end();
      streams.clear();
      done();
    });
  });

/** The dashboard's states and series: live (one build per selection and version), or as served at a past time. */
class DashboardData {
  readonly cache: MarketCache;
  /** Last built state per (selection, version): many viewers of one selection cost one build (and one store read). */
  private memo: { key: string; state: Promise<DashboardState> } | null = null;

  constructor(
    readonly monitoring: Monitoring,
    private readonly markets: Markets | undefined,
  ) {
    this.cache = monitoring.cache;
  }

  /** The history store when open, else null. */
  private store() {
    return this.markets?.history.store ?? null;
  }

  /** The selection of a query (defaults: the first pair held, SVI), or null when no market is known yet; 400 for a bad one. */
  select(q: DashboardQuery): DashboardSelection | null {
    try {
      return resolveSelection(this.cache, q);
    } catch (err) {
      const field = /does not list/.test((err as Error).message) ? 'baseCurrency' : 'source';
      throw badRequest((err as Error).message, [{ path: field, message: (err as Error).message }]);
    }
  }

  /**
   * The stored iVSummary point about 24 h before `snap` (GET iVSummary's rule, read as GET iVSummary?asOf reads
   * it), or undefined without a store (the builder then reads cache.history); a failed read falls back the same way.
   */
  private async storedDayAgo(snap: SurfaceSnapshot | undefined): Promise<IvSummary | null | undefined> {
    const st = this.store();
    if (!st || !snap) return undefined;
    const ref = { source: snap.source, pair: `${snap.pair.base}/${snap.pair.quote}`, model: snap.model };
    return summaryNearest(st, ref, snap.observationTimestamp - DIFF_HORIZON_S, DIFF_TOLERANCE_S, this.cache.history.bucketS).catch(() => undefined);
  }

  /** The live state of `sel`, built once per (selection, version). */
  stateOf(sel: DashboardSelection | null): Promise<DashboardState> {
    const { cache, monitoring } = this;
    const key = selectionVersion(cache, sel);
    if (this.memo?.key !== key) {
      const snap = sel ? cache.getSurface(sel.source, sel.pair, sel.model) : undefined;
      const state = this.storedDayAgo(snap).then((dayAgo) => buildDashboardState(cache, sel, monitoring.feedPanel(), monitoring.now(), monitoring.market(), { dayAgo }));
      this.memo = { key, state };
      state.catch(() => (this.memo?.state === state ? (this.memo = null) : undefined));
    }
    return this.memo.state;
  }

  /**
   * The state of `sel` as served at `asOf` (Unix s): the selected model's surface and the forward curve (required:
   * 404 with the API's message when not served then), the other models' surfaces when they were served too, and
   * the stored 24 h reference. Feed rows are today's (the feeds' status now); funding is not restored (empty).
   * @throws ApiError 400 (future), 404 (no store, nothing served then), 503 (store being rebuilt)
   */
  async asOfState(sel: DashboardSelection, asOf: number): Promise<DashboardState> {
    const { markets, monitoring } = this;
    if (!markets) throw new ApiError(404, 'no history to answer asOf from: this dashboard has no history store');
    const own: Need[] = [
      { source: sel.source, pair: sel.pair, model: sel.model },
      { source: sel.source, pair: sel.pair, model: null },
    ];
    const others: Need[] = VOLATILITY_MODELS.filter((m) => m !== sel.model).map((model) => ({ source: sel.source, pair: sel.pair, model }));
    let past: MarketCache;
    try {
      past = await markets.at(asOf, [...own, ...others]);
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode !== 404) throw err;
      // some model was not served then: the selected one alone, then each other as it comes
      past = await markets.at(asOf, own);
      for (const n of others) {
        const s = await markets.at(asOf, [n]).then((c) => c.getSurface(n.source, n.pair, n.model!), () => undefined);
        if (s) past.putSurface(s);
      }
    }
    const snap = past.getSurface(sel.source, sel.pair, sel.model);
    const dayAgo = snap ? await summaryNearest(markets.storeFor(asOf), refOf(sel), snap.observationTimestamp - DIFF_HORIZON_S, DIFF_TOLERANCE_S, this.cache.history.bucketS) : null;
    return buildDashboardState(past, sel, monitoring.feedPanel(), monitoring.now(), monitoring.market(), { dayAgo, asOf });
  }

  /**
   * ATM/RR/BF points of one expiry or constant maturity over the 25 h before `endS`: one store query (the first
   * point of each in-memory bucket, 5 min), or the in-memory history without a store.
   */
  async seriesOf(sel: DashboardSelection, which: { expiry?: number | undefined; constMat?: string | undefined }, asOf: number | undefined) {
    const { cache, markets } = this;
    const st = this.store();
    const to = asOf ?? cache.clock.now();
    const from = to - DASHBOARD_HISTORY_S;
    const intervalS = cache.history.bucketS;
    if (!st) {
      if (asOf !== undefined) {
        markets?.storeFor(asOf); // throws: 400 for a future time, else 404 saying why there is no store
        throw new ApiError(404, 'no history to answer asOf from: this dashboard has no history store');
      }
      return { origin: 'memory' as const, from, to, intervalS, points: historySeries(cache.history, sel, which) };
    }
    if (asOf !== undefined) markets!.storeFor(asOf); // 400 for a future time, 503 while rebuilding
    const sql = which.constMat !== undefined ? ivSummarySeriesSql(refOf(sel), from, to, intervalS, which.constMat) : ivSummaryExpirySeriesSql(refOf(sel), from, to, intervalS, which.expiry!);
    const rows = await st.query(sql);
    return { origin: 'store' as const, from, to, intervalS, points: rows.map(historyPointOf) };
  }
}

/** The history reference (source, `BASE/QUOTE`, model) of a selection. */
const refOf = (sel: DashboardSelection) => ({ source: sel.source, pair: `${sel.pair.base}/${sel.pair.quote}`, model: sel.model });

/**
 * Opens the dashboard's event stream on a hijacked response: gzip-encoded when the browser accepts it, with a sync
 * flush after every event (each event reaches the browser at once, and the shared window compresses the repeated
 * keys of successive patches). Writes the `retry` field.
 * @returns write (nothing once the response ended), end, and destroy (of the gzip stream)
 */
function openDashboardEvents(res: ServerResponse, gzip: boolean) {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...(gzip ? { 'content-encoding': 'gzip', vary: 'accept-encoding' } : {}),
  });
  const gz = gzip ? createGzip({ level: 6 }) : null;
  if (gz) {
    gz.pipe(res);
    gz.on('error', () => res.destroy());
  }
  const write = (text: string) => {
    if (res.writableEnded || res.destroyed) return;
    if (gz) {
      gz.write(text);
      gz.flush(zlibConstants.Z_SYNC_FLUSH);
    } else res.write(text);
  };
  const end = () => {
    if (gz) gz.end();
    else res.end();
  };
  write('retry: 2000\n\n');
  return { write, end, destroy: () => gz?.destroy() };
}

/**
 * Pushes the state of the stream's selection every `pushIntervalMs` (at once first): the full state, then patches
 * with what changed (src/dashboard/stream.ts), and the feed rows; a failed build is an `error` event.
 * @returns stops the pushing
 */
function pushDashboardState(data: DashboardData, q: z.infer<typeof DashboardStreamQuery>, write: (text: string) => void, res: ServerResponse, pushIntervalMs: number): () => void {
  const { monitoring } = data;
  const differ = new DashboardDiffer({ others: q.others === '1' });
  const send = (event: string, payload: string) => write(`event: ${event}\ndata: ${payload}\n\n`);
  // one tick at a time: a state build waiting on the store is not overtaken by the next tick
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      const sel = resolveSelection(data.cache, q);
      const state = await data.stateOf(sel);
      if (res.writableEnded || res.destroyed) return;
      const ev = differ.next(state, Date.now(), q.expiry ?? null);
      if (ev) send(ev.event, ev.data);
      const f = differ.feeds(monitoring.feedPanel(), monitoring.now());
      if (f) send(f.event, f.data);
    } catch (err) {
      send('error', JSON.stringify({ message: (err as Error).message }));
    } finally {
      busy = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), pushIntervalMs);
  return () => clearInterval(timer);
}
