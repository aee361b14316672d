/**
 * The fastify application: zod validation (fastify-type-provider-zod), one error shape, and the
 * routes, reading the cache only (the API never waits on the network; design.md).
 * Plugins are registered in order: error handling, security (headers, overload, API keys and dashboard
 * sessions, rate limit: ./plugins/security.ts, with what needs a key in ./plugins/access.ts), OpenAPI,
 * monitoring (/metrics, dashboard), the login page (with keys only), then routes (docs/architecture.md, fastify/demo).
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { MarketCache } from '../cache/marketCache.js';
import { installErrorHandling } from './errors.js';
import { registerOpenApi } from './plugins/openapi.js';
import { installMonitoring, withRejectionMetrics } from './plugins/monitoring.js';
import type { Monitoring } from '../metrics/monitoring.js';
import { securityPlugin, type SecurityOptions } from './plugins/security.js';
import { DashboardSessions } from './plugins/sessions.js';
import { loginRoutes } from './routes/login.js';
import { fundingRoutes } from './routes/funding.js';
import { healthRoutes } from './routes/health.js';
import { forwardCurveRoutes } from './routes/forwardCurve.js';
import { ivRoutes } from './routes/iv.js';
import { vanillaRoutes } from './routes/vanilla.js';
import { surfaceRoutes } from './routes/surface.js';
import { euBarrierRoutes } from './routes/euBarrier.js';
import { scenarioRoutes } from './routes/scenarios.js';
import { ivSummaryRoutes } from './routes/ivSummary.js';
import fastifyWebsocket from '@fastify/websocket';
import { streamRoutes } from './routes/stream.js';
import { StreamHub } from './stream/hub.js';
import type { StreamLimits } from './stream/config.js';
import { KeyRing } from './plugins/security.js';
import { Markets, type HistoryAccess } from './asOf.js';
import { historyRoutes } from './routes/history.js';

export interface AppOptions {
  readonly cache: MarketCache;
  /** fastify logger option (a pino instance or options); false for none. */
  readonly logger?: FastifyServerOptions['loggerInstance'] | false;
  /** Largest accepted body, bytes (decisions.md: 1 MiB). */
  readonly bodyLimit?: number;
  /** Metrics (/metrics) and the live dashboard (/) of the running service (src/metrics/monitoring.ts); none when absent. */
  readonly monitoring?: Monitoring;
  /** API keys, rate limit, overload protection, security headers (src/api/plugins/security.ts); default: headers only. */
  readonly security?: SecurityOptions;
  /** A request not received completely within this many ms gets 408; 0 disables. Default 10 000. */
  readonly requestTimeoutMs?: number;
  /**
   * The scraper's key (METRICS_KEY): when set, GET /metrics needs `Authorization: Bearer <it>`; without it
   * /metrics takes an API key or a dashboard session when keys are configured (src/api/plugins/metricsAuth.ts).
   */
  readonly metricsKey?: string | undefined;
  /** false: no GET /metrics on this app (it is served on its own listener, METRICS_PORT). Default true. */
  readonly metricsRoute?: boolean;
  /**
   * The streaming API's hub (src/api/stream/hub.ts; src/service.ts makes it, to expose its metrics); absent: one is
   * made here on `cache` with `streamLimits`. It is closed with the app.
   */
  readonly stream?: StreamHub;
  /** Limits of a hub made here (defaults: src/api/stream/config.ts). */
  readonly streamLimits?: Partial<StreamLimits>;
  /** The history store the `asOf` queries and the series endpoints read (src/api/asOf.ts); absent: none (404). */
  readonly history?: HistoryAccess;
}

/** The data route modules, in registration order (the document lists their operations in this order). */
const DATA_ROUTES = [vanillaRoutes, ivRoutes, forwardCurveRoutes, fundingRoutes, surfaceRoutes, euBarrierRoutes, scenarioRoutes, ivSummaryRoutes, historyRoutes];

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Every route registered on the app, in order (method, pattern), from the first: what the access test
     * (test/security/access.test.ts) walks so that no route escapes the key check, and the OpenAPI test
     * (test/api/openapiRoutes.test.ts) so that no route escapes the document.
     */
    readonly registeredRoutes: ReadonlyArray<{
      readonly method: string;
      readonly url: string;
      /** Left out of the OpenAPI document (`schema.hide`: static files, the dashboard page, login, the WebSocket upgrade). */
      readonly hidden: boolean;
    }>;
  }
}

/** Build (not start) the application. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    requestTimeout: opts.requestTimeoutMs ?? 10_000,
    // node reads requestTimeout at construction only (setting it afterwards, as fastify does, has no
    // effect on node 20), and checks it every connectionsCheckingInterval (default 30 s)
    http: { requestTimeout: opts.requestTimeoutMs ?? 10_000, connectionsCheckingInterval: 1_000 },
    connectionTimeout: 10_000,
    keepAliveTimeout: 5_000,
    return503OnClosing: true,
    ajv: undefined,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  const routes: Array<{ method: string; url: string; hidden: boolean }> = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (r) => {
    const hidden = r.schema?.hide === true;
    for (const method of Array.isArray(r.method) ? r.method : [r.method]) routes.push({ method: String(method), url: r.url, hidden });
  });
  installErrorHandling(app);
  const apiKeys = opts.security?.apiKeys ?? [];
  // one session verifier shared by the security plugin (cookie check) and the login routes (issue 14)
  const sessions = apiKeys.length > 0 ? (opts.security?.sessions ?? new DashboardSessions(apiKeys, { ttlS: opts.security?.sessionTtlS })) : null;
  const security = withRejectionMetrics({ ...(opts.security ?? {}), sessions }, opts.monitoring);
  await app.register(securityPlugin, security);
  // JSON only (decisions.md: 415 for anything else); fastify accepts text/plain by default.
  app.removeContentTypeParser('text/plain');
  // OpenAPI (/openapi.json, /docs) and monitoring before the routes: they hook onRoute and onResponse.
  await registerOpenApi(app, opts.cache, undefined, apiKeys.length > 0);
  const { cache } = opts;
  // every data route reads `markets`: the live cache, or what was served at `asOf` (src/api/asOf.ts); the dashboard
  // reads its store too (the 24 h reference, the series, the state as of a chosen time)
  const markets = new Markets(cache, opts.history);
  if (opts.monitoring) {
    await installMonitoring(app, opts.monitoring, {
      markets,
      metrics: { route: opts.metricsRoute !== false, auth: { metricsKey: opts.metricsKey, apiKeys, onReject: security.onReject } },
    });
  }
  // the dashboard's login page, with keys only (src/api/plugins/access.ts says what needs a key)
  if (sessions) await app.register(loginRoutes({ sessions, apiKeys, onReject: security.onReject }));

  await app.register(healthRoutes(cache));
  // each data route module is one named plugin carrying its routes' whole definition (src/api/routeDefinition.ts)
  for (const routes of DATA_ROUTES) await app.register(routes(markets));
  // the streaming API: WebSocket JSON-RPC /api/v1/ws, SSE /api/v1/stream, /asyncapi.json (docs/streaming.md)
  const hub = opts.stream ?? new StreamHub(cache, { limits: opts.streamLimits ?? {} });
  await app.register(fastifyWebsocket, { options: { maxPayload: hub.limits.maxMessageBytes * 4 } });
  await app.register(streamRoutes({ hub, clock: cache.clock, keys: apiKeys.length > 0 ? new KeyRing(apiKeys) : null }));
  return app;
}
