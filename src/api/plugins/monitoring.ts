/**
 * Monitoring routes of the full API (src/api/app.ts calls this before the routes): GET /metrics with the REST
 * latency hook (./metrics.ts) and the live dashboard at / (../routes/dashboard.ts). The OpenAPI document and
 * /docs are registered separately (./openapi.ts), also when there is no monitoring (tests building the app).
 */
import type { FastifyInstance } from 'fastify';
import type { Monitoring } from '../../metrics/monitoring.js';
import type { SecurityOptions } from './security.js';
import { dashboardRoutes, type DashboardRouteOptions } from '../routes/dashboard.js';
import { installMetrics, type InstallMetricsOptions } from './metrics.js';

/** Options of {@link installMonitoring}: the dashboard's, and who may scrape /metrics (or none on this app). */
export interface MonitoringOptions extends DashboardRouteOptions {
  readonly metrics?: InstallMetricsOptions;
}

/** Install /metrics (with the latency hook on every route registered after) and the dashboard on `app`. */
export async function installMonitoring(app: FastifyInstance, monitoring: Monitoring, opts: MonitoringOptions = {}): Promise<void> {
  installMetrics(app, monitoring.metrics, opts.metrics ?? {});
  await app.register(dashboardRoutes(monitoring, opts));
}

/** `security` with its `onReject` hook also counting the refusal in the metrics (volsurf_http_rejected_total). */
export function withRejectionMetrics(security: SecurityOptions, monitoring: Monitoring | undefined): SecurityOptions {
  if (!monitoring) return security;
  const previous = security.onReject;
  return {
    ...security,
    onReject: (reason, req) => {
      previous?.(reason, req);
      monitoring.metrics.observeRejection(reason);
    },
  };
}
