/**
 * End to end in a real browser: headless Debian Chromium (/usr/bin/chromium, installed by
 * scripts/install-chromium.sh) driven by playwright-core against the running service (embedded simulator on
 * 127.0.0.1). The dashboard at / loads, every chart has data, the numbers on the page equal the REST
 * answers for the same snapshot (ATM vol and forward per expiry against /surface, 25-delta risk reversal and
 * butterfly against iV/byDelta at call deltas 0.25 and 0.75, constant-maturity yields against /forwardCurve,
 * the latest funding rate against /fundingRates), a chart updates as the simulator moves (pushed over SSE, no
 * reload), and the selection switches pairs. Saves test-artifacts/dashboard.png.
 *
 * Without /usr/bin/chromium the suite is skipped with a loud banner, unless REQUIRE_BROWSER=1 (CI), where it
 * fails.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { testNowS } from '../helpers/simClock.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasBrowser = existsSync(CHROMIUM);
if (!hasBrowser) {
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} is missing: run scripts/install-chromium.sh`);
  console.warn(`\n${'!'.repeat(78)}\n!! BROWSER TESTS SKIPPED: ${CHROMIUM} not found (run scripts/install-chromium.sh)\n${'!'.repeat(78)}\n`);
}

/** Flags for a headless Chromium on a closed network (env/machines: background networking refused). */
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const ARTIFACTS = path.resolve('test-artifacts');

interface TermRow {
  expiry: number;
  forward: number;
  atmVol: number;
  delta25Skew: number | null;
  delta25Bfly: number | null;
  atmText: string;
}

describe.skipIf(!hasBrowser)('live dashboard in headless Chromium', () => {
  let svc: RunningService;
  let B: string;
  let browser: Browser;
  let page: Page;
  let profile: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    // two exchanges, so that the feed panel and the source selector have something to show
    svc = await startTestService({ SOURCES: 'DERIBIT,OKX', CALIBRATION_THROTTLE_MS: '500' });
    B = svc.url;
    profile = mkdtempSync(path.join(tmpdir(), 'chromium-profile-'));
    const ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1500, height: 1100 },
    });
    browser = ctx.browser()!;
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(`console: ${m.text()}`);
    });
    await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 60_000, '/ready 200');
    await page.goto(`${B}/`);
    await page.waitForFunction(() => (window as any).dashboard?.updates > 0 && (window as any).dashboard.state?.surface, null, { timeout: 30_000 });
  });

  afterAll(async () => {
    await page?.context().close().catch(() => {});
    await browser?.close().catch(() => {});
    await svc?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('loads with the live badge, the default pair and every chart holding data', async () => {
    expect(await page.title()).toMatch(/dashboard/i);
    await page.waitForFunction(() => document.getElementById('live')?.textContent === 'live', null, { timeout: 10_000 });
    const info = await page.evaluate(() => {
      const d = (window as any).dashboard;
      const seriesLengths = (c: any) => (c ? c.getOption().series.map((s: any) => ({ name: s.name, type: s.type, n: (s.data ?? []).length })) : null);
      const canvasOk = (c: any) => {
        const cv = c?.getDom().querySelector('canvas');
        return !!cv && cv.width > 0 && cv.height > 0;
      };
      const smiles = Object.values(d.charts.smiles);
      return {
        selection: d.state.selection,
        models: d.state.surface.models,
        expiries: d.state.surface.smiles.length,
        quotes: d.state.surface.smiles.map((s: any) => s.quotes.length),
        smiles: smiles.map(seriesLengths),
        term: seriesLengths(d.charts.term),
        forward: seriesLengths(d.charts.forward),
        funding: seriesLengths(d.charts.funding),
        canvases: [d.charts.term, d.charts.forward, d.charts.funding, ...smiles].every(canvasOk),
        feedRows: [...document.querySelectorAll('#feeds tbody tr')].map((tr: any) => ({
          source: tr.dataset.source,
          connected: tr.querySelector('[data-field=connected]').dataset.value,
          messages: Number(tr.querySelector('[data-field=messages]').dataset.value),
        })),
      };
    });
    expect(info.selection).toEqual({ source: 'DERIBIT', baseCurrency: 'BTC', quoteCurrency: 'USD', volatilityModel: 'SVI' });
    expect(info.expiries).toBeGreaterThanOrEqual(8);
    expect(info.canvases).toBe(true);
    // one smile chart per expiry: marks = the quotes, a fitted curve per model held, bid/ask bars
    expect(info.smiles).toHaveLength(info.expiries);
    info.smiles.forEach((series: any, i: number) => {
      expect(series.find((s: any) => s.name === 'mark').n).toBe(info.quotes[i]);
      expect(series.find((s: any) => s.name === 'bid/ask').n).toBeGreaterThan(0);
      for (const m of info.models) expect(series.find((s: any) => s.name === m)?.n, m).toBe(61);
    });
    expect(info.models).toContain('SVI');
    expect(info.term.find((s: any) => s.name === 'ATM vol').n).toBe(info.expiries);
    expect(info.term.find((s: any) => s.name === '25D RR').n).toBeGreaterThan(0);
    expect(info.term.find((s: any) => s.name === '25D BF').n).toBeGreaterThan(0);
    expect(info.forward.find((s: any) => s.name === 'listed expiries').n).toBeGreaterThanOrEqual(info.expiries);
    expect(info.forward.find((s: any) => s.name === 'constant maturities').n).toBe(9);
    expect(info.funding.length).toBeGreaterThanOrEqual(1);
    expect(info.funding[0].n).toBeGreaterThan(10);
    // one feed-status row per exchange feed of the service, each connected and counting messages
    expect(info.feedRows.map((r: any) => r.source)).toEqual(svc.feeds.map((f) => f.source));
    for (const row of info.feedRows) {
      expect(row.connected, row.source).toBe('true');
      expect(row.messages, row.source).toBeGreaterThan(10);
    }
    expect(pageErrors).toEqual([]);
  });

  it('the numbers on the page equal the REST answers for the same snapshot', async () => {
    // Hold the market still: the simulator sends nothing for a while, the last calibration lands, the page
    // receives it; then page and REST read the same immutable snapshot.
    svc.simulator!.faults.silence(10_000);
    const q = 'source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD';
    const surface = await waitFor(
      async () => {
        const r = await http('GET', `${B}/api/v1/global/data/surface?${q}&volatilityModel=SVI`);
        const seq = await page.evaluate(() => Number(document.getElementById('seq')!.dataset.value));
        await new Promise((res) => setTimeout(res, 1200));
        const r2 = await http('GET', `${B}/api/v1/global/data/surface?${q}&volatilityModel=SVI`);
        // stable over 1.2 s and shown on the page
        return r.status === 200 && r2.body.sequence === r.body.sequence && seq === r.body.sequence ? r2.body : null;
      },
      9_000,
      'a still surface shown on the page',
      50,
    );
    const page1 = await page.evaluate(() => ({
      obs: Number(document.getElementById('obs')!.dataset.value),
      seq: Number(document.getElementById('seq')!.dataset.value),
      term: [...document.querySelectorAll('#term-table tbody tr')].map((tr: any) => {
        const v = (f: string) => {
          const x = tr.querySelector(`[data-field=${f}]`).dataset.value;
          return x === undefined ? null : Number(x);
        };
        return {
          expiry: v('expirationTimestamp'),
          forward: v('forward'),
          atmVol: v('atmVol'),
          delta25Skew: v('delta25Skew'),
          delta25Bfly: v('delta25Bfly'),
          atmText: tr.querySelector('[data-field=atmVol]').textContent,
        };
      }),
      constMat: [...document.querySelectorAll('#forward-table tbody tr')].map((tr: any) => ({
        constMat: tr.dataset.constmat,
        value: Number(tr.querySelector('[data-field=value]').dataset.value),
        expiry: Number(tr.querySelector('[data-field=expirationTimestamp]').dataset.value),
      })),
      funding: (() => {
        const el = document.getElementById('funding-latest')!;
        return { value: Number(el.dataset.value), timestamp: Number(el.dataset.timestamp), instrument: el.dataset.instrument };
      })(),
    }));
    const [fc, funding] = await Promise.all([
      http('GET', `${B}/api/v1/global/data/forwardCurve?${q}`),
      http('GET', `${B}/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=${page1.funding.instrument}&startTime=0&endTime=${Math.ceil(testNowS()) + 86400}`),
    ]);
    expect(page1.seq).toBe(surface.sequence);
    expect(page1.obs).toBe(surface.observationTimestamp);

    // ATM vol and forward per listed expiry, against /surface
    const term = page1.term as TermRow[];
    expect(term.map((t) => t.expiry)).toEqual(surface.expiries.map((e: any) => e.expirationTimestamp));
    surface.expiries.forEach((e: any, i: number) => {
      expect(term[i]!.atmVol).toBeCloseTo(e.atmVol, 12);
      expect(term[i]!.forward / e.forwardPrice).toBeCloseTo(1, 12);
      expect(term[i]!.atmText).toBe(`${(100 * e.atmVol).toFixed(2)} %`);
    });

    // 25-delta RR and BF against iV/byDelta (call delta 0.25 = 25D call, 0.75 = 25D put), one batch
    const items = term.flatMap((t, i) =>
      [0.25, 0.75].map((delta) => ({ instrumentId: `${i}:${delta}`, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: t.expiry, delta })),
    );
    const byDelta = await http('POST', `${B}/api/v1/global/data/iV/byDelta`, items);
    expect(byDelta.status).toBe(200);
    const iv = new Map<string, { impliedVolatility: number; observationTimestamp: number }>(byDelta.body.map((r: any) => [r.instrumentId, r]));
    let compared = 0;
    term.forEach((t, i) => {
      const c = iv.get(`${i}:0.25`)!;
      const p = iv.get(`${i}:0.75`)!;
      expect(c.observationTimestamp).toBe(page1.obs);
      if (t.delta25Skew === null) return;
      expect(t.delta25Skew).toBeCloseTo(c.impliedVolatility - p.impliedVolatility, 12);
      expect(t.delta25Bfly!).toBeCloseTo((c.impliedVolatility + p.impliedVolatility) / 2 - surface.expiries[i].atmVol, 12);
      compared++;
    });
    expect(compared).toBeGreaterThanOrEqual(term.length - 1);

    // constant-maturity yields against /forwardCurve
    expect(fc.status).toBe(200);
    expect(page1.constMat.map((c: any) => c.constMat)).toEqual(fc.body.constMatYields.map((c: any) => c.constMat));
    fc.body.constMatYields.forEach((c: any, i: number) => {
      expect(page1.constMat[i]!.value).toBe(c.value);
      expect(page1.constMat[i]!.expiry).toBe(c.expirationTimestamp);
    });

    // latest funding point against /fundingRates (newest first)
    expect(funding.status).toBe(200);
    expect(page1.funding.timestamp).toBe(funding.body[0].timestamp);
    expect(page1.funding.value).toBe(funding.body[0].interest);
  });

  it('a chart updates within seconds as the simulator moves (server push, no reload)', async () => {
    const before = await page.evaluate(() => {
      const d = (window as any).dashboard;
      const first = Object.keys(d.charts.smiles).sort()[0]!;
      return { first, updates: d.updates, seq: d.state.surface.sequence, marks: JSON.stringify(d.charts.smiles[first].getOption().series[1].data), nav: performance.getEntriesByType('navigation').length };
    });
    // the silence of the previous test ends; the market moves again
    await page.waitForFunction(
      (b) => {
        const d = (window as any).dashboard;
        const c = d.charts.smiles[b.first];
        return d.updates > b.updates && d.state.surface.sequence > b.seq && c && JSON.stringify(c.getOption().series[1].data) !== b.marks;
      },
      before,
      { timeout: 30_000, polling: 200 },
    );
    const after = await page.evaluate(() => ({ nav: performance.getEntriesByType('navigation').length, updates: (window as any).dashboard.updates }));
    expect(after.nav).toBe(before.nav); // same document: no reload
    expect(after.updates).toBeGreaterThan(before.updates);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard.png'), fullPage: true });
  });

  it('the API docs at /docs render every documented operation in the browser (under the service CSP)', async () => {
    const doc = (await http('GET', `${B}/openapi.json`)).body;
    const ops = Object.values(doc.paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
    const docs = await page.context().newPage();
    const errors: string[] = [];
    docs.on('pageerror', (e) => errors.push(e.message));
    await docs.goto(`${B}/docs`);
    await docs.waitForSelector('.opblock', { timeout: 20_000 });
    expect(await docs.locator('.opblock').count()).toBe(ops);
    expect(await docs.locator('.info .title').textContent()).toMatch(/Vol-surface service/);
    expect(errors).toEqual([]);
    await docs.close();
  });

  it('switching the pair re-subscribes and shows that pair', async () => {
    await page.selectOption('#sel-pair', 'ETH/USD');
    await page.waitForFunction(() => (window as any).dashboard.state?.selection?.baseCurrency === 'ETH' && (window as any).dashboard.state.surface, null, { timeout: 15_000 });
    const spot = await page.evaluate(() => (window as any).dashboard.state.surface.spot);
    const r = await http('GET', `${B}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=ETH&quoteCurrency=USD&volatilityModel=SVI`);
    expect(r.status).toBe(200);
    // same market, seconds apart: the ETH spot, far from BTC's
    expect(spot / r.body.spotPrice).toBeGreaterThan(0.95);
    expect(spot / r.body.spotPrice).toBeLessThan(1.05);
    expect(new URL(page.url()).searchParams.get('baseCurrency')).toBe('ETH');
    // another exchange: OKX lists ETH/USD too
    await page.selectOption('#sel-source', 'OKX');
    await page.waitForFunction(() => (window as any).dashboard.state?.selection?.source === 'OKX' && (window as any).dashboard.state.surface, null, { timeout: 15_000 });
    const okx = await page.evaluate(() => (window as any).dashboard.state.selection);
    expect(okx).toMatchObject({ source: 'OKX', baseCurrency: 'ETH', quoteCurrency: 'USD' });
    expect(pageErrors).toEqual([]);
  });
});
