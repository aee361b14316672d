/**
 * Security of the REST API (issue 8 "Security"; decisions.md "Errors"): API keys (env list and
 * file, constant-time match, never logged, never echoed in a configuration error), rate limit per
 * key / per IP with 429 + Retry-After, body limit 413, JSON only 415, request timeout 408,
 * overload 503 + Retry-After, security headers. Through fastify inject() on buildApp with a cache
 * filled from the real recorded Deribit chain, and over real HTTP on 127.0.0.1 where the transport
 * matters (timeouts, headers on the wire, logs).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { API_KEY_HEADER, CONTENT_SECURITY_POLICY, KeyRing, SECURITY_HEADERS, type SecurityOptions } from '../../src/api/plugins/security.js';
import { apiKeysFromConfig, parseKeyFile, securityOptionsFromConfig } from '../../src/api/plugins/securityConfig.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { LOG_REDACT } from '../../src/logger.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';

const KEY_A = 'alpha-key-0123456789abcdef';
const KEY_B = 'bravo-key-fedcba9876543210';
const FUNDING = '/api/v1/global/data/fundingInstruments?source=DERIBIT';
const SURFACE = '/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI';
const BY_STRIKE = '/api/v1/global/data/iV/byStrike';

let market: RealChainCache;
const apps: FastifyInstance[] = [];

beforeAll(() => {
  market = realChainCache();
});
afterAll(async () => {
  for (const a of apps) await a.close();
});

async function app(security: SecurityOptions, extra: { bodyLimit?: number; requestTimeoutMs?: number; logger?: pino.Logger } = {}): Promise<FastifyInstance> {
  const a = await buildApp({ cache: market.cache, security, ...extra });
  apps.push(a);
  return a;
}

function byStrikeItem(strike = 80_000) {
  return { instrumentId: 's1', baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: market.expiries[3]!, strike };
}

describe('KeyRing: constant-time key match on SHA-256 digests', () => {
  const ring = new KeyRing([KEY_A, KEY_B]);
  it('matches each configured key and gives a digest id, never the key', () => {
    const a = ring.match(KEY_A);
    const b = ring.match(KEY_B);
    expect(a).toMatch(/^[0-9a-f]{12}$/);
    expect(b).toMatch(/^[0-9a-f]{12}$/);
    expect(a).not.toBe(b);
    expect(KEY_A).not.toContain(a!);
  });
  it('refuses a key differing in its last character, a prefix, a longer key, case changes and non-strings', () => {
    for (const bad of [KEY_A.slice(0, -1) + 'g', KEY_A.slice(0, -1), KEY_A + 'x', KEY_A.toUpperCase(), '', ' ' + KEY_A, `${KEY_A}, ${KEY_B}`]) {
      expect(ring.match(bad), bad).toBeNull();
    }
    for (const bad of [undefined, null, 42, [KEY_A], { KEY_A }]) expect(ring.match(bad)).toBeNull();
    expect(ring.match('x'.repeat(5000))).toBeNull();
  });
  it('an empty ring matches nothing', () => {
    expect(new KeyRing([]).match(KEY_A)).toBeNull();
  });
});

describe('API keys on every /api route', () => {
  let a: FastifyInstance;
  beforeAll(async () => {
    a = await app({ apiKeys: [KEY_A, KEY_B] });
  });

  it('401 in the error shape without a key, with a wrong key, and with a near miss', async () => {
    for (const headers of [{}, { [API_KEY_HEADER]: 'wrong-key-0123456789abcdef' }, { [API_KEY_HEADER]: KEY_A.slice(0, -1) + 'X' }, { [API_KEY_HEADER]: '' }]) {
      const r = await a.inject({ method: 'GET', url: FUNDING, headers });
      expect(r.statusCode).toBe(401);
      const body = r.json();
      expect(body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
      expect(body.message).toMatch(/API key/);
      expect(r.headers['www-authenticate']).toBe('X-API-Key');
      expect(r.body).not.toContain(KEY_A);
    }
    const post = await a.inject({ method: 'POST', url: BY_STRIKE, payload: [byStrikeItem()] });
    expect(post.statusCode).toBe(401);
  });

  it('each configured key opens every route; the answers equal those of an open service', async () => {
    const open = await app({});
    for (const key of [KEY_A, KEY_B]) {
      const f = await a.inject({ method: 'GET', url: FUNDING, headers: { [API_KEY_HEADER]: key } });
      const s = await a.inject({ method: 'GET', url: SURFACE, headers: { 'X-API-Key': key } });
      const v = await a.inject({ method: 'POST', url: BY_STRIKE, payload: [byStrikeItem()], headers: { [API_KEY_HEADER]: key } });
      expect(s.statusCode).toBe(200);
      expect(v.statusCode).toBe(200);
      expect(f.statusCode).toBe((await open.inject({ method: 'GET', url: FUNDING })).statusCode);
      expect(s.json()).toEqual((await open.inject({ method: 'GET', url: SURFACE })).json());
      expect(v.json()).toEqual((await open.inject({ method: 'POST', url: BY_STRIKE, payload: [byStrikeItem()] })).json());
      expect(v.json()[0].impliedVolatility).toBeGreaterThan(0.2);
    }
  });

  it('health and readiness stay open; unknown and disguised /api paths need the key too', async () => {
    expect((await a.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect((await a.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    expect((await a.inject({ method: 'GET', url: '/api/v1/nothing' })).statusCode).toBe(401);
    expect((await a.inject({ method: 'GET', url: '/api/v1/nothing', headers: { [API_KEY_HEADER]: KEY_A } })).statusCode).toBe(404);
    for (const url of ['/%61pi/v1/global/data/fundingInstruments?source=DERIBIT', '//api/v1/global/data/fundingInstruments?source=DERIBIT', '/API/v1/global/data/fundingInstruments?source=DERIBIT']) {
      const r = await a.inject({ method: 'GET', url });
      expect([401, 404], url).toContain(r.statusCode);
    }
  });

  it('keys never reach the logs, even at trace level with headers serialized', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger = pino({ level: 'trace', redact: LOG_REDACT, serializers: { req: (req: { headers: unknown; url: string }) => ({ url: req.url, headers: req.headers }) } }, sink);
    const logged = await app({ apiKeys: [KEY_A] }, { logger });
    await logged.inject({ method: 'GET', url: FUNDING, headers: { [API_KEY_HEADER]: KEY_A } });
    await logged.inject({ method: 'GET', url: FUNDING, headers: { [API_KEY_HEADER]: KEY_B } });
    logger.info({ headers: { [API_KEY_HEADER]: KEY_A } }, 'direct');
    logger.info({ config: { API_KEYS: KEY_A } }, 'config');
    const text = lines.join('');
    expect(lines.length).toBeGreaterThan(3);
    expect(text).toContain('[redacted]');
    expect(text).not.toContain(KEY_A);
    expect(text).not.toContain(KEY_B);
  });
});

describe('keys from the environment and from a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vss-keys-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('API_KEYS and API_KEYS_FILE are merged; comments and blank lines ignored', () => {
    const file = join(dir, 'keys.txt');
    writeFileSync(file, `# desk keys\n${KEY_B}\n\n  ${KEY_A}  \r\n`);
    expect(parseKeyFile(`# c\n\nk1\n k2 \r\n`)).toEqual(['k1', 'k2']);
    const c = loadConfig({ API_KEYS: `${KEY_A}, ${KEY_A}`, API_KEYS_FILE: file });
    expect(apiKeysFromConfig(c)).toEqual([KEY_A, KEY_B]);
    const opts = securityOptionsFromConfig(c);
    expect(opts.apiKeys).toEqual([KEY_A, KEY_B]);
    expect(opts.rateLimit).toEqual({ max: 3000, timeWindowMs: 60_000 });
    expect(securityOptionsFromConfig(loadConfig({ RATE_LIMIT_MAX: '0' })).rateLimit).toBe(false);
    expect(securityOptionsFromConfig(loadConfig({})).apiKeys).toEqual([]);
  });
  it('a short key, an unreadable or empty file stop the start with one line that never shows a key', () => {
    const short = 'short-key';
    let err: unknown;
    try {
      loadConfig({ API_KEYS: `${KEY_A},${short}` });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^invalid configuration: API_KEYS: key #2 must be at least 16/);
    expect((err as Error).message).not.toContain(short);
    expect((err as Error).message).not.toContain(KEY_A);
    expect(() => loadConfig({ API_KEYS_FILE: join(dir, 'missing.txt') })).toThrow(/API_KEYS_FILE: cannot be read \(ENOENT\)/);
    const empty = join(dir, 'empty.txt');
    writeFileSync(empty, '# nothing\n\n');
    expect(() => loadConfig({ API_KEYS_FILE: empty })).toThrow(/API_KEYS_FILE: holds no key/);
    expect(() => loadConfig({ RATE_LIMIT_WINDOW_MS: '0' })).toThrow(/RATE_LIMIT_WINDOW_MS/);
    expect(() => loadConfig({ BODY_LIMIT_BYTES: '10' })).toThrow(/BODY_LIMIT_BYTES/);
  });
});

describe('rate limit: per key, per IP without keys; 429 with Retry-After', () => {
  it('per key: the 6th request of a key in the window is refused, another key is not', async () => {
    const a = await app({ apiKeys: [KEY_A, KEY_B], rateLimit: { max: 5, timeWindowMs: 60_000 } });
    for (let i = 0; i < 5; i++) {
      const r = await a.inject({ method: 'GET', url: FUNDING, headers: { [API_KEY_HEADER]: KEY_A } });
      expect(r.statusCode).not.toBe(429);
      expect(Number(r.headers['x-ratelimit-remaining'])).toBe(4 - i);
    }
    const over = await a.inject({ method: 'GET', url: FUNDING, headers: { [API_KEY_HEADER]: KEY_A } });
    expect(over.statusCode).toBe(429);
    const body = over.json();
    expect(body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(body.message).toMatch(/at most 5 requests per 60000 ms per API key/);
    const retry = Number(over.headers['retry-after']);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(over.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    // another key, same address: its own budget
    expect((await a.inject({ method: 'GET', url: FUNDING, headers: { [API_KEY_HEADER]: KEY_B } })).statusCode).not.toBe(429);
    // health is not rate limited
    for (let i = 0; i < 10; i++) expect((await a.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('wrong keys are throttled per client address (key guessing)', async () => {
    const a = await app({ apiKeys: [KEY_A], rateLimit: { max: 3, timeWindowMs: 60_000 } });
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) {
      codes.push((await a.inject({ method: 'GET', url: FUNDING, remoteAddress: '10.0.0.7', headers: { [API_KEY_HEADER]: `guess-${i}-0123456789abcdef` } })).statusCode);
    }
    expect(codes).toEqual([401, 401, 401, 429, 429]);
    // the valid key from the same address has its own budget
    expect((await a.inject({ method: 'GET', url: FUNDING, remoteAddress: '10.0.0.7', headers: { [API_KEY_HEADER]: KEY_A } })).statusCode).toBe(200);
  });

  it('per IP without keys: one address is limited, another is not', async () => {
    const a = await app({ rateLimit: { max: 2, timeWindowMs: 60_000 } });
    const hit = (ip: string) => a.inject({ method: 'POST', url: BY_STRIKE, payload: [byStrikeItem()], remoteAddress: ip });
    expect((await hit('10.1.1.1')).statusCode).toBe(200);
    expect((await hit('10.1.1.1')).statusCode).toBe(200);
    const over = await hit('10.1.1.1');
    expect(over.statusCode).toBe(429);
    expect(over.json().message).toMatch(/per client address/);
    expect((await hit('10.1.1.2')).statusCode).toBe(200);
  });
});

describe('body size, content type, timeouts', () => {
  it('413 above the body limit, in the error shape; the default limit is 1 MiB', async () => {
    const a = await app({});
    const big = JSON.stringify(Array.from({ length: 7000 }, () => byStrikeItem()));
    expect(big.length).toBeGreaterThan(1024 * 1024);
    const r = await a.inject({ method: 'POST', url: BY_STRIKE, payload: big, headers: { 'content-type': 'application/json' } });
    expect(r.statusCode).toBe(413);
    expect(r.json()).toMatchObject({ statusCode: 413, error: 'Payload Too Large' });
    const small = await app({}, { bodyLimit: 2048 });
    const r2 = await small.inject({ method: 'POST', url: BY_STRIKE, payload: JSON.stringify(Array.from({ length: 20 }, () => byStrikeItem())), headers: { 'content-type': 'application/json' } });
    expect(r2.statusCode).toBe(413);
  });

  it('415 for anything but JSON', async () => {
    const a = await app({});
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream']) {
      const r = await a.inject({ method: 'POST', url: BY_STRIKE, payload: JSON.stringify([byStrikeItem()]), headers: { 'content-type': type } });
      expect(r.statusCode, type).toBe(415);
      expect(r.json()).toMatchObject({ statusCode: 415, message: 'Content-Type must be application/json' });
    }
    const ok = await a.inject({ method: 'POST', url: BY_STRIKE, payload: JSON.stringify([byStrikeItem()]), headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(ok.statusCode).toBe(200);
  });

  it('a client that never finishes its request gets 408 and the connection is closed (slowloris)', async () => {
    const a = await app({}, { requestTimeoutMs: 500 });
    await a.listen({ port: 0, host: '127.0.0.1' });
    const port = (a.server.address() as { port: number }).port;
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1');
      let got = '';
      const guard = setTimeout(() => {
        sock.destroy();
        reject(new Error(`no answer; got ${JSON.stringify(got)}`));
      }, 20_000);
      sock.on('data', (d) => (got += String(d)));
      sock.on('close', () => {
        clearTimeout(guard);
        resolve(got);
      });
      sock.on('error', () => undefined);
      // headers announce 100 bytes of body; only 10 ever come
      sock.write(`POST ${BY_STRIKE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[{"instrum`);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });
});

describe('overload protection', () => {
  it('answers 503 + Retry-After in the error shape while the event loop is saturated, /health stays 200, and recovers', async () => {
    const a = await app({ overload: { maxEventLoopDelayMs: 80, sampleIntervalMs: 250, retryAfterS: 3 } });
    await a.ready();
    const before = await a.inject({ method: 'GET', url: SURFACE });
    expect(before.statusCode).toBe(200);
    // saturate the loop: 150 ms of CPU, yield, again; every 10 ms probe of the delay monitor is ~150 ms late
    let burning = true;
    const burn = (): void => {
      const until = Date.now() + 150;
      while (Date.now() < until) {
        /* busy */
      }
      if (burning) setTimeout(burn, 0);
    };
    burn();
    let under = before;
    try {
      for (let i = 0; i < 200 && under.statusCode !== 503; i++) {
        await new Promise((r) => setTimeout(r, 20));
        under = await a.inject({ method: 'GET', url: SURFACE });
      }
      expect(under.statusCode).toBe(503);
      expect(under.json()).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
      expect(under.json().message).toMatch(/overloaded/);
      expect(under.headers['retry-after']).toBe('3');
      expect((await a.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    } finally {
      burning = false;
    }
    // recovery: the following samples are calm again
    let after = under;
    for (let i = 0; i < 200 && after.statusCode === 503; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await a.inject({ method: 'GET', url: SURFACE });
    }
    expect(after.statusCode).toBe(200);
    expect(after.json()).toEqual(before.json());
  });
});

describe('security headers', () => {
  it('every answer carries them (200, 400, 404, 401), /api answers are not cached, and CSP allows only self for scripts', async () => {
    const a = await app({ apiKeys: [KEY_A] });
    const answers = [
      await a.inject({ method: 'GET', url: SURFACE, headers: { [API_KEY_HEADER]: KEY_A } }),
      await a.inject({ method: 'POST', url: BY_STRIKE, payload: [{}], headers: { [API_KEY_HEADER]: KEY_A } }),
      await a.inject({ method: 'GET', url: '/nowhere' }),
      await a.inject({ method: 'GET', url: SURFACE }),
      await a.inject({ method: 'GET', url: '/health' }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([200, 400, 404, 401, 200]);
    for (const r of answers) {
      for (const [h, v] of Object.entries(SECURITY_HEADERS)) expect(r.headers[h], h).toBe(v);
    }
    expect(answers[0]!.headers['cache-control']).toBe('no-store');
    expect(answers[4]!.headers['cache-control']).toBeUndefined();
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain("script-src 'self' 'unsafe-inline'");
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
  });
});
