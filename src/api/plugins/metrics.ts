/**
 * GET /metrics (Prometheus text exposition, src/metrics/serviceMetrics.ts) and the REST latency hook: every
 * response is observed with its route PATTERN (`request.routeOptions.url`, so `/api/v1/global/data/surface`
 * whatever the query), method and status. A route opts out with `config: { metrics: false }` (the dashboard's
 * event stream, whose "latency" is the lifetime of the connection).
 * Source: fastify Hooks reference (onResponse; `reply.elapsedTime` in ms) and Request reference (routeOptions).
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceMetrics } from '../../metrics/serviceMetrics.js';

/** Route config understood by the hook. */
export interface MetricsRouteConfig {
  /** false: do not observe this route's responses. */
  readonly metrics?: boolean;
}

/** Install the onResponse hook and GET /metrics on `app` (call before the routes are registered). */
export function installMetrics(app: FastifyInstance, metrics: ServiceMetrics): void {
  app.addHook('onResponse', (req, reply, done) => {
    const config = req.routeOptions.config as MetricsRouteConfig | undefined;
    if (config?.metrics !== false) metrics.observeHttp(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics',
        description:
          'Prometheus text exposition (version 0.0.4): feed health per exchange (volsurf_feed_*), calibration duration, fit RMSE per expiry, ' +
          'arbitrage repairs and rejections, snapshot age (volsurf_calibration_*, volsurf_fit_*, volsurf_arbitrage_*, volsurf_snapshot_age_seconds), ' +
          'REST latency per route and status (volsurf_http_request_duration_seconds), Kafka publishing (volsurf_kafka_*) and the Node.js process metrics.',
        tags: ['monitoring'],
      },
    },
    async (_req, reply) => {
      reply.type(metrics.contentType);
      return metrics.metrics();
    },
  );
}
