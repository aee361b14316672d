/**
 * End to end in a real browser: headless Debian Chromium (/usr/bin/chromium, installed by
 * scripts/install-chromium.sh) driven by playwright-core against the running service (embedded simulator on
 * 127.0.0.1), at 1440x900 (light) and 390x844 (a phone, dark scheme). Covers issue 13:
 * - the page loads with every chart holding data; the numbers equal the REST answers for the same snapshot
 *   (ATM vol, forward, 25D RR/BF, 24 h changes against iVSummary, constant-maturity yields, funding);
 * - one large smile by strike, call delta (checked against an independent N(d1)) and log-moneyness, with
 *   zoom, bid/ask bars, the selected model emphasised and the others optional; a tooltip stays open across
 *   live updates; the 24 h-ago overlay and earlier kept smiles; history series; heatmap; fit table;
 * - honest status: live (simulated), reconnecting with a countdown when the stream is unreachable, the feed
 *   down (stale, greyed charts, the transport's countdown), a replay labelled historical with its data time;
 * - a bad or unsupported URL shows the API's message and falls back to a valid selection;
 * - the "As of" picker (issue 24): a past time shows the surface served then (the numbers equal GET surface?asOf),
 *   paused with a banner and not overwritten by the stream; "live" returns to live; a time with nothing served shows
 *   the API's 404 message; a link with asOf opens at that time on a phone, the picker fitting the width;
 * - the phone page does not overflow horizontally; dark theme; ARIA labels and a live region;
 * - weight: bytes over the wire of every asset (ECharts compressed under 400 KB), SSE bytes per second
 *   averaged over 30 s (under 10 KB/s), first-render time; written to test-artifacts/dashboard-metrics.json.
 * Screenshots go to test-artifacts/ (kept as CI artifacts).
 *
 * Without /usr/bin/chromium the suite is skipped with a loud banner, unless REQUIRE_BROWSER=1 (CI), where it
 * fails.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { testNowS } from '../helpers/simClock.js';
import { VOLATILITY_MODELS } from '../../src/domain/volatilityModels.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasBrowser = existsSync(CHROMIUM);
if (!hasBrowser) {
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} is missing: run scripts/install-chromium.sh`);
  console.warn(`\n${'!'.repeat(78)}\n!! BROWSER TESTS SKIPPED: ${CHROMIUM} not found (run scripts/install-chromium.sh)\n${'!'.repeat(78)}\n`);
}

/** Flags for a headless Chromium on a closed network (env/machines: background networking refused). */
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const ARTIFACTS = path.resolve('test-artifacts');
const metrics: Record<string, unknown> = {};

/** Bytes received over the wire per URL (CDP Network.dataReceived encodedDataLength: compressed bytes). */
class WireMeter {
  readonly bytes = new Map<string, number>();
  readonly encoding = new Map<string, string>();
  private readonly urls = new Map<string, string>();
  constructor(cdp: CDPSession) {
    cdp.on('Network.requestWillBeSent', (e: any) => this.urls.set(e.requestId, e.request.url));
    cdp.on('Network.responseReceived', (e: any) => this.encoding.set(e.response.url, e.response.headers['content-encoding'] ?? e.response.headers['Content-Encoding'] ?? ''));
    cdp.on('Network.dataReceived', (e: any) => {
      const u = this.urls.get(e.requestId) ?? '?';
      this.bytes.set(u, (this.bytes.get(u) ?? 0) + e.encodedDataLength);
    });
  }
  sum(match: (url: string) => boolean): number {
    let n = 0;
    for (const [u, b] of this.bytes) if (match(u)) n += b;
    return n;
  }
}

async function openPage(browser: Browser, url: string, viewport: { width: number; height: number }, colorScheme: 'light' | 'dark', errors: string[]): Promise<{ ctx: BrowserContext; page: Page; meter: WireMeter }> {
  const ctx = await browser.newContext({ viewport, colorScheme });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Network.enable');
  const meter = new WireMeter(cdp);
  await page.goto(url);
  return { ctx, page, meter };
}

const dashState = (page: Page) => page.evaluate(() => (window as any).dashboard.state);
const badge = (page: Page) => page.evaluate(() => ({ text: document.getElementById('live')!.textContent, kind: document.getElementById('live')!.dataset.kind, countdown: document.getElementById('countdown')!.textContent, stale: document.body.classList.contains('data-stale') }));

describe.skipIf(!hasBrowser)('live dashboard in headless Chromium', { timeout: 150_000 }, () => {
  let svc: RunningService;
  let B: string;
  let browser: Browser;
  let desk: { ctx: BrowserContext; page: Page; meter: WireMeter };
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    // two exchanges, so that the feed panel and the source selector have something to show
    svc = await startTestService({ SOURCES: 'DERIBIT,OKX', CALIBRATION_THROTTLE_MS: '500' });
    B = svc.url;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 90_000, '/ready 200');
    desk = await openPage(browser, `${B}/`, { width: 1440, height: 900 }, 'light', pageErrors);
    page = desk.page;
    await page.waitForFunction(() => (window as any).dashboard?.firstRenderMs !== null && (window as any).dashboard?.state?.surface, null, { timeout: 60_000 });
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  afterAll(async () => {
    writeFileSync(path.join(ARTIFACTS, 'dashboard-metrics.json'), `${JSON.stringify(metrics, null, 2)}\n`);
    console.log('dashboard metrics', JSON.stringify(metrics));
    await browser?.close().catch(() => {});
    await svc?.stop();
  });

  it('loads live at 1440x900: default selection, every chart with data, ARIA labels and a live region', async () => {
    expect(await page.title()).toMatch(/dashboard/i);
    await page.waitForFunction(() => document.getElementById('live')?.dataset.kind === 'on', null, { timeout: 15_000 });
    expect((await badge(page)).text).toBe('live · simulated');
    const info = await page.evaluate(() => {
      const d = (window as any).dashboard;
      const series = (c: any) => (c ? c.getOption().series.map((s: any) => ({ id: s.id, name: s.name, n: (s.data ?? []).length })) : null);
      const sm = d.state.surface.smiles.find((s: any) => s.expirationTimestamp === d.focus);
      return {
        selection: d.state.selection,
        models: d.state.surface.models,
        focusDays: sm.T * 365,
        focusQuotes: sm.quotes.length,
        focusBars: sm.quotes.filter((q: any) => q.bidIv > 0 && q.askIv > 0).length,
        expiries: d.state.surface.smiles.length,
        smile: series(d.charts.smile),
        cards: Object.values(d.charts.smiles).map(series),
        term: series(d.charts.term),
        surface: series(d.charts.surface),
        forward: series(d.charts.forward),
        funding: series(d.charts.funding),
        fitRows: document.querySelectorAll('#fit-table tbody tr').length,
        fitHead: [...document.querySelectorAll('#fit-table thead th')].map((th) => th.textContent),
        canvases: [...document.querySelectorAll('.chart')].every((el) => {
          const cv = el.querySelector('canvas');
          return !!cv && cv.width > 0 && cv.height > 0;
        }),
        aria: [...document.querySelectorAll('.chart')].map((el) => ({ role: el.getAttribute('role'), label: el.getAttribute('aria-label') ?? '' })),
        liveRegion: { role: document.getElementById('status')!.getAttribute('role'), live: document.getElementById('status')!.getAttribute('aria-live') },
        feedRows: [...document.querySelectorAll('#feeds tbody tr')].map((tr: any) => ({ source: tr.dataset.source, connected: tr.querySelector('[data-field=connected]').dataset.value })),
        firstRenderMs: d.firstRenderMs,
      };
    });
    expect(info.selection).toEqual({ source: 'DERIBIT', baseCurrency: 'BTC', quoteCurrency: 'USD', volatilityModel: 'SVI' });
    expect(new URL(page.url()).searchParams.get('source')).toBe('DERIBIT'); // the default is pinned in the URL
    expect(info.expiries).toBeGreaterThanOrEqual(8);
    // default focus: the listed expiry nearest 30 days
    expect(info.focusDays).toBeGreaterThan(5);
    // the large smile: marks = the quotes, bid/ask bars, the selected model's fit only (others optional)
    expect(info.smile.find((s: any) => s.id === 'marks').n).toBe(info.focusQuotes);
    expect(info.smile.find((s: any) => s.id === 'bidask').n).toBe(info.focusBars);
    expect(info.focusBars).toBeGreaterThan(0);
    expect(info.smile.find((s: any) => s.id === 'fit-SVI').n).toBe(61);
    expect(info.smile.some((s: any) => s.id === 'fit-SABR')).toBe(false);
    // the small multiples stay as an overview, one per expiry
    expect(info.cards).toHaveLength(info.expiries);
    for (const c of info.cards) expect(c.find((s: any) => s.id === 'fit').n).toBe(61);
    expect(info.term.find((s: any) => s.id === 'atm').n).toBe(info.expiries);
    expect(info.term.find((s: any) => s.id === '25D RR').n).toBeGreaterThan(0);
    // heatmap: expiries x 11 delta columns, blank only outside the quoted strikes
    expect(info.surface[0].n).toBeGreaterThan(info.expiries * 5);
    expect(info.fitRows).toBe(info.expiries * info.models.length);
    expect(info.fitHead).toEqual(expect.arrayContaining(['Status', 'RMSE vp', 'Max err vp', 'Repairs', 'Warnings']));
    expect(info.forward.find((s: any) => s.id === 'listed').n).toBeGreaterThanOrEqual(info.expiries);
    expect(info.forward.find((s: any) => s.id === 'cm').n + info.forward.find((s: any) => s.id === 'cmx').n).toBe(9);
    expect(info.funding[0].n).toBeGreaterThan(10);
    expect(info.canvases).toBe(true);
    for (const a of info.aria) {
      expect(a.role).toBe('img');
      expect(a.label.length).toBeGreaterThan(10);
    }
    expect(info.liveRegion).toEqual({ role: 'status', live: 'polite' });
    expect(info.feedRows.map((r: any) => r.source)).toEqual(svc.feeds.map((f) => f.source));
    for (const row of info.feedRows) expect(row.connected, row.source).toBe('true');
    metrics.firstRenderMs = Math.round(info.firstRenderMs);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1440.png'), fullPage: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1440-top.png') });
    expect(pageErrors).toEqual([]);
  });

  it('the numbers on the page equal the REST answers for the same snapshot, 24 h changes included', async () => {
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
        return r.status === 200 && r2.body.sequence === r.body.sequence && seq === r.body.sequence ? r2.body : null;
      },
      9_000,
      'a still surface shown on the page',
      50,
    );
    const [summary, fc] = await Promise.all([http('GET', `${B}/api/v1/global/data/iVSummary?${q}&volatilityModel=SVI`), http('GET', `${B}/api/v1/global/data/forwardCurve?${q}`)]);
    const p1 = await page.evaluate(() => {
      const v = (tr: Element, f: string) => {
        const x = (tr.querySelector(`[data-field=${f}]`) as HTMLElement | null)?.dataset.value;
        return x === undefined ? null : Number(x);
      };
      const rows = [...document.querySelectorAll('#term-table tbody tr')];
      return {
        seq: Number(document.getElementById('seq')!.dataset.value),
        obs: Number(document.getElementById('obs')!.dataset.value),
        listed: rows.filter((tr: any) => tr.dataset.expiry).map((tr: any) => ({
          expiry: Number(tr.dataset.expiry), forward: v(tr, 'forward'), atmVol: v(tr, 'atmVol'), delta25Skew: v(tr, 'delta25Skew'), diffAtmVol: v(tr, 'diffAtmVol'), diffDelta25Skew: v(tr, 'diffDelta25Skew'), diffDelta10Bfly: v(tr, 'diffDelta10Bfly'),
          atmText: tr.querySelector('[data-field=atmVol]').textContent,
        })),
        constMat: rows.filter((tr: any) => tr.dataset.constmat).map((tr: any) => ({ constMat: tr.dataset.constmat, atmVol: v(tr, 'atmVol'), diffAtmVol: v(tr, 'diffAtmVol'), extrapolated: tr.classList.contains('extrap') })),
        fwd: [...document.querySelectorAll('#forward-table tbody tr')].map((tr: any) => ({ constMat: tr.dataset.constmat, value: v(tr, 'value'), extrapolated: tr.querySelector('[data-field=extrapolated]').dataset.value === 'true' })),
        funding: (() => {
          const el = document.getElementById('funding-latest')!;
          return { value: Number(el.dataset.value), annualized: Number(el.dataset.annualized), timestamp: Number(el.dataset.timestamp), instrument: el.dataset.instrument!, text: el.textContent! };
        })(),
        fundingMeta: (window as any).dashboard.state.funding[0],
      };
    });
    expect(p1.seq).toBe(surface.sequence);
    expect(p1.obs).toBe(surface.observationTimestamp);
    expect(p1.listed.map((t) => t.expiry)).toEqual(surface.expiries.map((e: any) => e.expirationTimestamp));
    surface.expiries.forEach((e: any, i: number) => {
      expect(p1.listed[i]!.atmVol).toBeCloseTo(e.atmVol, 12);
      expect(p1.listed[i]!.forward! / e.forwardPrice).toBeCloseTo(1, 12);
      expect(p1.listed[i]!.atmText).toBe(`${(100 * e.atmVol).toFixed(2)} %`);
    });
    // 24 h changes: the page's equal iVSummary's for the same snapshot (listed by expiry, constant maturities by label)
    expect(summary.status).toBe(200);
    expect(summary.body.observationTimestamp).toBe(p1.obs);
    const byExpiry = new Map<number, any>(summary.body.volatilityListed.map((e: any) => [e.expirationTimestamp, e]));
    let diffs = 0;
    for (const t of p1.listed) {
      const e = byExpiry.get(t.expiry)!;
      expect(t.atmVol!).toBeCloseTo(e.atmVol, 12);
      expect(t.diffAtmVol).toBe(e.diffAtmVol);
      expect(t.diffDelta25Skew).toBe(e.diffDelta25Skew);
      expect(t.diffDelta10Bfly).toBe(e.diffDelta10Bfly);
      if (t.diffAtmVol !== null) diffs++;
    }
    expect(diffs).toBeGreaterThan(0); // the simulated 24 h history is seeded
    expect(p1.constMat.map((c) => c.constMat)).toEqual(summary.body.volatilityConstMat.map((c: any) => c.constMat));
    summary.body.volatilityConstMat.forEach((c: any, i: number) => {
      expect(p1.constMat[i]!.atmVol).toBe(c.atmVol);
      expect(p1.constMat[i]!.diffAtmVol).toBe(c.diffAtmVol);
    });
    // extrapolated constant maturities: beyond the last listed expiry
    const lastDays = Math.max(...surface.expiries.map((e: any) => (e.expirationTimestamp - surface.observationTimestamp) / 86400));
    const cmDays: Record<string, number> = { '1W': 7, '2W': 14, '1M': 30, '2M': 61, '3M': 91, '6M': 183, '9M': 274 };
    for (const c of p1.constMat) expect(c.extrapolated, c.constMat).toBe(cmDays[c.constMat]! > lastDays);
    // forward curve
    expect(fc.status).toBe(200);
    expect(p1.fwd.map((c) => c.constMat)).toEqual(fc.body.constMatYields.map((c: any) => c.constMat));
    fc.body.constMatYields.forEach((c: any, i: number) => expect(p1.fwd[i]!.value).toBe(c.value));
    expect(p1.fwd.find((c) => c.constMat === '12M')!.extrapolated).toBe(365 > lastDays);
    // funding: latest point equals /fundingRates; annualized = rate x 365 x 24 / interval hours, with units
    const funding = await http('GET', `${B}/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=${p1.funding.instrument}&startTime=0&endTime=${Math.ceil(testNowS()) + 86400}`);
    expect(funding.status).toBe(200);
    expect(p1.funding.timestamp).toBe(funding.body[0].timestamp);
    expect(p1.funding.value).toBe(funding.body[0].interest);
    expect(p1.funding.annualized).toBeCloseTo((funding.body[0].interest * 365 * 24) / p1.fundingMeta.intervalHours, 14);
    expect(p1.funding.text).toContain('% p.a.');
    expect(p1.funding.text).toContain(`per ${p1.fundingMeta.intervalHours} h`);
  });

  it('a chart updates within seconds as the simulator moves (server push of changes, no reload)', async () => {
    const before = await page.evaluate(() => {
      const d = (window as any).dashboard;
      const sm = d.state.surface.smiles.find((s: any) => s.expirationTimestamp === d.focus);
      return { updates: d.updates, patches: d.patches, seq: d.state.surface.sequence, marks: JSON.stringify(sm.quotes.map((q: any) => q.markIv)), nav: performance.getEntriesByType('navigation').length };
    });
    await page.waitForFunction(
      (b) => {
        const d = (window as any).dashboard;
        const sm = d.state.surface.smiles.find((s: any) => s.expirationTimestamp === d.focus);
        return d.patches > b.patches && d.state.surface.sequence > b.seq && JSON.stringify(sm.quotes.map((q: any) => q.markIv)) !== b.marks;
      },
      before,
      { timeout: 30_000, polling: 200 },
    );
    const after = await page.evaluate(() => ({ nav: performance.getEntriesByType('navigation').length, marks: (window as any).dashboard.charts.smile.getOption().series.find((s: any) => s.id === 'marks').data.map((p: any) => p.value[1]) }));
    expect(after.nav).toBe(before.nav);
    const state = await dashState(page);
    const sm = state.surface.smiles.find((s: any) => s.expirationTimestamp === state.focusExpiry || true);
    expect(after.marks.length).toBeGreaterThan(0);
    expect(sm).toBeTruthy();
  });

  it('switches the smile axis to call delta (= independent N(d1)) and log-moneyness, and zooms', async () => {
    await page.selectOption('#sel-axis', 'delta');
    const d = await page.evaluate(() => {
      const dd = (window as any).dashboard;
      const sm = dd.state.surface.smiles.find((s: any) => s.expirationTimestamp === dd.focus);
      const opt = dd.charts.smile.getOption();
      return { sm, marks: opt.series.find((s: any) => s.id === 'marks').data, inverse: opt.xAxis[0].inverse, zoom: opt.dataZoom.length };
    });
    expect(d.inverse).toBe(true); // puts on the left
    expect(d.zoom).toBeGreaterThanOrEqual(2);
    const byKey = new Map<string, any>(d.marks.map((m: any) => [m.key, m]));
    for (const q of d.sm.quotes) {
      const sd = q.markIv * Math.sqrt(d.sm.T);
      const ref = normalCdf(Math.log(d.sm.forward / q.strike) / sd + sd / 2, 0, 1);
      expect(Math.abs(q.delta - ref)).toBeLessThan(1e-5);
      expect(byKey.get(`${q.optionType}${q.strike}`).value[0]).toBe(q.delta);
    }
    await page.selectOption('#sel-axis', 'k');
    const k = await page.evaluate(() => {
      const dd = (window as any).dashboard;
      const sm = dd.state.surface.smiles.find((s: any) => s.expirationTimestamp === dd.focus);
      return { sm, marks: dd.charts.smile.getOption().series.find((s: any) => s.id === 'marks').data };
    });
    for (const m of k.marks) expect(m.value[0]).toBeCloseTo(Math.log(m.q.strike / k.sm.forward), 12);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1440-smile-k.png') });
    // zoom with the wheel inside the plot: the x window narrows
    const box = (await page.locator('#smile-chart').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -600);
    await page.waitForFunction(() => {
      const z = (window as any).dashboard.charts.smile.getOption().dataZoom[0];
      return z.end - z.start < 100;
    }, null, { timeout: 5_000 });
    await page.selectOption('#sel-axis', 'strike');
  });

  it('a tooltip on a market mark stays open across live updates, with C/P, strike, delta, bid/mark/ask, model IV and residual', async () => {
    // find a mark's pixel on the large smile, hover it
    const target = await page.evaluate(() => {
      const d = (window as any).dashboard;
      const c = d.charts.smile;
      const marks = c.getOption().series.find((s: any) => s.id === 'marks').data;
      const m = marks[Math.floor(marks.length / 2)];
      const [x, y] = c.convertToPixel({ seriesId: 'marks' }, m.value);
      const r = c.getDom().getBoundingClientRect();
      return { x: r.left + x, y: r.top + y, key: m.key, strike: m.q.strike, updates: d.updates };
    });
    await page.mouse.move(target.x - 30, target.y - 30);
    await page.mouse.move(target.x, target.y, { steps: 5 });
    const tip = () =>
      page.evaluate(() => {
        const el = [...document.querySelectorAll('.smile-tip')].find((e) => (e as HTMLElement).offsetParent !== null) as HTMLElement | undefined;
        if (!el) return null;
        const cs = getComputedStyle(el);
        return { text: el.innerText, visible: cs.display !== 'none' && cs.visibility !== 'hidden' && Number(cs.opacity) > 0.5 };
      });
    await page.waitForFunction(() => [...document.querySelectorAll('.smile-tip')].some((e) => (e as HTMLElement).innerText.includes('residual')), null, { timeout: 5_000 });
    const t0 = (await tip())!;
    expect(t0.visible).toBe(true);
    const strikeText = target.strike.toLocaleString('en-US');
    expect(t0.text).toContain(strikeText);
    expect(t0.text).toMatch(/(Call|Put) /);
    expect(t0.text).toMatch(/call delta 0\.\d{3}/);
    expect(t0.text).toMatch(/bid .* mark .* ask/);
    expect(t0.text).toMatch(/SVI \d+\.\d{2} % · residual [+-]\d+\.\d{2} vp/);
    // two live updates of the focused smile later, the same tooltip is still open
    await page.waitForFunction((u) => (window as any).dashboard.updates >= u + 2, target.updates, { timeout: 30_000, polling: 100 });
    await page.waitForTimeout(300);
    const t1 = (await tip())!;
    expect(t1).not.toBeNull();
    expect(t1.visible).toBe(true);
    expect(t1.text).toContain(strikeText);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1440-tooltip.png') });
    await page.mouse.move(5, 5);
  });

  it('compares with the smile of 24 h ago and with an earlier kept smile; the history series holds the 24 h', async () => {
    await page.waitForFunction(() => [...(document.getElementById('sel-compare') as HTMLSelectElement).options].some((o) => o.value === 'day'), null, { timeout: 10_000 });
    await page.selectOption('#sel-compare', 'day');
    const day = await page.evaluate(() => {
      const d = (window as any).dashboard;
      const t = d.state.surface.term.find((x: any) => x.expirationTimestamp === d.focus);
      const s = d.charts.smile.getOption().series.find((x: any) => x.id === 'cmp-day');
      return { past: t.dayAgo, pts: s ? s.data : [] };
    });
    expect(day.past).not.toBeNull();
    const atm = day.pts.find((p: any) => p.key === 'ATM');
    expect(atm.value[1]).toBeCloseTo(100 * day.past.atmVol, 10);
    const c25 = day.pts.find((p: any) => p.key === '25C');
    expect(c25.value[1]).toBeCloseTo(100 * (day.past.atmVol + day.past.delta25Bfly + day.past.delta25Skew / 2), 10);
    // keep the current smile, wait for the next one: the kept one becomes a choice
    await page.click('#pin');
    const seq = await page.evaluate(() => (window as any).dashboard.state.surface.sequence);
    await page.waitForFunction((s) => (window as any).dashboard.state.surface.sequence > s, seq, { timeout: 20_000 });
    await page.click('#pin');
    await page.selectOption('#sel-compare', `snap:${seq}`).catch(async () => {
      const opts = await page.evaluate(() => [...(document.getElementById('sel-compare') as HTMLSelectElement).options].map((o) => o.value));
      await page.selectOption('#sel-compare', opts.find((o) => o.startsWith('snap:'))!);
    });
    const snap = await page.evaluate(() => (window as any).dashboard.charts.smile.getOption().series.filter((s: any) => s.id.startsWith('cmp-snap')).map((s: any) => s.data.length));
    expect(snap[0]).toBe(61);
    await page.selectOption('#sel-compare', '');
    // held history of the focused expiry: 24 h of points (seeded) from /dashboard/api/history
    await page.waitForFunction(() => ((window as any).dashboard.history?.points?.length ?? 0) > 0, null, { timeout: 15_000 });
    const hist = await page.evaluate(() => ({ pts: (window as any).dashboard.history.points, n: (window as any).dashboard.charts.history.getOption().series[0].data.length }));
    expect(hist.n).toBe(hist.pts.length + 1); // + the current point
    expect(hist.pts[hist.pts.length - 1].t - hist.pts[0].t).toBeGreaterThan(20 * 3600);
  });

  it('the "As of" picker shows the surface served at a past time (= surface?asOf), paused with a banner; "live" returns to live', async () => {
    const q = 'source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD';
    const model = await page.evaluate(() => (window as any).dashboard.state.selection.volatilityModel);
    // 20 s before the surface shown, to the second (the picker's resolution): a surface recorded in the store (run
    // alone, the service may be younger than that: wait)
    const { asOf, rest } = await waitFor(
      async () => {
        const liveObs = await page.evaluate(() => (window as any).dashboard.state.surface.observationTimestamp);
        const t = Math.floor(liveObs) - 20;
        const r = await http('GET', `${B}/api/v1/global/data/surface?${q}&volatilityModel=${model}&asOf=${t}`);
        return r.status === 200 ? { asOf: t, rest: r } : null;
      },
      40_000,
      'a surface served 20 s before the one shown',
      1000,
    );
    expect(rest.body.observationTimestamp).toBeLessThanOrEqual(asOf);
    await page.fill('#asof-input', new Date(asOf * 1000).toISOString().slice(0, 19));
    await page.waitForFunction((t) => (window as any).dashboard.asOf === t && (window as any).dashboard.state?.asOf === t, asOf, { timeout: 10_000 });
    // the live stream keeps publishing; the page does not take it
    await page.waitForTimeout(2500);
    const shown = await page.evaluate(() => {
      const v = (tr: Element, f: string) => Number((tr.querySelector(`[data-field=${f}]`) as HTMLElement).dataset.value);
      const rows = [...document.querySelectorAll('#term-table tbody tr')].filter((tr: any) => tr.dataset.expiry);
      const banner = document.getElementById('asof-banner')!;
      return {
        seq: Number(document.getElementById('seq')!.dataset.value),
        obs: Number(document.getElementById('obs')!.dataset.value),
        listed: rows.map((tr: any) => ({ expiry: Number(tr.dataset.expiry), atmVol: v(tr, 'atmVol'), forward: v(tr, 'forward'), text: tr.querySelector('[data-field=atmVol]').textContent })),
        banner: banner.hidden ? null : banner.textContent,
        badge: { kind: document.getElementById('live')!.dataset.kind, text: document.getElementById('live')!.textContent },
        url: location.search,
        input: (document.getElementById('asof-input') as HTMLInputElement).value,
        liveEnabled: !(document.getElementById('asof-live') as HTMLButtonElement).disabled,
      };
    });
    expect(shown.seq).toBe(rest.body.sequence);
    expect(shown.obs).toBe(rest.body.observationTimestamp);
    expect(shown.listed.map((t) => t.expiry)).toEqual(rest.body.expiries.map((e: any) => e.expirationTimestamp));
    rest.body.expiries.forEach((e: any, i: number) => {
      expect(shown.listed[i]!.atmVol).toBeCloseTo(e.atmVol, 12);
      expect(shown.listed[i]!.forward / e.forwardPrice).toBeCloseTo(1, 12);
      expect(shown.listed[i]!.text).toBe(`${(100 * e.atmVol).toFixed(2)} %`);
    });
    const iso = new Date(asOf * 1000).toISOString().replace('T', ' ').slice(0, 19);
    expect(shown.banner).toContain(`As of ${iso} UTC — live updates paused`);
    expect(shown.banner).toContain(`(seq ${rest.body.sequence})`);
    expect(shown.badge).toEqual({ kind: 'asof', text: `as of ${iso} UTC · paused` });
    expect(shown.url).toContain(`asOf=${asOf}`);
    expect(shown.input).toBe(new Date(asOf * 1000).toISOString().slice(0, 19));
    expect(shown.liveEnabled).toBe(true);
    // the history series end at the chosen time, from the store
    await page.waitForFunction((t) => (window as any).dashboard.history?.origin === 'store' && (window as any).dashboard.history.key.includes(`asOf=${t}`), asOf, { timeout: 10_000 });
    const hist = await page.evaluate(() => (window as any).dashboard.history.points.map((p: any) => p.t));
    expect(Math.max(...hist)).toBeLessThanOrEqual(asOf);
    // how it looks at desktop width (test-artifacts/dashboard-asof-1280.png)
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-asof-1280.png') });
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-asof-1280-full.png'), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });

    // back to live: the stream again, newer surfaces, no banner
    await page.click('#asof-live');
    await page.waitForFunction(
      (s) => {
        const d = (window as any).dashboard;
        return d.asOf === null && d.state?.asOf === null && d.state.surface.sequence > s && document.getElementById('live')!.dataset.kind === 'on';
      },
      shown.seq,
      { timeout: 20_000 },
    );
    expect(await page.evaluate(() => ({ banner: document.getElementById('asof-banner')!.hidden, url: location.search, input: (document.getElementById('asof-input') as HTMLInputElement).value }))).toEqual({
      banner: true,
      url: expect.not.stringContaining('asOf') as unknown as string,
      input: '',
    });

    // a time with nothing served: the API's 404 message, and the page stays live
    const old = asOf - 20 * 86400;
    await page.fill('#asof-input', new Date(old * 1000).toISOString().slice(0, 19));
    await page.waitForFunction(() => !document.getElementById('notice')!.hidden && /Nothing to show as of/.test(document.getElementById('notice')!.textContent!), null, { timeout: 10_000 });
    const refused = await page.evaluate(() => ({ notice: document.getElementById('notice')!.textContent!, asOf: (window as any).dashboard.asOf, kind: document.getElementById('live')!.dataset.kind, surface: !!(window as any).dashboard.state.surface }));
    const api = await http('GET', `${B}/api/v1/global/data/surface?${q}&volatilityModel=${model}&asOf=${old}`);
    expect(api.status).toBe(404);
    expect(refused.notice).toContain('history kept from');
    expect(refused.notice).toMatch(/no \w+ surface of DERIBIT BTC\/USD was served at/);
    expect(refused).toMatchObject({ asOf: null, kind: 'on', surface: true });
    await page.evaluate(() => {
      document.getElementById('notice')!.hidden = true;
    });

    // a phone (390x844) opened on a link with asOf: the picker fits, nothing overflows (test-artifacts/dashboard-asof-390.png)
    const errors: string[] = [];
    const phone = await openPage(browser, `${B}/?${q}&volatilityModel=${model}&asOf=${asOf}`, { width: 390, height: 844 }, 'light', errors);
    const p = phone.page;
    await p.waitForFunction((t) => (window as any).dashboard?.state?.asOf === t && (window as any).dashboard.state.surface, asOf, { timeout: 30_000 });
    await p.waitForTimeout(800);
    const m = await p.evaluate(() => {
      const box = (id: string) => {
        const r = document.getElementById(id)!.getBoundingClientRect();
        return { left: r.left, right: r.right, width: r.width };
      };
      return { scrollWidth: document.documentElement.scrollWidth, input: box('asof-input'), live: box('asof-live'), banner: box('asof-banner'), seq: Number(document.getElementById('seq')!.dataset.value) };
    });
    expect(m.seq).toBe(rest.body.sequence);
    expect(m.scrollWidth).toBeLessThanOrEqual(390);
    for (const b of [m.input, m.live, m.banner]) {
      expect(b.left).toBeGreaterThanOrEqual(0);
      expect(b.right).toBeLessThanOrEqual(390);
    }
    expect(m.input.width).toBeGreaterThan(150);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-asof-390.png') });
    await phone.ctx.close();
    expect(errors).toEqual([]);
  });

  it('the model selector changes the emphasised fit, the RMSE label and the term structure; other models are optional', async () => {
    // the selector lists the server's models (src/domain/volatilityModels.ts, those with a surface), in that order
    expect(await page.$$eval('#sel-model option', (os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual([...VOLATILITY_MODELS]);
    await page.selectOption('#sel-model', 'SABR');
    await page.waitForFunction(() => (window as any).dashboard.state?.selection?.volatilityModel === 'SABR' && (window as any).dashboard.state.surface?.model === 'SABR', null, { timeout: 15_000 });
    const s1 = await page.evaluate(() => ({ ids: (window as any).dashboard.charts.smile.getOption().series.map((s: any) => s.id), info: document.getElementById('smile-info')!.textContent, sel: document.querySelector('#fit-table tr.selected-model [data-field=model]')!.textContent }));
    expect(s1.ids).toContain('fit-SABR');
    expect(s1.ids).not.toContain('fit-SVI');
    expect(s1.info).toContain('SABR RMSE');
    expect(s1.sel).toBe('SABR');
    await page.check('#show-others');
    // the stream re-subscribes asking for the other models' curves of the focused smile
    await page.waitForFunction((n) => (window as any).dashboard.charts.smile.getOption().series.filter((s: any) => s.id.startsWith('fit-')).length === n, VOLATILITY_MODELS.length, { timeout: 15_000 });
    const s2 = await page.evaluate(() => (window as any).dashboard.charts.smile.getOption().series.filter((s: any) => s.id.startsWith('fit-')).map((s: any) => ({ id: s.id, w: s.lineStyle.width })));
    expect(s2.map((s: any) => s.id).sort()).toEqual(VOLATILITY_MODELS.map((m) => `fit-${m}`).sort());
    expect(s2.find((s: any) => s.id === 'fit-SABR').w).toBeGreaterThan(s2.find((s: any) => s.id === 'fit-SVI').w);
    await page.uncheck('#show-others');
    await page.selectOption('#sel-model', 'SVI');
    await page.waitForFunction(() => (window as any).dashboard.state.surface?.model === 'SVI', null, { timeout: 15_000 });
  });

  it('a bad or unsupported URL shows the API message and falls back to a valid selection', async () => {
    for (const [qs, expected] of [
      ['?source=FOO', { source: 'DERIBIT', baseCurrency: 'BTC' }],
      ['?source=OKX&baseCurrency=SOL&quoteCurrency=USDC', { source: 'OKX', baseCurrency: 'BTC' }],
    ] as const) {
      const api = await http('GET', `${B}/dashboard/api/state${qs}`);
      expect(api.status).toBe(400);
      const errors: string[] = [];
      const p = await openPage(browser, `${B}/${qs}`, { width: 1440, height: 900 }, 'light', errors);
      await p.page.waitForFunction(() => !document.getElementById('notice')!.hidden && (window as any).dashboard.state?.surface, null, { timeout: 30_000 });
      const notice = await p.page.locator('#notice').textContent();
      expect(notice).toContain(api.body.message);
      expect(await dashState(p.page).then((s) => s.selection)).toMatchObject(expected);
      await p.page.waitForFunction(() => document.getElementById('live')!.dataset.kind === 'on', null, { timeout: 15_000 });
      expect(new URL(p.page.url()).searchParams.get('source')).toBe(expected.source);
      await p.page.screenshot({ path: path.join(ARTIFACTS, `dashboard-bad-url-${expected.source}.png`) });
      await p.ctx.close();
      // the 400 of the stream shows up in the console as a failed resource; nothing else may
      expect(errors.filter((e) => !/400/.test(e))).toEqual([]);
    }
  });

  it('at 390x844 (dark): no horizontal overflow, tables scroll inside their panel, compact header, charts drawn', async () => {
    const errors: string[] = [];
    const phone = await openPage(browser, `${B}/`, { width: 390, height: 844 }, 'dark', errors);
    const p = phone.page;
    await p.waitForFunction(() => (window as any).dashboard?.state?.surface && document.getElementById('live')?.dataset.kind === 'on', null, { timeout: 30_000 });
    await p.waitForTimeout(1500);
    const m = await p.evaluate(() => {
      const wide = [...document.querySelectorAll('body *')].filter((el) => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && r.right > window.innerWidth + 1 && !el.closest('.scroll');
      });
      return {
        scrollWidth: document.documentElement.scrollWidth,
        bodyScroll: document.body.scrollWidth,
        wide: wide.slice(0, 5).map((el) => `${el.tagName}#${el.id}.${el.className}`),
        tablesScroll: [...document.querySelectorAll('.scroll')].map((s) => ({ sw: s.scrollWidth, cw: s.clientWidth })),
        smileTop: document.getElementById('smile-chart')!.getBoundingClientRect().top,
        bg: getComputedStyle(document.body).backgroundColor,
        canvases: [...document.querySelectorAll('.chart canvas')].length,
      };
    });
    expect(m.scrollWidth).toBeLessThanOrEqual(390);
    expect(m.bodyScroll).toBeLessThanOrEqual(390);
    expect(m.wide).toEqual([]);
    // the wide tables are wider than the phone and scroll inside their panel
    expect(m.tablesScroll.some((t) => t.sw > t.cw)).toBe(true);
    // compact header and summary: the first chart starts within the first screen
    expect(m.smileTop).toBeLessThan(330);
    // dark theme by prefers-color-scheme
    const [r, g, b] = m.bg.match(/\d+/g)!.map(Number);
    expect(r! + g! + b!).toBeLessThan(120);
    expect(m.canvases).toBeGreaterThan(10);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-390.png'), fullPage: true });
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-390-top.png') });
    await phone.ctx.close();
    expect(errors).toEqual([]);
  });

  it('light on the wire: compressed assets (ECharts < 400 KB), SSE < 10 KB/s averaged over 30 s', async () => {
    const errors: string[] = [];
    const t0 = Date.now();
    const w = await openPage(browser, `${B}/`, { width: 1440, height: 900 }, 'light', errors);
    await w.page.waitForFunction(() => (window as any).dashboard?.firstRenderMs !== null && (window as any).dashboard?.state?.surface, null, { timeout: 60_000 });
    const firstRenderMs = await w.page.evaluate(() => (window as any).dashboard.firstRenderMs);
    await w.page.waitForTimeout(3000);
    const isStream = (u: string) => u.includes('/dashboard/api/stream');
    const assets = (u: string) => !isStream(u) && !u.includes('/dashboard/api/');
    const echartsBytes = w.meter.sum((u) => u.endsWith('/echarts.min.js'));
    const pageBytes = w.meter.sum(assets);
    const initialStream = w.meter.sum(isStream);
    const encoding = [...w.meter.encoding.entries()].find(([u]) => u.endsWith('/echarts.min.js'))?.[1];
    expect(['br', 'gzip']).toContain(encoding);
    expect(echartsBytes).toBeGreaterThan(100_000);
    expect(echartsBytes).toBeLessThan(400_000);
    // steady state: bytes of the event stream over 30 s at the default push rate (1 s checks)
    const s0 = w.meter.sum(isStream);
    const u0 = await w.page.evaluate(() => (window as any).dashboard.updates);
    await w.page.waitForTimeout(30_000);
    const s1 = w.meter.sum(isStream);
    const u1 = await w.page.evaluate(() => (window as any).dashboard.updates);
    const sseBytesPerS = (s1 - s0) / 30;
    expect(u1 - u0).toBeGreaterThan(5); // it kept updating
    expect(sseBytesPerS).toBeGreaterThan(0);
    expect(sseBytesPerS).toBeLessThan(10_000);
    Object.assign(metrics, {
      pageLoadWallMs: Date.now() - t0,
      firstRenderMsSecondLoad: Math.round(firstRenderMs),
      echartsWireBytes: echartsBytes,
      echartsEncoding: encoding,
      staticAssetsWireBytes: pageBytes,
      initialStreamWireBytes: initialStream,
      sseBytesPerS: Math.round(sseBytesPerS),
      sseUpdatesIn30s: u1 - u0,
      perUrl: Object.fromEntries([...w.meter.bytes].map(([u, b]) => [u.replace(B, ''), b])),
    });
    await w.ctx.close();
    expect(errors).toEqual([]);
  });

  it('the stream unreachable: the badge says reconnecting with a countdown, then live again', async () => {
    await page.route('**/dashboard/api/**', (route) => route.abort());
    await page.selectOption('#sel-pair', 'ETH/USD'); // a new subscription, refused
    await page.waitForFunction(() => /reconnecting|connecting/.test(document.getElementById('live')!.textContent!) && /in \d+ s/.test(document.getElementById('countdown')!.textContent!), null, { timeout: 15_000 });
    const b = await badge(page);
    expect(b.kind).toBe('off');
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1440-reconnecting.png') });
    await page.unroute('**/dashboard/api/**');
    await page.waitForFunction(() => document.getElementById('live')!.dataset.kind === 'on' && (window as any).dashboard.state?.selection?.baseCurrency === 'ETH', null, { timeout: 40_000 });
    pageErrors.length = 0; // the refused requests above are logged as console errors by Chromium
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
    expect(errors).toEqual([]);
    await docs.close();
  });

  it('the "Streaming API" panel counts a WebSocket client of /api/v1/ws and the messages pushed to it', async () => {
    const ws = new WebSocket(`${B.replace(/^http/, 'ws')}/api/v1/ws`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'public/subscribe', params: { channels: ['surface.DERIBIT.BTC-USD.SVI'] } }));
    await page.waitForSelector('#streaming-panel:not([hidden])', { timeout: 20_000 });
    await page.waitForFunction(() => Number(document.querySelector('#streaming td[data-field="ws"]')?.getAttribute('data-value')) >= 1 && Number(document.querySelector('#streaming td[data-field="messages"]')?.getAttribute('data-value')) >= 1, null, { timeout: 20_000 });
    ws.terminate();
    expect(pageErrors).toEqual([]);
  });

  it('switching the pair and the exchange re-subscribes and shows that market', async () => {
    await page.selectOption('#sel-source', 'OKX');
    await page.waitForFunction(() => (window as any).dashboard.state?.selection?.source === 'OKX' && (window as any).dashboard.state.surface, null, { timeout: 15_000 });
    const okx = await page.evaluate(() => (window as any).dashboard.state.selection);
    expect(okx).toMatchObject({ source: 'OKX', baseCurrency: 'ETH', quoteCurrency: 'USD' });
    const spot = await page.evaluate(() => (window as any).dashboard.state.surface.spot);
    const r = await http('GET', `${B}/api/v1/global/data/surface?source=OKX&baseCurrency=ETH&quoteCurrency=USD&volatilityModel=SVI`);
    expect(spot / r.body.spotPrice).toBeGreaterThan(0.95);
    expect(spot / r.body.spotPrice).toBeLessThan(1.05);
    await page.selectOption('#sel-source', 'DERIBIT');
    await page.selectOption('#sel-pair', 'BTC/USD');
    await page.waitForFunction(() => (window as any).dashboard.state?.selection?.source === 'DERIBIT' && (window as any).dashboard.state.selection.baseCurrency === 'BTC' && (window as any).dashboard.state.surface, null, { timeout: 15_000 });
    expect(pageErrors).toEqual([]);
  });

  it('the Deribit feed down: stale badge with the reconnect countdown and attempts, greyed charts', async () => {
    await svc.simulator!.close(); // the exchange goes away: every reconnect attempt is refused
    await page.waitForFunction(() => document.getElementById('live')!.dataset.kind === 'bad' && document.body.classList.contains('data-stale'), null, { timeout: 30_000 });
    await page.waitForFunction(() => /in \d+ s \(attempt \d+\)/.test(document.getElementById('countdown')!.textContent!), null, { timeout: 30_000 });
    // the first retry comes within the first backoff (<= 1 s) and is refused
    await page.waitForFunction(() => Number((document.querySelector('#feeds tr[data-source=DERIBIT] [data-field=reconnects]') as HTMLElement | null)?.dataset.attempts) >= 1, null, { timeout: 30_000 });
    const b = await badge(page);
    expect(b.text).toContain('DERIBIT feed down');
    const row = await page.evaluate(() => {
      const tr = document.querySelector('#feeds tr[data-source=DERIBIT]')!;
      return { connected: (tr.querySelector('[data-field=connected]') as HTMLElement).dataset.value, attempts: Number((tr.querySelector('[data-field=reconnects]') as HTMLElement).dataset.attempts), stale: (tr.querySelector('[data-field=stalePairs]') as HTMLElement).textContent };
    });
    expect(row.connected).toBe('false');
    expect(row.attempts).toBeGreaterThanOrEqual(1);
    expect(row.stale).toContain('BTC/USD');
    const filter = await page.evaluate(() => getComputedStyle(document.getElementById('smile-chart')!).filter);
    expect(filter).toContain('grayscale');
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1440-stale.png') });
  });
});

describe.skipIf(!hasBrowser)('dashboard on a replay of the real 878-option Deribit chain', { timeout: 150_000 }, () => {
  let svc: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    svc = await startTestService({ MARKET_SOURCE: 'replay', REPLAY_FILE: 'data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', SOURCES: 'DERIBIT' });
    await svc.replayDone;
    await waitFor(() => svc.settled(), 60_000, 'calibration settled');
    await waitFor(async () => (await http('GET', `${svc.url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`)).status === 200, 60_000, 'replayed surface');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close().catch(() => {});
    await svc?.stop();
  });

  it('is labelled replay and historical with the data time, ages in days; bid/ask bars from prices', async () => {
    const errors: string[] = [];
    const { ctx, page } = await openPage(browser, `${svc.url}/`, { width: 1440, height: 900 }, 'light', errors);
    await page.waitForFunction(() => (window as any).dashboard?.state?.surface && document.getElementById('live')!.dataset.kind === 'replay', null, { timeout: 30_000 });
    const b = await badge(page);
    expect(b.text).toMatch(/^replay · historical · data of 2026-05-26 19:2\d UTC/);
    expect(b.stale).toBe(false);
    expect(await page.locator('#age').textContent()).toMatch(/^\d+\.\d d \(historical\)$/);
    // Deribit sent bid_iv = ask_iv = 0 on this chain: the bars come from the bid/ask prices
    const bars = await page.evaluate(() => {
      const s = (window as any).dashboard.state.surface.smiles;
      const all = s.flatMap((x: any) => x.quotes);
      return { quotes: all.length, twoSided: all.filter((q: any) => q.bidIv > 0 && q.askIv > 0).length, chart: (window as any).dashboard.charts.smile.getOption().series.find((x: any) => x.id === 'bidask').data.length };
    });
    expect(bars.twoSided / bars.quotes).toBeGreaterThan(0.5);
    expect(bars.chart).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-replay-1440.png'), fullPage: true });
    await ctx.close();
    expect(errors).toEqual([]);
  });
});
