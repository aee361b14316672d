/**
 * Dashboard login and logout (registered only when API keys are configured; issue 14 section 4):
 *
 * - `GET /login`: a small HTML form (no script, no build step; inline styles only, which the CSP allows)
 *   asking for an API key; `?next=/?source=OKX...` is where to go afterwards (a dashboard page path only).
 * - `POST /login` (form `key`, `next`; application/x-www-form-urlencoded, 4 KiB at most): a valid key sets
 *   the session cookie (`volsurf_session`: HttpOnly, SameSite=Strict, Path=/, Max-Age = the session
 *   lifetime, Secure when the request came over HTTPS or through a proxy saying `X-Forwarded-Proto: https`)
 *   holding a signed session token, never the key (./../plugins/sessions.ts), and answers 303 to `next`.
 *   A wrong key answers 401 with the form again and an error; attempts are rate limited per client
 *   address with the API's limit (429 with `Retry-After`, the form saying when to retry).
 * - `GET|POST /logout`: revokes the session in this process, clears the cookie, 303 to /login.
 * Every answer is `Cache-Control: no-store`.
 */
import formbody from '@fastify/formbody';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { routePlugin } from '../routeDefinition.js';
import { API_KEY_HEADER, KeyRing, type SecurityRejection } from '../plugins/security.js';
import { LOGIN_PATH, LOGOUT_PATH, safeNext } from '../plugins/access.js';
import { SESSION_COOKIE, type DashboardSessions } from '../plugins/sessions.js';

/** Options of {@link loginRoutes}. */
export interface LoginRouteOptions {
  /** Issues and verifies the session tokens (the same instance the security plugin verifies with). */
  readonly sessions: DashboardSessions;
  /** The configured API keys (each opens the dashboard). */
  readonly apiKeys: readonly string[];
  /** Called on a refused login (wrong key), e.g. to count it in metrics. */
  readonly onReject?: (reason: SecurityRejection, req: FastifyRequest) => void;
}

/** Largest login form accepted, bytes. */
const LOGIN_BODY_LIMIT = 4096;

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The login page: a form posting `key` (and `next`) to /login; `error` shown above it when given. */
export function loginPage(opts: { next?: string; error?: string | undefined; status?: string | undefined } = {}): string {
  const next = safeNext(opts.next);
  const error = opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : '';
  const status = opts.status ? `<p class="status" role="status">${escapeHtml(opts.status)}</p>` : '';
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="robots" content="noindex" />
    <title>Vol-surface service: log in</title>
    <link rel="icon" href="data:," />
    <style>
      body { font: 15px/1.4 system-ui, sans-serif; background: #0f1720; color: #e6edf3; display: grid; place-items: center; min-height: 100vh; margin: 0; }
      form { background: #17212b; padding: 24px 28px; border-radius: 8px; width: min(360px, 90vw); box-shadow: 0 2px 12px #0006; }
      h1 { font-size: 18px; margin: 0 0 4px; }
      p { margin: 6px 0 14px; color: #9fb0c0; }
      label { display: block; margin-bottom: 6px; }
      input[type=password] { width: 100%; box-sizing: border-box; padding: 8px; border-radius: 4px; border: 1px solid #3a4a5a; background: #0f1720; color: inherit; }
      button { margin-top: 14px; width: 100%; padding: 8px; border: 0; border-radius: 4px; background: #2f81f7; color: #fff; font-weight: 600; cursor: pointer; }
      .error { color: #ff7b72; } .status { color: #7ee787; }
      a { color: #79c0ff; }
    </style>
  </head>
  <body>
    <form method="post" action="${LOGIN_PATH}">
      <h1>Vol-surface service</h1>
      <p>The live dashboard needs an API key of this service.</p>
      ${error}${status}
      <label for="key">API key</label>
      <input id="key" name="key" type="password" autocomplete="current-password" required autofocus maxlength="1024" />
      <input type="hidden" name="next" value="${escapeHtml(next)}" />
      <button type="submit">Log in</button>
      <p><a href="/docs">API docs</a> (REST requests send the key as header X-API-Key)</p>
    </form>
  </body>
</html>
`;
}

/** True when the client reached the service over HTTPS (directly, or through a proxy saying so). */
function overHttps(req: FastifyRequest): boolean {
  if (req.protocol === 'https') return true;
  const fwd = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https';
}

function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.status(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page);
}

/** The login/logout routes (see the module docstring); a named fastify-plugin, `login`. */
export const loginRoutes = (opts: LoginRouteOptions): FastifyPluginAsyncZod =>
  routePlugin('login', async (app) => {
    const ring = new KeyRing(opts.apiKeys);
    const { sessions } = opts;
    // form bodies are accepted on these routes only (the API stays JSON-only)
    await app.register(formbody, { bodyLimit: LOGIN_BODY_LIMIT });

    // errors on these routes (429 from the rate limit, 413, 415, 400) answer the form with the reason
    app.setErrorHandler((err: Error & { statusCode?: number; headers?: Record<string, string> }, req, reply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) req.log.error({ err }, 'unhandled error on the login page');
      if (err.headers) reply.headers(err.headers);
      const retry = err.headers?.['retry-after'];
      const message =
        status === 429
          ? `Too many attempts from this address: retry in ${retry ?? 'a few'} s.`
          : status === 415
            ? 'The login form must be sent as application/x-www-form-urlencoded.'
            : status === 500
              ? 'Internal error.'
              : err.message;
      const body = req.body as { next?: unknown } | undefined;
      return sendPage(reply, status, loginPage({ next: typeof body?.next === 'string' ? body.next : undefined, error: message }));
    });

    app.get(LOGIN_PATH, { schema: { hide: true } }, async (req, reply) => {
      const q = req.query as { next?: unknown; loggedOut?: unknown };
      const next = typeof q.next === 'string' ? q.next : undefined;
      // already logged in (valid cookie): straight to the dashboard
      if (sessions.verify(req.cookies[SESSION_COOKIE])) return reply.header('cache-control', 'no-store').redirect(safeNext(next), 303);
      return sendPage(reply, 200, loginPage({ next, status: q.loggedOut !== undefined ? 'Logged out.' : undefined }));
    });

    app.post(LOGIN_PATH, { schema: { hide: true } }, async (req, reply) => {
      const body = (req.body ?? {}) as { key?: unknown; next?: unknown };
      const next = typeof body.next === 'string' ? body.next : undefined;
      // a script may log in with the header instead of the form field
      const presented = typeof body.key === 'string' ? body.key.trim() : req.headers[API_KEY_HEADER];
      const keyId = ring.match(presented);
      if (!keyId) {
        opts.onReject?.('unauthorized', req);
        const missing = presented === undefined || presented === '';
        return sendPage(reply, 401, loginPage({ next, error: missing ? 'Enter an API key.' : 'Wrong API key.' }));
      }
      const { token } = sessions.issue(keyId);
      req.log.info({ keyId }, 'dashboard login');
      reply.setCookie(SESSION_COOKIE, token, {
        path: '/',
        httpOnly: true,
        sameSite: 'strict',
        secure: overHttps(req),
        maxAge: Math.round(sessions.ttlS),
      });
      return reply.header('cache-control', 'no-store').redirect(safeNext(next), 303);
    });

    const logout = async (req: FastifyRequest, reply: FastifyReply) => {
      sessions.revoke(req.cookies[SESSION_COOKIE]);
      reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict', secure: overHttps(req) });
      return reply.header('cache-control', 'no-store').redirect(`${LOGIN_PATH}?loggedOut`, 303);
    };
    app.get(LOGOUT_PATH, { schema: { hide: true } }, logout);
    app.post(LOGOUT_PATH, { schema: { hide: true } }, logout);
  });
