/**
 * The REST series of {@link ServiceMetrics} (src/metrics/serviceMetrics.ts): request latency (a fastify onResponse
 * hook, src/api/plugins/metrics.ts) and the requests the protection layer refused (src/api/plugins/security.ts).
 */
import { Counter, Histogram, type Registry } from 'prom-client';

/** Route label of requests that matched no route (404s): one series, whatever the URL. */
export const UNMATCHED_ROUTE = '<unmatched>';

/** REST latency buckets, seconds. */
const HTTP_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The REST latency histogram and the refused-request counter. */
export class HttpSeries {
  private readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  private readonly rejected: Counter<'reason'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.httpDuration = new Histogram({
      name: 'volsurf_http_request_duration_seconds',
      help: `REST latency from request to response sent, per route pattern, method and status (${UNMATCHED_ROUTE}: no route)`,
      labelNames: ['method', 'route', 'status_code'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.rejected = new Counter({
      name: 'volsurf_http_rejected_total',
      help: 'Requests refused by the protection layer (src/api/plugins/security.ts): unauthorized (401), rate-limited (429), overloaded (503)',
      labelNames: ['reason'],
      registers,
    });
  }

  /** Record one REST response: route pattern (or {@link UNMATCHED_ROUTE}), method, status, seconds. */
  observe(method: string, route: string | undefined, statusCode: number, seconds: number): void {
    this.httpDuration.observe({ method, route: route ?? UNMATCHED_ROUTE, status_code: String(statusCode) }, seconds);
  }

  /** Record a request refused by the security plugin: `unauthorized`, `rate-limited`, `overloaded`. */
  observeRejection(reason: string): void {
    this.rejected.inc({ reason });
  }
}
