/**
 * GET /metrics (Prometheus text exposition, src/metrics/serviceMetrics.ts) and the REST latency hook: every
 * response is observed with its route PATTERN (`request.routeOptions.url`, so `/api/v1/global/data/surface`
 * whatever the query), method and status. A route opts out with `config: { metrics: false }` (the dashboard's
 * event stream, whose "latency" is the lifetime of the connection).
 * /metrics is guarded per ./metricsAuth.ts (METRICS_KEY, else the API keys, else open), and can be served on
 * a listener of its own instead of the API port ({@link buildMetricsApp}, METRICS_PORT).
 * Source: fastify Hooks reference (onResponse; `reply.elapsedTime` in ms) and Request reference (routeOptions).
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { ServiceMetrics } from '../../metrics/serviceMetrics.js';
import { installErrorHandling } from '../errors.js';
import { metricsGuard, type MetricsAuthOptions } from './metricsAuth.js';

/** Route config understood by the hook. */
export interface MetricsRouteConfig {
  /** false: do not observe this route's responses. */
  readonly metrics?: boolean;
}

/** Options of {@link installMetrics}. */
export interface InstallMetricsOptions {
  /** Who may scrape (default: anyone). */
  readonly auth?: MetricsAuthOptions;
  /** false: install the latency hook only, no GET /metrics (it is served on its own listener). Default true. */
  readonly route?: boolean;
}

/** Install the onResponse hook and GET /metrics on `app` (call before the routes are registered). */
export function installMetrics(app: FastifyInstance, metrics: ServiceMetrics, opts: InstallMetricsOptions = {}): void {
  app.addHook('onResponse', (req, reply, done) => {
    const config = req.routeOptions.config as MetricsRouteConfig | undefined;
    if (config?.metrics !== false) metrics.observeHttp(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  if (opts.route !== false) metricsRoute(app, metrics, opts.auth ?? {});
}

/** GET /metrics on `app`, guarded per `auth`. */
function metricsRoute(app: FastifyInstance, metrics: ServiceMetrics, auth: MetricsAuthOptions): void {
  const guard = metricsGuard(auth);
  app.get(
    '/metrics',
    {
      ...(guard ? { onRequest: guard } : {}),
      schema: {
        summary: 'Prometheus metrics',
        description:
          'Prometheus text exposition (version 0.0.4): feed health per exchange (volsurf_feed_*), calibration duration, fit RMSE per expiry, ' +
          'arbitrage repairs and rejections, snapshot age (volsurf_calibration_*, volsurf_fit_*, volsurf_arbitrage_*, volsurf_snapshot_age_seconds), ' +
          'REST latency per route and status (volsurf_http_request_duration_seconds), Kafka publishing (volsurf_kafka_*) and the Node.js process metrics. ' +
          'When METRICS_KEY is set it needs header `Authorization: Bearer <METRICS_KEY>`; otherwise, when API keys are configured, an API key ' +
          '(`Authorization: Bearer <key>` or `X-API-Key`) or a dashboard session.',
        tags: ['monitoring'],
        // Prometheus text (its content type with version and charset: metrics.contentType); 401 under its guard
        docs: { responseContentType: 'text/plain', errors: [401] },
      },
    },
    async (_req, reply) => {
      reply.type(metrics.contentType);
      return metrics.metrics();
    },
  );
}

/**
 * The metrics-only HTTP app of METRICS_PORT: GET /metrics (guarded per `auth`) and nothing else (404 in the
 * error shape), for a Prometheus scraper on an internal interface. Built, not started.
 */
export async function buildMetricsApp(metrics: ServiceMetrics, auth: MetricsAuthOptions = {}, logger?: FastifyServerOptions['loggerInstance'] | false): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    requestTimeout: 10_000,
    http: { requestTimeout: 10_000, connectionsCheckingInterval: 1_000 },
    connectionTimeout: 10_000,
    keepAliveTimeout: 5_000,
    return503OnClosing: true,
  });
  installErrorHandling(app);
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    done();
  });
  metricsRoute(app, metrics, auth);
  return app;
}
