/**
 * Security and protection plugin of the REST API (issue 8; docs/spec/decisions.md "Errors"):
 *
 * - security headers on every response (CSP allowing only 'self' for scripts, so a dashboard at `/`
 *   that loads its own JS/CSS and the OpenAPI page keep working; nosniff; no framing; no referrer);
 *   `Cache-Control: no-store` on /api answers (market data is never cached by intermediaries);
 * - overload protection (@fastify/under-pressure): while the mean event-loop delay (or the
 *   event-loop utilization) is above its limit, every route except `/health` answers
 *   503 + `Retry-After` in the project's error shape;
 * - API keys: when keys are configured, nothing but the routes ./access.ts lists as public is served without
 *   one (deny by default): /api routes need header `X-API-Key` (401 otherwise); the dashboard's data routes
 *   (and any route not listed) take the header or the dashboard session cookie (./sessions.ts, set by
 *   POST /login, src/api/routes/login.ts); the dashboard page sends a browser without a session to /login
 *   (303); /metrics has its own guard (./metricsAuth.ts).
 *   Keys are compared in constant time: SHA-256 digests of equal length through
 *   `crypto.timingSafeEqual`, always against every configured key (no early exit), so neither the
 *   content nor the position of a key leaks through timing. Keys are never logged: the request
 *   carries only a key id (first 12 hex digits of the digest), and the service logger redacts the
 *   header (src/logger.ts);
 * - rate limiting (@fastify/rate-limit) of /api routes per API key, or per client IP without keys
 *   (also for requests with a wrong key, so key guessing is throttled): 429 + `Retry-After` (s) in
 *   the project's error shape. With keys, also the dashboard's data routes, /metrics and POST /login
 *   (login attempts count against the client address, like wrong keys on the API); a session counts
 *   against the budget of the key it was opened with.
 * Body size (413) and JSON-only (415) are fastify options of src/api/app.ts.
 *
 * Register it right after the error handler and before any route:
 * `await app.register(securityPlugin, options)`. It is not encapsulated (fastify-plugin), so its
 * hooks apply to the whole application.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import fastifyCookie from '@fastify/cookie';
import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import { ApiError } from '../errors.js';
import { LOGIN_PATH, requestAccess, selfAuthenticated } from './access.js';
import { SESSION_COOKIE, keyIdOf, type DashboardSessions } from './sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Id of the valid API key presented (12 hex digits of its SHA-256), null without one. Never the key. */
    apiKeyId: string | null;
    /** How the key was presented: header `X-API-Key`, or a dashboard session cookie; null without one. */
    authVia: 'header' | 'session' | null;
  }
}

/** Why the plugin refused a request (for metrics). */
export type SecurityRejection = 'unauthorized' | 'rate-limited' | 'overloaded';

/** Options of {@link securityPlugin}. */
export interface SecurityOptions {
  /** Valid API keys; empty or absent = no authentication. */
  readonly apiKeys?: readonly string[];
  /** Per-key (or per-IP) rate limit on /api routes: `max` requests per `timeWindowMs`; false = none. */
  readonly rateLimit?: { readonly max: number; readonly timeWindowMs: number } | false;
  /**
   * Overload protection; false = none. `maxEventLoopDelayMs`: mean event-loop delay over a sample
   * (0 = not checked); `maxEventLoopUtilization`: fraction 0..1 (0 = not checked); `sampleIntervalMs`
   * default 1000; `retryAfterS` default 5.
   */
  readonly overload?:
    | {
        readonly maxEventLoopDelayMs?: number;
        readonly maxEventLoopUtilization?: number;
        readonly sampleIntervalMs?: number;
        readonly retryAfterS?: number;
      }
    | false;
  /**
   * Verifies the dashboard session cookie (one per app, shared with the login routes); built by
   * src/api/app.ts from `apiKeys` and `sessionTtlS` when absent. Ignored without keys.
   */
  readonly sessions?: DashboardSessions | null;
  /** Lifetime of a dashboard session, s (default 12 h). */
  readonly sessionTtlS?: number;
  /** Send the security headers (default true). */
  readonly securityHeaders?: boolean;
  /** Called on every refused request (401, 429, 503 overload), e.g. to count it in metrics. */
  readonly onReject?: (reason: SecurityRejection, req: FastifyRequest) => void;
}

/** Header that carries the API key. */
export const API_KEY_HEADER = 'x-api-key';

/**
 * Content-Security-Policy: everything from the service's own origin only; inline styles allowed
 * (chart libraries and the OpenAPI page set style attributes), inline and foreign scripts not;
 * `data:` images (SVG icons); no framing, no plugins.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "base-uri 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

/** Headers set on every response (the subset of helmet's defaults that applies to an HTTP API behind TLS termination). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'x-dns-prefetch-control': 'off',
  'x-permitted-cross-domain-policies': 'none',
  'origin-agent-cluster': '?1',
};

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * A set of API keys held as SHA-256 digests. {@link KeyRing.match} compares a presented key with
 * every held key in constant time (equal-length digests, `timingSafeEqual`, no early exit).
 */
export class KeyRing {
  private readonly digests: readonly Buffer[];
  private readonly ids: readonly string[];

  constructor(keys: readonly string[]) {
    this.digests = keys.map(sha256);
    this.ids = keys.map(keyIdOf);
  }

  /** Number of keys held. */
  get size(): number {
    return this.digests.length;
  }

  /** Id (12 hex digits of the SHA-256) of the key equal to `presented`, or null. Never throws. */
  match(presented: unknown): string | null {
    if (typeof presented !== 'string' || presented.length === 0 || presented.length > 1024) return null;
    const d = sha256(presented);
    let found = -1;
    for (let i = 0; i < this.digests.length; i++) {
      // no early exit: every key is compared whatever the outcome
      if (timingSafeEqual(d, this.digests[i]!)) found = i;
    }
    return found >= 0 ? this.ids[found]! : null;
  }
}

/** True for the routes under /api (by the matched route pattern; by the decoded path for unknown routes). */
export function isApiRequest(req: FastifyRequest): boolean {
  const pattern = req.routeOptions.url;
  if (pattern) return pattern.startsWith('/api/') || pattern === '/api';
  let path = req.url.split('?')[0] ?? '';
  try {
    path = decodeURIComponent(path);
  } catch {
    /* keep it raw */
  }
  return /^\/+api(\/|$)/i.test(path);
}

const plugin: FastifyPluginAsync<SecurityOptions> = async (app: FastifyInstance, opts: SecurityOptions) => {
  const onReject = opts.onReject ?? (() => {});
  // 1. security headers, first, so that every answer (errors included) carries them
  if (opts.securityHeaders !== false) addSecurityHeaders(app);
  // 2. overload protection: cheapest refusal first
  await protectFromOverload(app, opts.overload, onReject);
  // 3. who is calling: the id of a valid key (header), or of the key a valid dashboard session was opened with
  const ring = new KeyRing(opts.apiKeys ?? []);
  const authRequired = ring.size > 0;
  const sessions = authRequired ? (opts.sessions ?? null) : null;
  await identifyCallers(app, ring, sessions);
  // 4. rate limit per key, else per IP (also throttles wrong keys)
  await limitRate(app, opts.rateLimit, onReject, authRequired);
  // 5. with keys, refuse whatever is not public without a valid credential (deny by default: ./access.ts)
  if (authRequired) refuseWithoutCredential(app, sessions, onReject);
};

/** The refusal hook of the options (counts a refusal). */
type OnReject = NonNullable<SecurityOptions['onReject']>;

/** The security headers on every answer (errors included), and `cache-control: no-store` on the /api ones. */
function addSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    if (isApiRequest(req)) reply.header('cache-control', 'no-store');
    done();
  });
}

/** With an event-loop delay or utilization limit: a 503 with retry-after past it (never for /health: liveness is not load). */
async function protectFromOverload(app: FastifyInstance, ov: SecurityOptions['overload'], onReject: OnReject): Promise<void> {
  if (!(ov && ((ov.maxEventLoopDelayMs ?? 0) > 0 || (ov.maxEventLoopUtilization ?? 0) > 0))) return;
  const retryAfterS = Math.max(1, Math.round(ov.retryAfterS ?? 5));
  await app.register(underPressure, {
    maxEventLoopDelay: ov.maxEventLoopDelayMs ?? 0,
    maxEventLoopUtilization: ov.maxEventLoopUtilization ?? 0,
    sampleInterval: ov.sampleIntervalMs ?? 1000,
    pressureHandler: (req: FastifyRequest, reply: FastifyReply, type: string) => {
      if (req.routeOptions.url === '/health') return undefined; // liveness is not load
      onReject('overloaded', req);
      reply.header('retry-after', String(retryAfterS));
      return Promise.reject(new ApiError(503, `service overloaded (${type}); retry in ${retryAfterS} s`, undefined, { 'retry-after': String(retryAfterS) }));
    },
  });
}

/**
 * `req.apiKeyId` and `req.authVia`: the id of a valid key in the header, else (with dashboard sessions, on the page,
 * protected and metrics routes) of the key a valid session cookie was opened with; null without keys.
 */
async function identifyCallers(app: FastifyInstance, ring: KeyRing, sessions: DashboardSessions | null): Promise<void> {
  app.decorateRequest('apiKeyId', null);
  app.decorateRequest('authVia', null);
  if (sessions) await app.register(fastifyCookie);
  if (ring.size === 0) return;
  app.addHook('onRequest', (req, reply, done) => {
    req.apiKeyId = ring.match(req.headers[API_KEY_HEADER]);
    req.authVia = req.apiKeyId ? 'header' : null;
    if (req.apiKeyId === null && sessions) {
      const access = requestAccess(req);
      if (access === 'page' || access === 'protected' || access === 'metrics') {
        const token = req.cookies[SESSION_COOKIE];
        req.apiKeyId = sessions.verify(token);
        req.authVia = req.apiKeyId ? 'session' : null;
        if (req.apiKeyId) {
          // a response still open when the session expires or is revoked (the event stream) is ended then
          const res = reply.raw;
          const unwatch = sessions.watch(token, () => res.destroy());
          res.once('close', unwatch);
        }
      }
    }
    done();
  });
}

/** The rate limit per key, else per IP (also throttles wrong keys), on the requests {@link rateLimited} names. */
async function limitRate(app: FastifyInstance, rl: SecurityOptions['rateLimit'], onReject: OnReject, authRequired: boolean): Promise<void> {
  if (!(rl && rl.max > 0)) return;
  await app.register(rateLimit, {
    global: false,
    max: rl.max,
    timeWindow: rl.timeWindowMs,
    keyGenerator: (req: FastifyRequest) => (req.apiKeyId ? `key:${req.apiKeyId}` : `ip:${req.ip}`),
    errorResponseBuilder: (req: FastifyRequest, ctx: { after: string; max: number; ttl: number }) => {
      onReject('rate-limited', req);
      const retryAfterS = Math.max(1, Math.ceil(ctx.ttl / 1000));
      const who = req.apiKeyId ? 'API key' : 'client address';
      return new ApiError(429, `rate limit exceeded: at most ${ctx.max} requests per ${rl.timeWindowMs} ms per ${who}; retry in ${retryAfterS} s`, undefined, {
        'retry-after': String(retryAfterS),
      });
    },
  });
  const limiter = app.rateLimit();
  app.addHook('onRequest', async (req, reply) => {
    if (rateLimited(req, authRequired)) await limiter.call(app, req, reply);
  });
}

/**
 * With keys: whatever is not public needs a valid credential (deny by default: ./access.ts); a browser page without
 * a session goes to the login page, anything else is a 401 saying what was missing.
 */
function refuseWithoutCredential(app: FastifyInstance, sessions: DashboardSessions | null, onReject: OnReject): void {
  app.addHook('onRequest', async (req, reply) => {
    const access = requestAccess(req);
    // public routes; /metrics has its own guard (./metricsAuth.ts), which also accepts a session
    if (access === 'public' || access === 'metrics') return;
    // the WebSocket API's handshake: the socket asks for public/auth itself (src/api/stream/rpc.ts)
    if (req.apiKeyId === null && selfAuthenticated(req)) return;
    if (req.apiKeyId !== null && (access !== 'api' || req.authVia === 'header')) return;
    if (access === 'page') {
      // a browser without a session: to the login page, coming back here afterwards
      const back = encodeURIComponent(req.url);
      return reply.header('cache-control', 'no-store').redirect(`${LOGIN_PATH}?next=${back}`, 303);
    }
    onReject('unauthorized', req);
    const presentedKey = req.headers[API_KEY_HEADER] !== undefined;
    if (access === 'api') {
      throw new ApiError(401, presentedKey ? 'invalid API key' : 'missing API key: send header X-API-Key', undefined, { 'www-authenticate': 'X-API-Key' });
    }
    const hadCookie = sessions !== null && req.cookies[SESSION_COOKIE] !== undefined;
    const message = presentedKey
      ? 'invalid API key'
      : hadCookie
        ? `session expired or logged out: log in again at ${LOGIN_PATH}`
        : `missing API key: send header X-API-Key or log in at ${LOGIN_PATH}`;
    throw new ApiError(401, message, undefined, { 'www-authenticate': 'X-API-Key' });
  });
}

/**
 * Whether the rate limit applies to `req`: /api routes (and unmatched /api paths) always; with keys also
 * the dashboard's data routes, /metrics and POST /login (key guessing through the form).
 */
function rateLimited(req: FastifyRequest, authRequired: boolean): boolean {
  if (isApiRequest(req)) return true;
  if (!authRequired) return false;
  const access = requestAccess(req);
  if (access === 'protected' || access === 'metrics') return true;
  return req.method === 'POST' && req.routeOptions.url === LOGIN_PATH;
}

/**
 * The security plugin (see the module docstring), named `security`. Not encapsulated (fastify-plugin): its hooks
 * apply to every route of the application.
 */
export const securityPlugin = fp(plugin, { name: 'security', fastify: '5.x' });
