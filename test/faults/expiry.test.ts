/**
 * An expiry that passes while the service runs rolls off cleanly (issue 8 "Faults").
 *
 * The service runs in replay mode, where its clock is the messages' own time, on files crafted from
 * the REAL recorded 878-option BTC chain of 2026-05-26 19:27 UTC (data/replay/): the recorded
 * messages, then the same tickers re-stamped 30 minutes before the 27MAY26 08:00 UTC expiry, then
 * re-stamped 10 minutes after it (the 27MAY26 options then print `state: closed`, as Deribit's
 * settlement tickers do). Three services read the file up to each phase.
 *
 * Checked: before, 27MAY26 is a fitted expiry; 30 minutes before expiry it has left the fit (the
 * service fits no expiry closer than an hour: src/quant/chain/expiryGroups.ts MIN_EXPIRY_SECONDS) while the
 * other ten stay; after expiry it is gone from the surface and the forward curve, a request for it
 * is a 400 ("Must be >= current time"), the closed tickers are counted drops, and the next expiry
 * answers byStrike on its recorded mark IVs. No crash, ready throughout.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';

const CHAIN = new URL('../../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url).pathname;
const EXPIRY_27MAY26 = Date.UTC(2026, 4, 27, 8) / 1000;
const NEXT_28MAY26 = Date.UTC(2026, 4, 28, 8) / 1000;
const T_BEFORE = EXPIRY_27MAY26 - 1800;
const T_AFTER = EXPIRY_27MAY26 + 600;

const lines = readFileSync(CHAIN, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '');

/** The recorded lines re-stamped at `tS`; 27MAY26 options closed when `closeExpired`. */
function restamped(tS: number, closeExpired: boolean): string[] {
  return lines.map((l) => {
    const m = JSON.parse(l);
    const d = m.params.data;
    d.timestamp = tS * 1000;
    if (closeExpired && String(d.instrument_name ?? '').startsWith('BTC-27MAY26-')) {
      d.state = 'closed';
    }
    return JSON.stringify(m);
  });
}

const dir = mkdtempSync(join(tmpdir(), 'vss-expiry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function phaseFile(name: string, ls: string[]): string {
  const f = join(dir, `${name}.jsonl`);
  writeFileSync(f, `${ls.join('\n')}\n`);
  return f;
}

let running: RunningService[] = [];
afterEach(async () => {
  await Promise.all(running.map((s) => s.stop()));
  running = [];
});

async function replay(file: string): Promise<RunningService> {
  const svc = await startTestService({ MARKET_SOURCE: 'replay', REPLAY_FILE: file, CALIBRATION_THROTTLE_MS: '50' });
  running.push(svc);
  await svc.replayDone;
  await waitFor(async () => (await http('GET', `${svc.url}/ready`)).status === 200, 30_000, 'replay ready');
  await waitFor(() => svc.settled(), 30_000, 'calibration settled', 50);
  return svc;
}

async function surface(svc: RunningService): Promise<{ observationTimestamp: number; skipped: Array<{ expirationTimestamp: number; reason: string }>; expiries: Array<{ expirationTimestamp: number; forwardPrice: number }> }> {
  const r = await http('GET', `${svc.url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`);
  expect(r.status).toBe(200);
  return r.body;
}

/** Recorded mark IVs of one expiry, OTM side, by strike. */
function recordedOtm(expiry: number, forward: number): Map<number, number> {
  const out = new Map<number, number>();
  const code = '28MAY26';
  if (expiry !== NEXT_28MAY26) throw new Error('only 28MAY26 is tabulated');
  for (const l of lines) {
    const d = JSON.parse(l).params.data;
    const name = String(d.instrument_name ?? '');
    if (!name.startsWith(`BTC-${code}-`)) continue;
    const [, , k, type] = name.split('-');
    const strike = Number(k);
    if ((strike >= forward && type === 'C') || (strike < forward && type === 'P')) out.set(strike, d.mark_iv / 100);
  }
  return out;
}

async function byStrike(svc: RunningService, expiry: number, strikes: number[]) {
  return http(
    'POST',
    `${svc.url}/api/v1/global/data/iV/byStrike`,
    strikes.map((strike, i) => ({ instrumentId: `k${i}`, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: expiry, strike })),
  );
}

describe('an expiry passing while the service runs', () => {
  it('before: the nearest expiry (27MAY26, 12.5 h away) is fitted with the ten others', async () => {
    const svc = await replay(phaseFile('a-recorded', lines));
    const s = await surface(svc);
    expect(s.expiries.map((e) => e.expirationTimestamp)).toContain(EXPIRY_27MAY26);
    expect(s.expiries).toHaveLength(11);
  });

  it('30 minutes before expiry it has left the fit; the others stay; nothing else changes', async () => {
    const svc = await replay(phaseFile('b-before', [...lines, ...restamped(T_BEFORE, false)]));
    expect(svc.clock.now()).toBe(T_BEFORE);
    const s = await surface(svc);
    expect(s.observationTimestamp).toBe(T_BEFORE);
    const listed = s.expiries.map((e) => e.expirationTimestamp);
    expect(listed).not.toContain(EXPIRY_27MAY26);
    expect(listed).toHaveLength(10);
    expect(listed[0]).toBe(NEXT_28MAY26);
    if (s.skipped) expect(s.skipped.find((k) => k.expirationTimestamp === EXPIRY_27MAY26)?.reason).toMatch(/within the hour/);
    // the expiry itself is still in the future: a request for it is answered from the surface, finite
    const r = await byStrike(svc, EXPIRY_27MAY26, [76_000]);
    expect(r.status).toBe(200);
    expect(Number.isFinite(r.body[0].impliedVolatility)).toBe(true);
    expect(r.body[0].impliedVolatility).toBeGreaterThan(0);
  });

  it('after expiry: gone from surface and forward curve, requests for it are 400, closed tickers counted, the next expiry answers on its marks', async () => {
    const svc = await replay(phaseFile('c-after', [...lines, ...restamped(T_BEFORE, false), ...restamped(T_AFTER, true)]));
    expect(svc.clock.now()).toBe(T_AFTER);
    const s = await surface(svc);
    const listed = s.expiries.map((e) => e.expirationTimestamp);
    expect(listed).not.toContain(EXPIRY_27MAY26);
    expect(listed).toHaveLength(10);
    const curve = await http('GET', `${svc.url}/api/v1/global/data/forwardCurve?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD`);
    expect(curve.status).toBe(200);
    expect(curve.body.fixedYields.map((y: { expirationTimestamp: number }) => y.expirationTimestamp)).not.toContain(EXPIRY_27MAY26);
    for (const y of curve.body.fixedYields) expect(y.expirationTimestamp).toBeGreaterThan(T_AFTER);

    const past = await byStrike(svc, EXPIRY_27MAY26, [76_000]);
    expect(past.status).toBe(400);
    expect(past.body.details[0]).toMatchObject({ path: '[0].expirationTimestamp' });
    expect(past.body.details[0].message).toMatch(/Must be >= current time/);

    // the 56 closed 27MAY26 tickers of the last phase were dropped and counted, not applied
    expect(svc.feeds[0]!.stats().dropped['closed-instrument']).toBe(56);

    const next = s.expiries.find((e) => e.expirationTimestamp === NEXT_28MAY26)!;
    const marks = recordedOtm(NEXT_28MAY26, next.forwardPrice);
    const strikes = [...marks.keys()].filter((k) => Math.abs(Math.log(k / next.forwardPrice)) < 0.1);
    expect(strikes.length).toBeGreaterThan(10);
    const r = await byStrike(svc, NEXT_28MAY26, strikes);
    expect(r.status).toBe(200);
    // within the fit's own reported max error at its quotes (vol points), and never far off
    const maxErr = (next as unknown as { diagnostics: { maxErrorVolPts: number; rmseVolPts: number } }).diagnostics;
    if (process.env.FAULT_REPORT) console.info('28MAY26 fit after the roll', maxErr);
    expect(maxErr.rmseVolPts).toBeLessThan(1.5);
    r.body.forEach((row: { impliedVolatility: number }, i: number) => {
      expect(Math.abs(row.impliedVolatility - marks.get(strikes[i]!)!)).toBeLessThanOrEqual(Math.min(0.03, maxErr.maxErrorVolPts / 100 + 1e-6));
    });
    expect((await http('GET', `${svc.url}/ready`)).status).toBe(200);
  });
});
