/**
 * The live dashboard: GET / (the page), its assets under /dashboard/assets/ (src/dashboard/public, no build
 * step) and ECharts under /dashboard/vendor/ (node_modules/echarts/dist, @fastify/static), its state as JSON
 * (GET /dashboard/api/state) and pushed live as Server-Sent Events (GET /dashboard/api/stream): a `state` event
 * at connection and whenever the selection's surface, forward curve or funding changed (checked every
 * `pushIntervalMs`), and a `feeds` event (feed-status panel) every `pushIntervalMs`.
 * SSE format: WHATWG HTML Living Standard, "Server-sent events" (event/data/retry fields, blank-line framed).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerResponse } from 'node:http';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { buildDashboardState, resolveSelection, selectionVersion, type DashboardSelection } from '../../dashboard/state.js';
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
    const streams = new Set<ServerResponse>();

    // Last built state per (selection, version): many viewers of one selection cost one build.
    let memo: { key: string; json: string } | null = null;
    const stateJson = (sel: DashboardSelection | null): string => {
      const key = selectionVersion(cache, sel);
      if (memo?.key !== key) memo = { key, json: JSON.stringify(buildDashboardState(cache, sel, monitoring.feedPanel(), monitoring.now())) };
      return memo.json;
    };
    const select = (q: DashboardQuery): DashboardSelection | null => {
      try {
        return resolveSelection(cache, q);
      } catch (err) {
        throw badRequest((err as Error).message, [{ path: 'source', message: (err as Error).message }]);
      }
    };

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
      return JSON.stringify({ ...JSON.parse(stateJson(sel)), feeds: monitoring.feedPanel(), generatedAt: monitoring.now() });
    });

    app.get(
      '/dashboard/api/stream',
      { schema: { summary: 'Live dashboard state pushed as Server-Sent Events', querystring: DashboardQuery }, config: { metrics: false } },
      (req, reply) => {
        const q = req.query;
        select(q); // 400 before the stream opens
        reply.hijack();
        const res = reply.raw;
        req.raw.socket.setTimeout(0);
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        res.write('retry: 2000\n\n');
        streams.add(res);
        let lastVersion = '';
        const send = (event: string, data: string) => {
          if (!res.writableEnded) res.write(`event: ${event}\ndata: ${data}\n\n`);
        };
        const tick = () => {
          try {
            const sel = resolveSelection(cache, q);
            const version = selectionVersion(cache, sel);
            if (version !== lastVersion) {
              lastVersion = version;
              send('state', stateJson(sel));
            }
            send('feeds', JSON.stringify({ generatedAt: monitoring.now(), feeds: monitoring.feedPanel() }));
          } catch (err) {
            send('error', JSON.stringify({ message: (err as Error).message }));
          }
        };
        tick();
        const timer = setInterval(tick, pushIntervalMs);
        const cleanup = () => {
          clearInterval(timer);
          streams.delete(res);
        };
        res.on('close', cleanup);
        res.on('error', cleanup);
      },
    );

    // Open streams would keep app.close() waiting: end them first.
    app.addHook('preClose', (done) => {
      for (const res of streams) res.end();
      streams.clear();
      done();
    });
  };
