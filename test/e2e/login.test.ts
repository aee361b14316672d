/**
 * The dashboard login in a real browser (issue 14 section 4): headless Debian Chromium (/usr/bin/chromium,
 * scripts/install-chromium.sh) driven by playwright-core against buildApp with API keys over a cache holding
 * the surface calibrated from the REAL recorded Deribit BTC chain, listening on 127.0.0.1. Opening / shows the
 * login form; a wrong key shows it again with an error; the right key lands on the dashboard, whose own
 * EventSource and fetch calls then answer 200 with the HttpOnly, SameSite=Strict cookie (the page's script is
 * unchanged and cannot read the cookie); /logout ends it and / asks for the key again.
 *
 * Without /usr/bin/chromium the suite is skipped with a loud banner, unless REQUIRE_BROWSER=1 (CI), where it fails.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { SESSION_COOKIE } from '../../src/api/plugins/sessions.js';
import { Monitoring } from '../../src/metrics/monitoring.js';
import { realChainCache } from '../helpers/realChainCache.js';
import { FakeFeed } from '../metrics/helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasBrowser = existsSync(CHROMIUM);
if (!hasBrowser) {
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} is missing: run scripts/install-chromium.sh`);
  console.warn(`\n${'!'.repeat(78)}\n!! BROWSER TESTS SKIPPED: ${CHROMIUM} not found (run scripts/install-chromium.sh)\n${'!'.repeat(78)}\n`);
}

/** Flags for a headless Chromium on a closed network (as test/e2e/dashboard.test.ts). */
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const KEY = 'browser-key-0123456789abcdef';

describe.skipIf(!hasBrowser)('dashboard login in headless Chromium', () => {
  let app: FastifyInstance;
  let monitoring: Monitoring;
  let B: string;
  let ctx: BrowserContext;
  let page: Page;
  let profile: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const market = realChainCache();
    monitoring = new Monitoring({ cache: market.cache, feeds: [new FakeFeed('DERIBIT')], clock: market.clock, defaultMetrics: false });
    app = await buildApp({ cache: market.cache, monitoring, security: { apiKeys: [KEY] } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    B = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    profile = mkdtempSync(path.join(tmpdir(), 'chromium-profile-'));
    ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  });

  afterAll(async () => {
    await ctx?.close().catch(() => {});
    await app?.close();
    monitoring?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('/ shows the login form; a wrong key shows it again with an error', async () => {
    await page.goto(`${B}/?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD`);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(await page.title()).toMatch(/log in/i);
    await page.fill('input[name=key]', 'not-the-key-0123456789abcdef');
    await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')]);
    expect(await page.textContent('.error')).toBe('Wrong API key.');
    expect((await ctx.cookies(B)).find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
  });

  it('the right key opens the dashboard; its SSE stream and state calls carry the cookie', async () => {
    const stream = page.waitForResponse((r) => r.url().includes('/dashboard/api/stream'), { timeout: 30_000 });
    await page.fill('input[name=key]', KEY);
    await page.click('button[type=submit]');
    const res = await stream;
    expect(res.status()).toBe(200);
    expect(res.headers()['content-type']).toMatch(/^text\/event-stream/);
    const url = new URL(page.url());
    expect(url.pathname).toBe('/');
    expect(url.searchParams.get('source')).toBe('DERIBIT');
    const cookie = (await ctx.cookies(B)).find((c) => c.name === SESSION_COOKIE)!;
    expect(cookie.httpOnly).toBe(true);
    expect(cookie.sameSite).toBe('Strict');
    expect(cookie.value).not.toContain(KEY);
    // invisible to the page's script
    expect(await page.evaluate(() => document.cookie)).not.toContain(SESSION_COOKIE);
    // a same-origin fetch from the page carries it too
    const status = await page.evaluate(async () => (await fetch('/dashboard/api/state?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD')).status);
    expect(status).toBe(200);
    expect(pageErrors).toEqual([]);
  });

  it('/logout ends the session; / asks for the key again and the data routes refuse', async () => {
    await page.goto(`${B}/logout`);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(await page.textContent('.status')).toBe('Logged out.');
    expect((await ctx.cookies(B)).find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
    await page.goto(`${B}/`);
    expect(new URL(page.url()).pathname).toBe('/login');
    const status = await page.evaluate(async () => (await fetch('/dashboard/api/state')).status);
    expect(status).toBe(401);
  });
});

describe.skipIf(!hasBrowser)('the /docs page with API keys on, in headless Chromium', () => {
  let app: FastifyInstance;
  let B: string;
  let ctx: BrowserContext;
  let page: Page;
  let profile: string;

  beforeAll(async () => {
    const market = realChainCache();
    app = await buildApp({ cache: market.cache, security: { apiKeys: [KEY] } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    B = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    profile = mkdtempSync(path.join(tmpdir(), 'chromium-profile-'));
    ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 900 } });
    page = ctx.pages()[0] ?? (await ctx.newPage());
  });

  afterAll(async () => {
    await ctx?.close().catch(() => {});
    await app?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('"Authorize" takes the key and "Try it out" sends it as X-API-Key: the answer is 200, not 401', async () => {
    await page.goto(`${B}/docs`);
    await page.click('button.authorize', { timeout: 30_000 });
    await page.fill('.auth-container input', KEY);
    await page.click('.auth-btn-wrapper button.authorize');
    await page.click('.auth-btn-wrapper button.btn-done');
    const op = page.locator('.opblock', { hasText: '/api/v1/global/data/fundingInstruments' }).first();
    await op.locator('.opblock-summary').click();
    await op.locator('button.try-out__btn').click();
    // the one required parameter: source (an enum: a select)
    const source = op.locator('select').first();
    if (await source.count()) await source.selectOption('XCHG_A');
    const sent = page.waitForRequest((r) => r.url().includes('/api/v1/global/data/fundingInstruments'));
    const answered = page.waitForResponse((r) => r.url().includes('/api/v1/global/data/fundingInstruments'));
    await op.locator('button.execute').click();
    const req = await sent;
    expect(req.headers()['x-api-key']).toBe(KEY);
    expect((await answered).status()).toBe(200);
    await page.screenshot({ path: 'test-artifacts/docs-authorized.png' }).catch(() => {});
  });
});
