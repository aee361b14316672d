/**
 * The service on real recorded OKX and Bybit input (MARKET_SOURCE=replay with REPLAY_FILE_OKX /
 * REPLAY_FILE_BYBIT): tardis-node's OKX options pushes of 2021-12-20 (the 2021 opt-summary format, forward
 * recovered from deltaBS) and Bybit's option and linear tickers of 2023-04-05 (test/fixtures/*\/replay-*).
 * The replay clock is the messages' own time. The recordings hold one option per expiry, so each slice
 * is a flat smile through its one quote: byStrike at the recorded strike returns the recorded mark IV.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';

const OKX_FILE = 'test/fixtures/okx/replay-okx-options-2021-12-20.jsonl';
const BYBIT_FILE = 'test/fixtures/bybit/replay-bybit-tickers-2023-04-05.jsonl';

let running: RunningService[] = [];
afterEach(async () => {
  await Promise.all(running.map((s) => s.stop()));
  running = [];
});

async function replay(env: Record<string, string>): Promise<RunningService> {
  const svc = await startTestService({ MARKET_SOURCE: 'replay', CALIBRATION_THROTTLE_MS: '50', ...env });
  running.push(svc);
  await svc.replayDone;
  await waitFor(async () => (await http('GET', `${svc.url}/ready`)).status === 200, 20_000, 'replay ready');
  await waitFor(() => svc.settled(), 20_000, 'calibration settled', 50);
  return svc;
}

const at8 = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d, 8) / 1000;

describe('replay of recorded OKX and Bybit files', () => {
  it('OKX 2021-12-20: ETH/USD answers byStrike with the recorded markVol and vanilla with OKX coin delta', async () => {
    const svc = await replay({ REPLAY_FILE_OKX: OKX_FILE });
    expect(svc.clock.now()).toBe(1640001659.508);
    const ready = await http('GET', `${svc.url}/ready`);
    expect(ready.body.pairs.map((p: { source: string; pair: string }) => `${p.source}:${p.pair}`)).toEqual(['OKX:ETH/USD']);
    const item = (id: string, expiry: number, strike: number) => ({ instrumentId: id, baseCurrency: 'ETH', quoteCurrency: 'USD', source: 'OKX', volatilityModel: 'SVI', expirationTimestamp: expiry, strike });
    const r = await http('POST', `${svc.url}/api/v1/global/data/iV/byStrike`, [item('c1', at8(2021, 12, 22), 4000), item('c2', at8(2021, 12, 31), 9600)]);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect(r.body[0].impliedVolatility).toBeCloseTo(0.7794507758, 6);
    expect(r.body[1].impliedVolatility).toBeCloseTo(1.8880399194, 6);
    const surface = await http('GET', `${svc.url}/api/v1/global/data/surface?source=OKX&baseCurrency=ETH&quoteCurrency=USD&volatilityModel=SVI`);
    expect(surface.body.expiries.map((e: { expirationTimestamp: number }) => e.expirationTimestamp)).toEqual([at8(2021, 12, 22), at8(2021, 12, 31)]);
    expect(surface.body.spotPrice).toBe(3814.05);
    // OKX's own convention on its own numbers: ETH-USD-211222-4000-C prints the coin delta 0.1975745164
    // (deltaBS 0.2038286081 minus the coin premium; the 2021 pushes agree with themselves to 1e-4)
    const v = await http('POST', `${svc.url}/api/v1/global/optionValuation/vanilla`, [
      { instrumentId: 'v', baseCurrency: 'ETH', quoteCurrency: 'USD', amount: 1, vanillaOptionType: 'CALL', source: 'OKX', priceMethod: 'XCHG_B', expirationTimestamp: at8(2021, 12, 22), strike: 4000, volatilityModel: 'SVI' },
    ]);
    expect(v.status, JSON.stringify(v.body).slice(0, 300)).toBe(200);
    expect(Math.abs(v.body[0].deltaBase - 0.1975745164)).toBeLessThan(3e-4);
    expect(v.body[0].impliedVolatility).toBeCloseTo(0.7794507758, 6);
  });

  it('Bybit 2023-04-05: SOL/USDC and ETH/USDC answer byStrike with the recorded markPriceIv; the forward curve uses underlyingPrice', async () => {
    // the recorded linear tickers come 6 hours after the option tickers: a day of staleness allowed
    const svc = await replay({ REPLAY_FILE_BYBIT: BYBIT_FILE, STALE_AFTER_S: '86400' });
    expect(svc.clock.now()).toBe(1680673822.776);
    const ready = await http('GET', `${svc.url}/ready`);
    expect(ready.body.pairs.map((p: { source: string; pair: string }) => `${p.source}:${p.pair}`).sort()).toEqual(['BYBIT:ETH/USDC', 'BYBIT:SOL/USDC']);
    const r = await http('POST', `${svc.url}/api/v1/global/data/iV/byStrike`, [
      { instrumentId: 's', baseCurrency: 'SOL', quoteCurrency: 'USDC', source: 'BYBIT', volatilityModel: 'SVI', expirationTimestamp: at8(2023, 4, 28), strike: 24 },
      { instrumentId: 'e', baseCurrency: 'ETH', quoteCurrency: 'USDC', source: 'XCHG_C', volatilityModel: 'SVI', expirationTimestamp: at8(2023, 6, 30), strike: 200 },
    ]);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect(r.body[0].impliedVolatility).toBeCloseTo(1.4674, 6);
    expect(r.body[1].impliedVolatility).toBeCloseTo(1.5991, 6);
    const curve = svc.cache.getForwardCurve('BYBIT', { base: 'ETH', quote: 'USDC' })!;
    expect(curve.spot).toBe(1871.27);
    expect(curve.points.map((p) => p.forward)).toEqual([1886.16]);
    const fc = await http('GET', `${svc.url}/api/v1/global/data/forwardCurve?source=BYBIT&baseCurrency=ETH&quoteCurrency=USDC`);
    expect(fc.status).toBe(200);
    const fy = fc.body.fixedYields[0];
    expect(fy.value).toBeCloseTo((1886.16 / 1871.27 - 1) / curve.points[0]!.T, 10);
  });

  it('takes one file per exchange at once, on one clock: the latest message time over the files', async () => {
    const svc = await startTestService({ MARKET_SOURCE: 'replay', CALIBRATION_THROTTLE_MS: '50', REPLAY_FILE_OKX: OKX_FILE, REPLAY_FILE_BYBIT: BYBIT_FILE, STALE_AFTER_S: '86400' });
    running.push(svc);
    expect(svc.feeds.map((f) => f.source)).toEqual(['OKX', 'BYBIT']);
    await svc.replayDone;
    expect(svc.clock.now()).toBe(1680673822.776);
    // the Bybit recording (2023) is calibrated; recordings of different dates share that clock, so the
    // 2021 OKX options have expired by then: record the exchanges over the same period to replay them together
    await waitFor(() => svc.cache.getSurface('BYBIT', { base: 'SOL', quote: 'USDC' }, 'SVI') !== undefined, 20_000, 'Bybit calibrated');
    expect(svc.feeds.map((f) => f.stats().messages)).toEqual([5, 7]);
  });
});
