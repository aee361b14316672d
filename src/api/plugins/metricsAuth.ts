/**
 * Who may scrape GET /metrics (issue 14 section 4), wherever it is served (the API port, the metrics-only
 * listener of METRICS_PORT, the ROLE=calibrator health app):
 *
 * | configured                 | accepted                                                                  |
 * |----------------------------|---------------------------------------------------------------------------|
 * | `METRICS_KEY`              | `Authorization: Bearer <METRICS_KEY>` only (Prometheus `authorization` scrape config) |
 * | no METRICS_KEY, API keys   | an API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`, or a dashboard session (cookie) |
 * | neither                    | anyone (the embedded default on loopback)                                 |
 *
 * Refusal: 401 in the error shape with `WWW-Authenticate: Bearer realm="metrics"`. Keys are compared in
 * constant time (KeyRing: SHA-256 digests, timingSafeEqual, no early exit).
 * Source: RFC 6750 section 2.1 (Bearer in the Authorization header), Prometheus configuration reference
 * (`scrape_config.authorization`, `credentials_file`).
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiError } from '../errors.js';
import { API_KEY_HEADER, KeyRing, type SecurityRejection } from './security.js';

/** Options of {@link metricsGuard}. */
export interface MetricsAuthOptions {
  /** The scraper's own key; when set it is the only credential accepted. */
  readonly metricsKey?: string | undefined;
  /** The API keys; without a METRICS_KEY any of them (or a dashboard session) opens /metrics. */
  readonly apiKeys?: readonly string[] | undefined;
  /** Called on a refused scrape, e.g. to count it. */
  readonly onReject?: ((reason: SecurityRejection, req: FastifyRequest) => void) | undefined;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
export function bearerToken(header: unknown): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}

/** True when scraping needs a credential under `opts`. */
export function metricsProtected(opts: MetricsAuthOptions): boolean {
  return Boolean(opts.metricsKey) || (opts.apiKeys?.length ?? 0) > 0;
}

/**
 * The onRequest hook guarding /metrics per the module table, or null when /metrics is open.
 * A dashboard session counts through `req.apiKeyId`, which the security plugin sets from the cookie.
 */
export function metricsGuard(opts: MetricsAuthOptions): onRequestHookHandler | null {
  if (!metricsProtected(opts)) return null;
  const metricsRing = opts.metricsKey ? new KeyRing([opts.metricsKey]) : null;
  const apiRing = new KeyRing(opts.apiKeys ?? []);
  return (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const bearer = bearerToken(req.headers.authorization);
    let ok: boolean;
    if (metricsRing) ok = metricsRing.match(bearer) !== null;
    else ok = (req.apiKeyId ?? null) !== null || apiRing.match(bearer) !== null || apiRing.match(req.headers[API_KEY_HEADER]) !== null;
    if (ok) {
      done();
      return;
    }
    opts.onReject?.('unauthorized', req);
    const how = metricsRing ? 'send header Authorization: Bearer <METRICS_KEY>' : 'send an API key as header Authorization: Bearer <key> or X-API-Key';
    const presented = req.headers.authorization !== undefined || (!metricsRing && req.headers[API_KEY_HEADER] !== undefined);
    done(new ApiError(401, presented ? `invalid metrics credential: ${how}` : `missing metrics credential: ${how}`, undefined, { 'www-authenticate': 'Bearer realm="metrics"' }));
  };
}
