/**
 * Who may call which route when API keys are configured (issue 14 section 4: "with API keys on, nothing is
 * served without one"). Deny by default: a route is open only when this table says so, so a route added
 * later needs a key without anyone remembering to protect it (test/security/access.test.ts enumerates every
 * registered route and checks it).
 *
 * | access      | routes                                                                    | without a credential |
 * |-------------|---------------------------------------------------------------------------|----------------------|
 * | `public`    | /health, /ready, /openapi.json, /asyncapi.json, /docs and below, /login, /logout, | served        |
 * |             | /dashboard/assets/*, /dashboard/vendor/* (the page's code, no data)       |                      |
 * | `page`      | / and /dashboard (the dashboard page)                                     | 303 to /login        |
 * | `metrics`   | /metrics                                                                  | 401 (its own guard: ./metricsAuth.ts) |
 * | `api`       | /api/... (the REST contract)                                              | 401; header `X-API-Key` only |
 * | `protected` | everything else: /dashboard/api/state, /dashboard/api/stream, any new route | 401; header `X-API-Key` or the dashboard session cookie |
 *
 * One exception inside `api`: a WebSocket upgrade of /api/v1/ws is let through without a key
 * ({@link selfAuthenticated}); the socket then serves nothing before `public/auth` (src/api/stream/rpc.ts).
 * A plain GET of that path is `api` like the rest.
 * The REST API takes the header only (the contract's key; a cookie on /api would make it reachable by a
 * browser's ambient credentials). The session cookie opens the dashboard's own data routes and the page.
 * Unmatched paths: under /api they are `api` (401 without a key, so they do not reveal which routes
 * exist), elsewhere `public` (404, no data).
 */
import type { FastifyRequest } from 'fastify';

/** Access class of a route (see the module table). */
export type RouteAccess = 'public' | 'page' | 'metrics' | 'api' | 'protected';

/** Routes open to anyone, by exact pattern. */
export const PUBLIC_ROUTES: readonly string[] = ['/health', '/ready', '/openapi.json', '/asyncapi.json', '/login', '/logout'];
/** Route prefixes open to anyone: the API documentation and the dashboard's static code. */
export const PUBLIC_PREFIXES: readonly string[] = ['/docs/', '/dashboard/assets/', '/dashboard/vendor/'];
/** The dashboard page: a browser without a session is sent to the login page. */
export const PAGE_ROUTES: readonly string[] = ['/', '/dashboard'];
/** Where the dashboard logs in. */
export const LOGIN_PATH = '/login';
/** Where the dashboard logs out. */
export const LOGOUT_PATH = '/logout';

/** Access class of a route pattern (as registered: `/dashboard/api/state`, `/docs/static/*`). */
export function routeAccess(pattern: string): RouteAccess {
  if (pattern === '/api' || pattern.startsWith('/api/')) return 'api';
  if (pattern === '/metrics') return 'metrics';
  if (PAGE_ROUTES.includes(pattern)) return 'page';
  if (PUBLIC_ROUTES.includes(pattern) || pattern === '/docs' || PUBLIC_PREFIXES.some((p) => pattern.startsWith(p))) return 'public';
  return 'protected';
}

/** Access class of a request: by its matched route pattern; unmatched paths by the decoded path (see the module docstring). */
export function requestAccess(req: FastifyRequest): RouteAccess {
  const pattern = req.routeOptions.url;
  if (pattern) return routeAccess(pattern);
  let path = req.url.split('?')[0] ?? '';
  try {
    path = decodeURIComponent(path);
  } catch {
    /* keep it raw */
  }
  return /^\/+api(\/|$)/i.test(path) ? 'api' : 'public';
}

/** Routes whose WebSocket upgrade checks the credential itself (public/auth as first message). */
export const SELF_AUTHENTICATED_UPGRADES: readonly string[] = ['/api/v1/ws'];

/** A WebSocket upgrade request of a route that authenticates in-band ({@link SELF_AUTHENTICATED_UPGRADES}). */
export function selfAuthenticated(req: FastifyRequest): boolean {
  const pattern = req.routeOptions.url;
  return !!pattern && SELF_AUTHENTICATED_UPGRADES.includes(pattern) && req.method === 'GET' && String(req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/**
 * A safe place to return to after login: a local path (`/`, `/?source=OKX...`) of a page route, else `/`.
 * Never an absolute or protocol-relative URL (no open redirect).
 */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string' || next.length > 512) return '/';
  const [path, ...rest] = next.split('?');
  if (!PAGE_ROUTES.includes(path ?? '')) return '/';
  const query = rest.join('?');
  if (/[\u0000-\u001f\u007f\\]/.test(query)) return '/';
  return query ? `${path}?${query}` : path!;
}
