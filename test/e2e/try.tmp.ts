import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { startTestService, waitFor, http } from '../helpers/service.js';
const svc = await startTestService({ SOURCES: 'DERIBIT,OKX', CALIBRATION_THROTTLE_MS: '500' });
await waitFor(async () => (await http('GET', `${svc.url}/ready`)).status === 200, 90_000, 'ready');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
mkdirSync('test-artifacts', { recursive: true });
for (const [w, h, scheme] of [[1440, 900, 'light'], [390, 844, 'dark']] as const) {
  const ctx = await browser.newContext({ viewport: { width: w, height: h }, colorScheme: scheme });
  const page = await ctx.newPage();
  const errs: string[] = [];
  page.on('pageerror', (e) => errs.push(e.message)); page.on('console', (m) => { if (m.type() === 'error') errs.push(m.text()); });
  const cdp = await ctx.newCDPSession(page); await cdp.send('Network.enable');
  const per: Record<string, number> = {}; const urls = new Map<string, string>();
  cdp.on('Network.requestWillBeSent', (e: any) => urls.set(e.requestId, e.request.url));
  cdp.on('Network.dataReceived', (e: any) => { const u = urls.get(e.requestId) ?? '?'; per[u] = (per[u] ?? 0) + e.encodedDataLength; });
  await page.goto(svc.url + '/');
  await page.waitForFunction(() => (window as any).dashboard?.firstRenderMs, null, { timeout: 60000 });
  const fr = await page.evaluate(() => (window as any).dashboard.firstRenderMs);
  await page.waitForTimeout(w === 1440 ? 8000 : 4000);
  const sw = await page.evaluate(() => document.documentElement.scrollWidth);
  console.log(w, { fr, sw, errs, per, status: await page.evaluate(() => (window as any).dashboard.status) });
  await page.screenshot({ path: `test-artifacts/try-${w}.png`, fullPage: true });
  await page.screenshot({ path: `test-artifacts/try-${w}-top.png` });
  const n = await page.locator('main > section').count();
  for (let i = 0; i < n; i++) await page.locator('main > section').nth(i).screenshot({ path: `test-artifacts/try-${w}-s${i}.png` });
  await ctx.close();
}
await browser.close(); await svc.stop(); process.exit(0);
