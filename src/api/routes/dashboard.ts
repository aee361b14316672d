/**
 * The live dashboard: GET / (the page), its assets under /dashboard/assets/ (src/dashboard/public, no build
 * step) and ECharts under /dashboard/vendor/ (node_modules/echarts/dist, @fastify/static), all compressed
 * (br or gzip as the browser asks, @fastify/compress, scoped to these routes); its state as JSON
 * (GET /dashboard/api/state), pushed live as Server-Sent Events (GET /dashboard/api/stream: a full `state`
 * at connection, then `patch`es with what changed and `feeds` rows, src/dashboard/stream.ts, checked every
 * `pushIntervalMs`: the focused expiry at every check, the others every 10 s; gzip-encoded with a flush after every event when the browser accepts gzip), and the
 * held 24 h history of one expiry or constant maturity (GET /dashboard/api/history).
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
import { z } from 'zod';
import { buildDashboardState, historySeries, resolveSelection, selectionVersion, type DashboardSelection, type DashboardState } from '../../dashboard/state.js';
import { DashboardDiffer } from '../../dashboard/stream.js';
import type { Monitoring } from '../../metrics/monitoring.js';
import { badRequest } from '../errors.js';
import { BaseCurrencyValue, QuoteCurrencyValue, SourceValue, VolatilityModelValue } from '../schemas.js';

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

/** Query of the stream: the selection and the expiry the tab looks at (sent at every check; others every 5 s). */
export const DashboardStreamQuery = DashboardQuery.extend({
  expiry: z.coerce.number().int().positive().optional().describe('Focused expiry, Unix seconds (default: the listed expiry nearest 30 days)'),
  others: z.enum(['0', '1']).optional().describe('1: the focused smile carries every model\'s fitted curve (default: the selected model only)'),
});

/** Query of the history series: the selection and one listed expiry or one constant maturity. */
export const DashboardHistoryQuery = DashboardQuery.extend({
  expiry: z.coerce.number().int().positive().optional().describe('Listed expiry, Unix seconds'),
  constMat: z.enum(['1W', '2W', '1M', '2M', '3M', '6M', '9M']).optional().describe('Constant maturity label'),
});

/** Options of {@link dashboardRoutes}. */
export interface DashboardRouteOptions {
  /** How often the stream checks for changes and sends the feed panel, ms (default 1000). */
  readonly pushIntervalMs?: number;
}

export const dashboardRoutes =
  (monitoring: Monitoring, opts: DashboardRouteOptions = {}): FastifyPluginAsyncZod =>
  async (app) => {
    const { cache } = monitoring;
    const pushIntervalMs = opts.pushIntervalMs ?? 1000;
    const streams = new Map<ServerResponse, () => void>();

    // Last built state per (selection, version): many viewers of one selection cost one build.
    let memo: { key: string; state: DashboardState } | null = null;
    const stateOf = (sel: DashboardSelection | null): DashboardState => {
      const key = selectionVersion(cache, sel);
      if (memo?.key !== key) memo = { key, state: buildDashboardState(cache, sel, monitoring.feedPanel(), monitoring.now(), monitoring.market()) };
      return memo.state;
    };
    const select = (q: DashboardQuery): DashboardSelection | null => {
      try {
        return resolveSelection(cache, q);
      } catch (err) {
        const field = /does not list/.test((err as Error).message) ? 'baseCurrency' : 'source';
        throw badRequest((err as Error).message, [{ path: field, message: (err as Error).message }]);
      }
    };

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

    app.get('/dashboard/api/state', { schema: { summary: 'Live dashboard state (JSON)', querystring: DashboardQuery } }, async (req, reply) => {
      const sel = select(req.query);
      reply.type('application/json; charset=utf-8');
      // the same state as the stream, but with a fresh feed panel
      return JSON.stringify({ ...stateOf(sel), feeds: monitoring.feedPanel(), generatedAt: monitoring.now() });
    });

    app.get(
      '/dashboard/api/history',
      { schema: { summary: 'Held 24 h history (ATM, 25D/10D RR and BF) of one expiry or constant maturity, for the dashboard', querystring: DashboardHistoryQuery } },
      async (req) => {
        const sel = select(req.query);
        if (req.query.expiry === undefined && req.query.constMat === undefined) {
          throw badRequest('give expiry or constMat', [{ path: 'expiry', message: 'Required (or constMat)' }]);
        }
        if (!sel) return { selection: null, points: [] };
        const points = historySeries(cache.history, sel, { expiry: req.query.expiry, constMat: req.query.constMat });
        return { selection: { source: sel.source, baseCurrency: sel.pair.base, quoteCurrency: sel.pair.quote, volatilityModel: sel.model }, points };
      },
    );

    app.get(
      '/dashboard/api/stream',
      { schema: { summary: 'Live dashboard state pushed as Server-Sent Events (full state, then changes)', querystring: DashboardStreamQuery }, config: { metrics: false } },
      (req, reply) => {
        const q = req.query;
        select(q); // 400 before the stream opens
        reply.hijack();
        const res = reply.raw;
        req.raw.socket.setTimeout(0);
        const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
          ...(gzip ? { 'content-encoding': 'gzip', vary: 'accept-encoding' } : {}),
        });
        // gzip with a sync flush after every event: each event reaches the browser at once, and the shared
        // window compresses the repeated keys of successive patches
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
        streams.set(res, end);
        const differ = new DashboardDiffer({ others: q.others === '1' });
        const send = (event: string, data: string) => write(`event: ${event}\ndata: ${data}\n\n`);
        const tick = () => {
          try {
            const sel = resolveSelection(cache, q);
            const ev = differ.next(stateOf(sel), Date.now(), q.expiry ?? null);
            if (ev) send(ev.event, ev.data);
            const f = differ.feeds(monitoring.feedPanel(), monitoring.now());
            if (f) send(f.event, f.data);
          } catch (err) {
            send('error', JSON.stringify({ message: (err as Error).message }));
          }
        };
        tick();
        const timer = setInterval(tick, pushIntervalMs);
        const cleanup = () => {
          clearInterval(timer);
          streams.delete(res);
          gz?.destroy();
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
  };
