/**
 * Benchmark: POST /api/v1/global/scenarios/riskScenarios with 100 instruments through fastify inject()
 * (validation, cache reads, pricing, JSON serialization; no socket), on a constructed SVI surface and forward
 * curve of DERIBIT BTC/USD. Prints latency percentiles; asserts nothing (issue 5 target: well under 50 ms
 * for 100 instruments and a 9-rung ladder, i.e. priceRangeSteps 4).
 *
 * Run: npx tsx bench/scenarios.bench.ts [iterations]
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/api/app.js';
import { MarketCache } from '../src/cache/marketCache.js';
import { MarketClock } from '../src/domain/clock.js';
import { ForwardCurve } from '../src/quant/forwardCurve.js';
import { VolSurface } from '../src/quant/surface.js';

const OBS = 1_750_000_000;
const DAY = 86400;
const YEAR = 365 * DAY;
const SPOT = 60_000;
const pair = { base: 'BTC', quote: 'USD' } as const;
const EXPIRY_DAYS = [1, 2, 7, 14, 30, 60, 90, 180, 270, 365];

function market(): MarketCache {
  const cache = new MarketCache(new MarketClock(OBS), 30, [{ source: 'DERIBIT', pair }]);
  const Ts = EXPIRY_DAYS.map((d) => (d * DAY) / YEAR);
  const curve = new ForwardCurve(SPOT, Ts.map((T) => ({ expirationTimestamp: OBS + Math.round(T * YEAR), T, forward: SPOT * (1 + 0.05 * T) })));
  const surface = new VolSurface(
    Ts.map((T) => ({ expirationTimestamp: OBS + Math.round(T * YEAR), T, forward: curve.forward(T), params: { a: 0.36 * T * 0.85, b: 0.36 * T * 0.5, rho: -0.3, m: 0, sigma: 0.3 } })),
  );
  cache.putSurface({ source: 'DERIBIT', pair, model: 'SVI', observationTimestamp: OBS, spot: SPOT, slices: [], surface, forwardCurve: curve, calibrationMs: 1, sequence: 1 });
  cache.putForwardCurve({ source: 'DERIBIT', pair, observationTimestamp: OBS, spot: SPOT, points: [], curve, sequence: 1 });
  cache.touch('DERIBIT', pair, OBS);
  cache.setFeedConnected('DERIBIT', true);
  return cache;
}

/** 100 instruments: 90 options over the expiries and strikes 70 %..130 % of spot, 5 forwards, 3 perpetuals, 2 spot. */
function portfolio(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < 90; i++) {
    out.push({
      instrumentId: `opt${i}`,
      size: i % 3 === 0 ? -1 : 2,
      baseCurrency: 'BTC',
      quoteCurrency: 'USD',
      source: 'DERIBIT',
      priceMethod: 'DERIBIT',
      instrumentType: i % 2 === 0 ? 'CALL' : 'PUT',
      volatilityModel: 'SVI',
      expirationTimestamp: OBS + EXPIRY_DAYS[i % EXPIRY_DAYS.length]! * DAY,
      strike: Math.round(SPOT * (0.7 + (0.6 * (i % 13)) / 12)),
    });
  }
  for (let i = 0; i < 5; i++) {
    out.push({ instrumentId: `fwd${i}`, size: 1, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: 'FORWARD', expirationTimestamp: OBS + EXPIRY_DAYS[i + 3]! * DAY });
  }
  for (let i = 0; i < 3; i++) {
    out.push({ instrumentId: `perp${i}`, size: -1, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: 'PERPETUAL', expirationTimestamp: OBS });
  }
  for (let i = 0; i < 2; i++) {
    out.push({ instrumentId: `spot${i}`, size: 0.5, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: 'SPOT' });
  }
  return out;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function run(): Promise<void> {
  const iterations = Number(process.argv[2] ?? 200);
  const app = await buildApp({ cache: market() });
  const instruments = portfolio();
  for (const steps of [4, 9]) {
    const payload = { riskScenarioInstruments: instruments, riskScenarioParameters: { priceRangeSteps: steps, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 } };
    const once = async () => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const res = await app.inject({ method: 'POST', url: '/api/v1/global/scenarios/riskScenarios', payload });
      const ms = performance.now() - t0;
      const c = process.cpuUsage(c0);
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${res.body.slice(0, 300)}`);
      return { ms, cpuMs: (c.user + c.system) / 1000, bytes: res.rawPayload.length };
    };
    for (let i = 0; i < 20; i++) await once(); // warm-up (JIT)
    const times: number[] = [];
    const cpu: number[] = [];
    let bytes = 0;
    for (let i = 0; i < iterations; i++) {
      const r = await once();
      times.push(r.ms);
      cpu.push(r.cpuMs);
      bytes = r.bytes;
    }
    times.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    console.log(
      `riskScenarios 100 instruments, priceRangeSteps ${steps} (${2 * steps + 1} rungs x 3 vols), ${iterations} runs: ` +
        `wall p50 ${pct(times, 50).toFixed(2)} ms, p90 ${pct(times, 90).toFixed(2)} ms, p99 ${pct(times, 99).toFixed(2)} ms, ` +
        `mean ${mean.toFixed(2)} ms; process CPU p50 ${pct(cpu, 50).toFixed(2)} ms; response ${(bytes / 1024).toFixed(0)} KiB` +
        ` (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores)`,
    );
  }
  await app.close();
}

await run();
