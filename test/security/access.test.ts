/**
 * With API keys on, nothing is served without one (issue 14 section 4): every route the app registers is
 * enumerated (app.registeredRoutes, filled by an onRoute hook from the first route on) and called without a
 * credential over real HTTP on 127.0.0.1; only the documented public routes answer, the dashboard page
 * sends the browser to the login page, everything else is 401. Then the dashboard login end to end over
 * real HTTP (cookie attributes, state and SSE stream with and without the cookie, logout, expiry on an
 * injected clock, tampering, open redirects, rate limit of wrong keys), keys in the logs, and /metrics
 * under METRICS_KEY / the API keys / its own listener. Keys off: everything open as before.
 * The cache holds the surface calibrated from the REAL recorded Deribit BTC chain (test/helpers/realChainCache.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from '../../src/api/app.js';
import { PUBLIC_PREFIXES, PUBLIC_ROUTES, routeAccess, safeNext } from '../../src/api/plugins/access.js';
import { buildMetricsApp } from '../../src/api/plugins/metrics.js';
import { bearerToken } from '../../src/api/plugins/metricsAuth.js';
import type { SecurityOptions } from '../../src/api/plugins/security.js';
import { metricsKeyFromConfig } from '../../src/api/plugins/securityConfig.js';
import { DashboardSessions, SESSION_COOKIE, keyIdOf } from '../../src/api/plugins/sessions.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { LOG_REDACT } from '../../src/logger.js';
import { Monitoring } from '../../src/metrics/monitoring.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';
import { startTestService } from '../helpers/service.js';
import { FakeFeed, parseProm } from '../metrics/helpers.js';

const KEY_A = 'alpha-key-0123456789abcdef';
const KEY_B = 'bravo-key-fedcba9876543210';
const METRICS_KEY = 'metrics-key-0123456789abcdef';
const STATE = '/dashboard/api/state?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI';
const STREAM = '/dashboard/api/stream?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI';
const SURFACE = '/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI';

/** The routes that may answer without a key, by pattern: a new public route must be added here on purpose. */
const EXPECTED_PUBLIC = new Set([
  '/health',
  '/ready',
  '/openapi.json',
  '/asyncapi.json',
  '/login',
  '/logout',
  '/docs',
  '/docs/',
  '/docs/json',
  '/docs/yaml',
  '/docs/static/*',
  '/docs/uiConfig',
  '/docs/initOAuth',
  '/docs/static/index.html',
  '/docs/static/swagger-initializer.js',
  '/dashboard/assets/*',
  '/dashboard/vendor/*',
]);

let market: RealChainCache;
const apps: FastifyInstance[] = [];
const monitors: Monitoring[] = [];

beforeAll(() => {
  market = realChainCache();
});
afterAll(async () => {
  for (const a of apps) await a.close();
  for (const m of monitors) m.close();
});

/** buildApp over the real chain with monitoring (dashboard, /metrics), listening on 127.0.0.1; returns the app and its base URL. */
async function serve(security: SecurityOptions, extra: Partial<AppOptions> = {}): Promise<{ app: FastifyInstance; base: string }> {
  const monitoring = new Monitoring({ cache: market.cache, feeds: [new FakeFeed('DERIBIT')], clock: market.clock, defaultMetrics: false });
  monitors.push(monitoring);
  const app = await buildApp({ cache: market.cache, monitoring, security, ...extra });
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}

/** One request over HTTP without following redirects; the body is read unless it is an event stream (then the first `state` event is awaited). */
async function call(base: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const ac = new AbortController();
  const guard = setTimeout(() => ac.abort(), 20_000);
  try {
    const res = await fetch(base + path, { method: init.method ?? 'GET', headers: init.headers ?? {}, body: init.body, redirect: 'manual', signal: ac.signal });
    let body = '';
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      while (!/event: state\ndata: .*\n\n/.test(body)) {
        const { value, done } = await reader.read();
        if (done) break;
        body += dec.decode(value, { stream: true });
      }
      ac.abort();
    } else {
      body = await res.text();
    }
    return { status: res.status, headers: res.headers, body };
  } finally {
    clearTimeout(guard);
  }
}

/** Open the event stream with `cookie`; resolves once the first `state` event came, with a promise of the stream's end. */
async function openStream(base: string, cookie: string): Promise<{ status: number; firstState: string; ended: Promise<'ended'> }> {
  const ac = new AbortController();
  const res = await fetch(base + STREAM, { headers: { cookie }, signal: ac.signal });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  while (!/event: state\ndata: .*\n\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
  }
  const ended = (async () => {
    const guard = setTimeout(() => ac.abort(), 20_000);
    try {
      for (;;) {
        const { done } = await reader.read();
        if (done) return 'ended' as const;
      }
    } catch (err) {
      // the server destroying the socket surfaces as a read error; our own abort after 20 s is a failure
      if (ac.signal.aborted) throw new Error('stream still open after 20 s');
      return 'ended' as const;
    } finally {
      clearTimeout(guard);
    }
  })();
  return { status: res.status, firstState: text, ended };
}

/** A concrete path for a route pattern (wildcards and parameters filled with something that exists). */
function concrete(pattern: string): string {
  if (pattern === '/dashboard/assets/*') return '/dashboard/assets/dashboard.js';
  if (pattern === '/dashboard/vendor/*') return '/dashboard/vendor/echarts.min.js';
  if (pattern === '/dashboard/api/state') return STATE;
  if (pattern === '/dashboard/api/stream') return STREAM;
  return pattern.replace(/\*$/, 'index.html').replace(/:[A-Za-z_]+/g, 'x');
}

/** The value of the session cookie set by a response, or null. */
function sessionCookie(headers: Headers): { value: string; attributes: string } | null {
  for (const c of headers.getSetCookie()) {
    const [pair, ...attrs] = c.split(';');
    const [name, ...v] = pair!.split('=');
    if (name!.trim() === SESSION_COOKIE) return { value: v.join('='), attributes: attrs.join(';') };
  }
  return null;
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

async function login(base: string, key: string, next = '/'): Promise<string> {
  const r = await call(base, '/login', form({ key, next }));
  expect(r.status).toBe(303);
  const c = sessionCookie(r.headers);
  expect(c).not.toBeNull();
  return c!.value;
}

describe('DashboardSessions: signed, expiring, revocable tokens that are not the key', () => {
  let nowMs = 1_800_000_000_000;
  const sessions = new DashboardSessions([KEY_A, KEY_B], { ttlS: 3600, now: () => nowMs });
  it('a token verifies to the id of the key it was issued for, until it expires', () => {
    const a = sessions.issue(keyIdOf(KEY_A));
    expect(a.expiresAtS).toBe(1_800_000_000 + 3600);
    expect(a.token).not.toContain(KEY_A);
    expect(sessions.verify(a.token)).toBe(keyIdOf(KEY_A));
    expect(sessions.verify(sessions.issue(keyIdOf(KEY_B)).token)).toBe(keyIdOf(KEY_B));
    nowMs += 3599_000;
    expect(sessions.verify(a.token)).toBe(keyIdOf(KEY_A));
    nowMs += 1000;
    expect(sessions.verify(a.token)).toBeNull();
  });
  it('tampered, foreign and malformed tokens are refused; a removed key ends its sessions', () => {
    const t = sessions.issue(keyIdOf(KEY_A)).token;
    const parts = t.split('.');
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('A') ? 'B' : 'A');
    expect(sessions.verify([...parts.slice(0, 4), flip(parts[4]!)].join('.'))).toBeNull();
    expect(sessions.verify([parts[0], parts[1], String(Number(parts[2]) + 86400), parts[3], parts[4]].join('.'))).toBeNull();
    expect(sessions.verify([parts[0], keyIdOf(KEY_B), ...parts.slice(2)].join('.'))).toBeNull();
    for (const bad of [undefined, null, 7, '', 'v1', t + '.x', 'v2' + t.slice(2), t.replace(/\./g, '-'), 'x'.repeat(300)]) expect(sessions.verify(bad)).toBeNull();
    // another process with the same keys accepts it (stateless); without key A it does not
    expect(new DashboardSessions([KEY_B, KEY_A], { now: () => nowMs }).verify(t)).toBe(keyIdOf(KEY_A));
    expect(new DashboardSessions([KEY_B], { now: () => nowMs }).verify(t)).toBeNull();
    expect(() => sessions.issue('000000000000')).toThrow(/unknown key id/);
    expect(() => new DashboardSessions([KEY_A], { ttlS: 0 })).toThrow(/ttlS/);
  });
  it('revocation holds until the token would have expired, then is forgotten', () => {
    const t = sessions.issue(keyIdOf(KEY_A)).token;
    sessions.revoke(t);
    sessions.revoke('garbage');
    expect(sessions.verify(t)).toBeNull();
    expect(sessions.revokedCount()).toBe(1);
    nowMs += 3600_000;
    expect(sessions.revokedCount()).toBe(0);
  });
});

describe('access table and helpers', () => {
  it('classifies by pattern, deny by default', () => {
    expect(routeAccess('/api/v1/global/data/surface')).toBe('api');
    expect(routeAccess('/dashboard/api/state')).toBe('protected');
    expect(routeAccess('/dashboard/api/stream')).toBe('protected');
    expect(routeAccess('/metrics')).toBe('metrics');
    expect(routeAccess('/')).toBe('page');
    expect(routeAccess('/dashboard')).toBe('page');
    expect(routeAccess('/anything/new')).toBe('protected');
    expect(routeAccess('/docsX')).toBe('protected');
    expect(routeAccess('/healthz')).toBe('protected');
    expect(routeAccess('/dashboard/assetsX')).toBe('protected');
    for (const r of PUBLIC_ROUTES) expect(routeAccess(r)).toBe('public');
    for (const p of PUBLIC_PREFIXES) expect(routeAccess(`${p}x`)).toBe('public');
  });
  it('safeNext keeps dashboard page paths only (no open redirect)', () => {
    expect(safeNext('/')).toBe('/');
    expect(safeNext('/?source=OKX&baseCurrency=BTC')).toBe('/?source=OKX&baseCurrency=BTC');
    expect(safeNext('/dashboard')).toBe('/dashboard');
    for (const bad of ['//evil.example', 'https://evil.example/', '/\\evil.example', '/api/v1/global/data/surface', '/metrics', 'javascript:alert(1)', '', undefined, 5, '/?a=\r\nSet-Cookie:x'])
      expect(safeNext(bad), String(bad)).toBe('/');
  });
  it('bearerToken reads RFC 6750 headers', () => {
    expect(bearerToken(`Bearer ${METRICS_KEY}`)).toBe(METRICS_KEY);
    expect(bearerToken(`bearer   ${METRICS_KEY}`)).toBe(METRICS_KEY);
    expect(bearerToken(`Basic ${METRICS_KEY}`)).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});

describe('with API keys on, no route answers data without a key (every registered route, over HTTP)', () => {
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    ({ app, base } = await serve({ apiKeys: [KEY_A, KEY_B] }));
  });

  it('the app registers the routes the test expects to walk', () => {
    const urls = new Set(app.registeredRoutes.map((r) => r.url));
    for (const u of ['/', '/dashboard', '/dashboard/api/state', '/dashboard/api/stream', '/metrics', '/api/v1/global/data/surface', '/api/v1/global/data/iV/byStrike', '/login', '/logout', '/health', '/openapi.json', '/docs']) {
      expect(urls.has(u), u).toBe(true);
    }
    expect(app.registeredRoutes.length).toBeGreaterThan(30);
  });

  it('without a credential: public routes only (the expected set), the page redirects to /login, all else 401', async () => {
    const seen: string[] = [];
    for (const { method, url } of app.registeredRoutes) {
      const access = routeAccess(url);
      const r = await call(base, concrete(url), { method, headers: method === 'POST' ? { 'content-type': 'application/json' } : {}, ...(method === 'POST' ? { body: '[]' } : {}) });
      const what = `${method} ${url} (${access})`;
      seen.push(what);
      if (access === 'public') {
        expect(EXPECTED_PUBLIC.has(url), `${what} is public but not in the expected list`).toBe(true);
        // a login without a key is refused with the form again; every other public route answers
        if (method === 'POST' && url === '/login') expect([r.status, r.headers.get('content-type')], what).toEqual([401, 'text/html; charset=utf-8']);
        else expect(r.status, what).not.toBe(401);
      } else if (access === 'page') {
        expect(r.status, what).toBe(303);
        expect(r.headers.get('location'), what).toMatch(/^\/login\?next=/);
        expect(r.body, what).not.toContain('echarts');
      } else {
        expect(r.status, what).toBe(401);
        if (method !== 'HEAD') expect(JSON.parse(r.body).statusCode, what).toBe(401);
        // nothing of the market in a refusal
        expect(r.body, what).not.toMatch(/forward|impliedVolatility|surface"/i);
      }
    }
    expect(seen.length).toBe(app.registeredRoutes.length);
  });

  it('with header X-API-Key every non-public route answers (no 401); the REST API refuses the cookie alone', async () => {
    const cookie = `${SESSION_COOKIE}=${await login(base, KEY_A)}`;
    for (const { method, url } of app.registeredRoutes) {
      const access = routeAccess(url);
      if (access === 'public' || method === 'HEAD') continue;
      const post = method === 'POST' ? { body: '[]' } : {};
      const withKey = await call(base, concrete(url), { method, headers: { 'x-api-key': KEY_B, 'content-type': 'application/json' }, ...post });
      expect(withKey.status, `${method} ${url} with key`).not.toBe(401);
      expect(withKey.status, `${method} ${url} with key`).not.toBe(303);
      const withCookie = await call(base, concrete(url), { method, headers: { cookie, 'content-type': 'application/json' }, ...post });
      if (access === 'api') expect(withCookie.status, `${method} ${url} with cookie`).toBe(401);
      // 200, or 400 for an empty batch; GET /dashboard is a 302 to /
      else expect([200, 302, 400], `${method} ${url} with cookie`).toContain(withCookie.status);
    }
  });

  it('a route added later is protected without anyone listing it', async () => {
    const extra = await buildApp({ cache: market.cache, security: { apiKeys: [KEY_A] } });
    apps.push(extra);
    extra.get('/reports/surface-dump', async () => ({ surface: 'data' }));
    expect((await extra.inject({ method: 'GET', url: '/reports/surface-dump' })).statusCode).toBe(401);
    expect((await extra.inject({ method: 'GET', url: '/reports/surface-dump', headers: { 'x-api-key': KEY_A } })).statusCode).toBe(200);
  });

  it('/openapi.json and the /docs page declare the X-API-Key scheme with keys on (so "Try it out" sends it), and not without', async () => {
    const keyed = await buildApp({ cache: market.cache, security: { apiKeys: [KEY_A] } });
    const open = await buildApp({ cache: market.cache });
    apps.push(keyed, open);
    for (const url of ['/openapi.json', '/docs/json']) {
      const doc = (await keyed.inject({ method: 'GET', url })).json() as {
        components: { securitySchemes?: Record<string, { type: string; in: string; name: string }> };
        paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
      };
      expect(doc.components.securitySchemes?.ApiKeyAuth, url).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
      const apiOps = Object.entries(doc.paths).filter(([p]) => p.startsWith('/api/')).flatMap(([, ops]) => Object.values(ops));
      expect(apiOps.length).toBeGreaterThanOrEqual(10);
      for (const op of apiOps) {
        expect(op.security).toEqual([{ ApiKeyAuth: [] }]);
        expect(Object.keys(op.responses), JSON.stringify(op).slice(0, 200)).toContain('401');
      }
      // the probes stay open and undeclared
      expect(doc.paths['/health']?.get?.security).toBeUndefined();
    }
    const plain = (await open.inject({ method: 'GET', url: '/openapi.json' })).json() as { components: { securitySchemes?: unknown }; paths: Record<string, Record<string, { security?: unknown }>> };
    expect(plain.components.securitySchemes).toBeUndefined();
    expect(Object.values(plain.paths).flatMap((ops) => Object.values(ops)).every((op) => op.security === undefined)).toBe(true);
  });
});

describe('dashboard login end to end over HTTP', () => {
  let base: string;
  let nowMs = Date.UTC(2026, 4, 26, 19, 30);
  beforeAll(async () => {
    const sessions = new DashboardSessions([KEY_A, KEY_B], { ttlS: 3600, now: () => nowMs });
    ({ base } = await serve({ apiKeys: [KEY_A, KEY_B], sessions }));
  });

  it('/ without a session: 303 to the login form, which posts the key to /login', async () => {
    const r = await call(base, '/?source=DERIBIT&baseCurrency=BTC');
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/login?next=%2F%3Fsource%3DDERIBIT%26baseCurrency%3DBTC');
    const page = await call(base, r.headers.get('location')!);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.body).toMatch(/<form method="post" action="\/login">/);
    expect(page.body).toContain('name="key" type="password"');
    expect(page.body).toContain('value="/?source=DERIBIT&#38;baseCurrency=BTC"');
    expect(page.body).not.toMatch(/<script/);
  });

  it('a wrong key gets the form again with an error and no cookie', async () => {
    for (const key of ['wrong-key-0123456789abcdef', KEY_A.slice(0, -1), '']) {
      const r = await call(base, '/login', form({ key, next: '/' }));
      expect(r.status).toBe(401);
      expect(r.body).toMatch(key ? /Wrong API key/ : /Enter an API key/);
      expect(r.body).toContain('<form');
      expect(sessionCookie(r.headers)).toBeNull();
    }
  });

  it('the right key: HttpOnly SameSite=Strict cookie holding a session (not the key), 303 back; state, stream and page answer with it, 401 without', async () => {
    const r = await call(base, '/login', form({ key: KEY_A, next: '/?source=DERIBIT' }));
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/?source=DERIBIT');
    const c = sessionCookie(r.headers)!;
    expect(c.value).not.toContain(KEY_A);
    expect(decodeURIComponent(c.value)).not.toContain(KEY_A);
    expect(c.value).toContain(keyIdOf(KEY_A));
    expect(c.attributes).toMatch(/HttpOnly/i);
    expect(c.attributes).toMatch(/SameSite=Strict/i);
    expect(c.attributes).toMatch(/Path=\//);
    expect(c.attributes).toMatch(/Max-Age=3600/);
    expect(c.attributes).not.toMatch(/Secure/i);
    const cookie = `${SESSION_COOKIE}=${c.value}`;

    const page = await call(base, '/', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('/dashboard/vendor/echarts.min.js');

    const state = await call(base, STATE, { headers: { cookie } });
    expect(state.status).toBe(200);
    const s = JSON.parse(state.body);
    expect(s.selection).toMatchObject({ source: 'DERIBIT', baseCurrency: 'BTC', quoteCurrency: 'USD' });
    expect(s.surface).not.toBeNull();
    // the same numbers the keyed REST API serves
    const rest = JSON.parse((await call(base, SURFACE, { headers: { 'x-api-key': KEY_B } })).body);
    expect(JSON.stringify(s)).toContain(String(rest.expiries[0].forwardPrice));

    const stream = await call(base, STREAM, { headers: { cookie } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const event = /event: state\ndata: (.*)\n\n/.exec(stream.body);
    expect(event).not.toBeNull();
    expect(JSON.parse(event![1]!).selection.source).toBe('DERIBIT');

    for (const path of [STATE, STREAM]) {
      const none = await call(base, path);
      expect(none.status).toBe(401);
      expect(JSON.parse(none.body).message).toMatch(/log in at \/login/);
      expect((await call(base, path, { headers: { cookie: `${SESSION_COOKIE}=${c.value.slice(0, -2)}xx` } })).status).toBe(401);
    }
    // the header works on the dashboard routes for scripts
    expect((await call(base, STATE, { headers: { 'x-api-key': KEY_B } })).status).toBe(200);
    expect((await call(base, STREAM, { headers: { 'x-api-key': KEY_B } })).status).toBe(200);
    // the cookie also opens /metrics (no METRICS_KEY here), not the REST API
    expect((await call(base, '/metrics', { headers: { cookie } })).status).toBe(200);
    expect((await call(base, SURFACE, { headers: { cookie } })).status).toBe(401);
    // already logged in: /login goes straight back
    const again = await call(base, '/login?next=%2F', { headers: { cookie } });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/');
  });

  it('logout revokes the session and clears the cookie', async () => {
    const token = await login(base, KEY_B);
    const cookie = `${SESSION_COOKIE}=${token}`;
    expect((await call(base, STATE, { headers: { cookie } })).status).toBe(200);
    const out = await call(base, '/logout', { method: 'POST', headers: { cookie } });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/login?loggedOut');
    const cleared = sessionCookie(out.headers)!;
    expect(cleared.value).toBe('');
    expect(cleared.attributes).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/i);
    // the old token no longer works even if a client kept it
    const after = await call(base, STATE, { headers: { cookie } });
    expect(after.status).toBe(401);
    expect(JSON.parse(after.body).message).toMatch(/session expired or logged out/);
    expect((await call(base, '/', { headers: { cookie } })).status).toBe(303);
    expect((await call(base, '/login?loggedOut')).body).toContain('Logged out.');
    // GET /logout too (typed in the address bar)
    const t2 = await login(base, KEY_B);
    expect((await call(base, '/logout', { headers: { cookie: `${SESSION_COOKIE}=${t2}` } })).status).toBe(303);
    expect((await call(base, STATE, { headers: { cookie: `${SESSION_COOKIE}=${t2}` } })).status).toBe(401);
  });

  it('sessions expire after their lifetime (injected clock)', async () => {
    const token = await login(base, KEY_A);
    const cookie = `${SESSION_COOKIE}=${token}`;
    nowMs += 3599_000;
    expect((await call(base, STATE, { headers: { cookie } })).status).toBe(200);
    nowMs += 1_000;
    const expired = await call(base, STATE, { headers: { cookie } });
    expect(expired.status).toBe(401);
    expect(JSON.parse(expired.body).message).toMatch(/session expired/);
    expect((await call(base, '/', { headers: { cookie } })).status).toBe(303);
    expect((await call(base, '/metrics', { headers: { cookie } })).status).toBe(401);
  });

  it('an open event stream ends when its session is logged out, and when it expires', async () => {
    const cookie = `${SESSION_COOKIE}=${await login(base, KEY_A)}`;
    const s1 = await openStream(base, cookie);
    expect(s1.status).toBe(200);
    expect(s1.firstState).toMatch(/event: state/);
    expect((await call(base, '/logout', { method: 'POST', headers: { cookie } })).status).toBe(303);
    await expect(s1.ended).resolves.toBe('ended');

    // a session with 1.5 s left (injected clock): the stream opened with it ends when it expires
    const cookie2 = `${SESSION_COOKIE}=${await login(base, KEY_B)}`;
    nowMs += 3598_500;
    const s2 = await openStream(base, cookie2);
    expect(s2.status).toBe(200);
    await expect(s2.ended).resolves.toBe('ended');
    nowMs += 1_500;
    expect((await call(base, STATE, { headers: { cookie: cookie2 } })).status).toBe(401);
    // a stream opened with the header is not tied to any session
    const ac = new AbortController();
    const keyed = await fetch(base + STREAM, { headers: { 'x-api-key': KEY_A }, signal: ac.signal });
    expect(keyed.status).toBe(200);
    ac.abort();
  });

  it('no open redirect after login; Secure behind an HTTPS proxy', async () => {
    for (const next of ['//evil.example/', 'https://evil.example/', '/\\evil.example', '/api/v1/global/data/surface']) {
      const r = await call(base, '/login', form({ key: KEY_A, next }));
      expect(r.status).toBe(303);
      expect(r.headers.get('location'), next).toBe('/');
    }
    const proxied = await call(base, '/login', { ...form({ key: KEY_A }), headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' } });
    expect(sessionCookie(proxied.headers)!.attributes).toMatch(/Secure/i);
  });
});

describe('login attempts are rate limited like the API', () => {
  it('per client address: wrong keys then 429 with Retry-After on the form; another address is not limited', async () => {
    const app = await buildApp({ cache: market.cache, security: { apiKeys: [KEY_A], rateLimit: { max: 3, timeWindowMs: 60_000 } } });
    apps.push(app);
    const attempt = (key: string, ip: string) =>
      app.inject({ method: 'POST', url: '/login', remoteAddress: ip, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ key }).toString() });
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) codes.push((await attempt(`guess-${i}-0123456789abcdef`, '10.9.0.1')).statusCode);
    const limited = await attempt(KEY_A, '10.9.0.1');
    expect(codes).toEqual([401, 401, 401]);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.body).toMatch(/Too many attempts from this address: retry in \d+ s/);
    expect(limited.headers['set-cookie']).toBeUndefined();
    expect((await attempt(KEY_A, '10.9.0.2')).statusCode).toBe(303);
    // the login form does not open the API to other content types
    const text = await app.inject({ method: 'POST', url: '/api/v1/global/data/iV/byStrike', headers: { 'x-api-key': KEY_A, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1' });
    expect(text.statusCode).toBe(415);
  });
});

describe('keys never reach the logs (API key, session token, metrics key)', () => {
  it('at trace level with request and response headers serialized', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger = pino(
      {
        level: 'trace',
        redact: LOG_REDACT,
        serializers: {
          req: (req: { headers: unknown; url: string }) => ({ url: req.url, headers: req.headers }),
          res: (res: { getHeaders?: () => unknown }) => ({ headers: res.getHeaders?.() }),
        },
      },
      sink,
    );
    const { base } = await serve({ apiKeys: [KEY_A] }, { logger, metricsKey: METRICS_KEY });
    const token = await login(base, KEY_A);
    await call(base, STATE, { headers: { cookie: `${SESSION_COOKIE}=${token}` } });
    await call(base, SURFACE, { headers: { 'x-api-key': KEY_A } });
    await call(base, '/metrics', { headers: { authorization: `Bearer ${METRICS_KEY}` } });
    await call(base, '/login', form({ key: KEY_B }));
    logger.info({ res: { headers: { 'set-cookie': `${SESSION_COOKIE}=${token}` } } }, 'direct');
    logger.info({ config: { METRICS_KEY } }, 'config');
    const text = lines.join('');
    expect(lines.length).toBeGreaterThan(8);
    expect(text).toContain('[redacted]');
    expect(text).toContain('dashboard login');
    expect(text).toContain(keyIdOf(KEY_A));
    for (const secret of [KEY_A, KEY_B, METRICS_KEY, token, token.split('.')[4]!]) expect(text).not.toContain(secret);
  });
});

describe('/metrics protection', () => {
  it('API keys, no METRICS_KEY: an API key (X-API-Key or Bearer) or a session; 401 with WWW-Authenticate otherwise', async () => {
    const { base } = await serve({ apiKeys: [KEY_A] });
    const none = await call(base, '/metrics');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(JSON.parse(none.body).message).toMatch(/missing metrics credential/);
    expect((await call(base, '/metrics', { headers: { authorization: 'Bearer wrong-key-0123456789abcdef' } })).status).toBe(401);
    for (const headers of [{ 'x-api-key': KEY_A }, { authorization: `Bearer ${KEY_A}` }] as Record<string, string>[]) {
      const r = await call(base, '/metrics', { headers });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      // the refusals above are counted
      expect(parseProm(r.body).samples.find((x) => x.name === 'volsurf_http_rejected_total' && x.labels.reason === 'unauthorized')!.value).toBeGreaterThanOrEqual(2);
    }
  });

  it('METRICS_KEY: only Authorization: Bearer <METRICS_KEY> (not an API key, not a session); with keys off too', async () => {
    const { base } = await serve({ apiKeys: [KEY_A] }, { metricsKey: METRICS_KEY });
    const cookie = `${SESSION_COOKIE}=${await login(base, KEY_A)}`;
    expect((await call(base, '/metrics', { headers: { authorization: `Bearer ${METRICS_KEY}` } })).status).toBe(200);
    for (const headers of [{}, { 'x-api-key': KEY_A }, { authorization: `Bearer ${KEY_A}` }, { cookie }, { 'x-api-key': METRICS_KEY }, { authorization: METRICS_KEY }] as Record<string, string>[]) {
      const r = await call(base, '/metrics', { headers });
      expect(r.status, JSON.stringify(Object.keys(headers))).toBe(401);
      expect(r.body).not.toContain('volsurf_');
    }
    // the metrics key opens nothing else
    expect((await call(base, SURFACE, { headers: { 'x-api-key': METRICS_KEY } })).status).toBe(401);
    expect((await call(base, STATE, { headers: { authorization: `Bearer ${METRICS_KEY}` } })).status).toBe(401);

    const open = await serve({}, { metricsKey: METRICS_KEY });
    expect((await call(open.base, '/metrics')).status).toBe(401);
    expect((await call(open.base, '/metrics', { headers: { authorization: `Bearer ${METRICS_KEY}` } })).status).toBe(200);
    expect((await call(open.base, STATE)).status).toBe(200);
  });

  it('a metrics-only app (METRICS_PORT): /metrics alone, guarded; the API app then has no /metrics', async () => {
    const monitoring = new Monitoring({ cache: market.cache, feeds: [new FakeFeed('DERIBIT')], clock: market.clock, defaultMetrics: false });
    monitors.push(monitoring);
    const m = await buildMetricsApp(monitoring.metrics, { metricsKey: METRICS_KEY });
    apps.push(m);
    expect((await m.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const ok = await m.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_KEY}` } });
    expect(ok.statusCode).toBe(200);
    expect(parseProm(ok.body).samples.some((s) => s.name === 'volsurf_surface_sequence')).toBe(true);
    for (const url of ['/', '/health', SURFACE, STATE]) expect((await m.inject({ method: 'GET', url })).statusCode, url).toBe(404);
    const { base } = await serve({ apiKeys: [KEY_A] }, { metricsRoute: false });
    expect((await call(base, '/metrics', { headers: { 'x-api-key': KEY_A } })).status).toBe(404);
  });

  it('the service on METRICS_PORT: metrics on their own listener with METRICS_KEY, none on the API port', async () => {
    const svc = await startTestService({ API_KEYS: KEY_A, METRICS_KEY, METRICS_PORT: '0', SIM_HISTORY_HOURS: '0' });
    try {
      expect(svc.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(svc.metricsUrl).not.toBe(svc.url);
      expect((await call(svc.metricsUrl!, '/metrics')).status).toBe(401);
      const r = await call(svc.metricsUrl!, '/metrics', { headers: { authorization: `Bearer ${METRICS_KEY}` } });
      expect(r.status).toBe(200);
      expect(parseProm(r.body).samples.some((s) => s.name === 'volsurf_feed_connected')).toBe(true);
      expect((await call(svc.url, '/metrics', { headers: { authorization: `Bearer ${METRICS_KEY}` } })).status).toBe(404);
      expect((await call(svc.metricsUrl!, '/api/v1/global/data/fundingInstruments?source=DERIBIT', { headers: { 'x-api-key': KEY_A } })).status).toBe(404);
      expect((await call(svc.url, STATE)).status).toBe(401);
      expect((await call(svc.url, '/health')).status).toBe(200);
    } finally {
      await svc.stop();
    }
    // stopped: the metrics listener is closed too
    await expect(fetch(`${svc.metricsUrl}/metrics`)).rejects.toThrow();
  });
});

describe('ROLE=calibrator (health and /metrics only) follows the same /metrics rule', () => {
  it('API keys: /metrics needs one, /health and /ready stay open, nothing else is there', async () => {
    const svc = await startTestService({ ROLE: 'calibrator', API_KEYS: KEY_A, SIM_HISTORY_HOURS: '0' });
    try {
      const none = await call(svc.url, '/metrics');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect((await call(svc.url, '/metrics', { headers: { 'x-api-key': KEY_B } })).status).toBe(401);
      expect((await call(svc.url, '/metrics', { headers: { authorization: `Bearer ${KEY_A}` } })).status).toBe(200);
      expect((await call(svc.url, '/metrics', { headers: { 'x-api-key': KEY_A } })).status).toBe(200);
      expect((await call(svc.url, '/health')).status).toBe(200);
      expect((await call(svc.url, STATE, { headers: { 'x-api-key': KEY_A } })).status).toBe(404);
    } finally {
      await svc.stop();
    }
  });
});

describe('configuration of keys, sessions and metrics', () => {
  const fails = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as Error).message;
    }
    throw new Error('expected a configuration error');
  };
  it('METRICS_KEY_FILE: the first line that is neither blank nor a comment', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vss-metrics-key-'));
    const file = join(dir, 'metrics.key');
    writeFileSync(file, `# prometheus scrape token\n\n  ${METRICS_KEY}  \n`);
    expect(metricsKeyFromConfig(loadConfig({ METRICS_KEY_FILE: file }))).toBe(METRICS_KEY);
    const empty = join(dir, 'empty.key');
    writeFileSync(empty, '# nothing\n');
    expect(fails({ METRICS_KEY_FILE: empty })).toMatch(/METRICS_KEY_FILE: holds no key/);
    const short = join(dir, 'short.key');
    writeFileSync(short, 'abc\n');
    expect(fails({ METRICS_KEY_FILE: short })).toMatch(/METRICS_KEY_FILE: must be at least 16/);
    rmSync(dir, { recursive: true, force: true });
  });
  it('valid settings parse; defaults keep /metrics on the API port', () => {
    const c = loadConfig({ API_KEYS: KEY_A, METRICS_KEY, METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5', DASHBOARD_SESSION_TTL_S: '3600' });
    expect(c).toMatchObject({ METRICS_PORT: 9464, METRICS_HOST: '10.0.0.5', DASHBOARD_SESSION_TTL_S: 3600, METRICS_KEY });
    const d = loadConfig({});
    expect(d.METRICS_PORT).toBeUndefined();
    expect(d.METRICS_KEY).toBeUndefined();
    expect(d.DASHBOARD_SESSION_TTL_S).toBe(43_200);
  });
  it('bad values stop the start with one line naming the variable, never the key', () => {
    const short = fails({ METRICS_KEY: 'short-metrics' });
    expect(short).toMatch(/^invalid configuration: METRICS_KEY: must be at least 16 visible ASCII characters$/);
    expect(short).not.toContain('short-metrics');
    const same = fails({ API_KEYS: KEY_A, METRICS_KEY: KEY_A });
    expect(same).toMatch(/METRICS_KEY: must differ from every API key/);
    expect(same).not.toContain(KEY_A);
    expect(fails({ METRICS_KEY, METRICS_KEY_FILE: '/nonexistent' })).toMatch(/METRICS_KEY_FILE: set METRICS_KEY or METRICS_KEY_FILE, not both/);
    expect(fails({ METRICS_KEY_FILE: '/nonexistent/metrics.key' })).toMatch(/METRICS_KEY_FILE: cannot be read \(ENOENT\)/);
    expect(fails({ METRICS_HOST: '0.0.0.0' })).toMatch(/METRICS_HOST: needs METRICS_PORT/);
    expect(fails({ PORT: '8080', METRICS_PORT: '8080' })).toMatch(/METRICS_PORT: must differ from PORT \(8080\)/);
    expect(fails({ METRICS_PORT: '70000' })).toMatch(/METRICS_PORT/);
    expect(fails({ DASHBOARD_SESSION_TTL_S: '10' })).toMatch(/DASHBOARD_SESSION_TTL_S/);
    expect(fails({ DASHBOARD_SESSION_TTL_S: String(31 * 86400) })).toMatch(/DASHBOARD_SESSION_TTL_S/);
  });
});

describe('keys off: everything open as before', () => {
  it('page, state, stream and /metrics answer without a credential; no login routes', async () => {
    const { base } = await serve({});
    expect((await call(base, '/')).status).toBe(200);
    expect((await call(base, STATE)).status).toBe(200);
    expect((await call(base, STREAM)).status).toBe(200);
    expect((await call(base, '/metrics')).status).toBe(200);
    expect((await call(base, SURFACE)).status).toBe(200);
    expect((await call(base, '/login')).status).toBe(404);
    expect((await call(base, '/logout')).status).toBe(404);
  });
});
