/**
 * Child process of the REST benchmark (bench/rest.ts): serves, on 127.0.0.1,
 * - the real application (buildApp, security headers on, rate limit and overload shedding off so
 *   that the load generator is not refused) over a cache calibrated from the real 878-option
 *   Deribit BTC chain (test/helpers/realChainCache.ts), and
 * - a bare fastify instance whose POST routes take the same request body and answer a fixed JSON
 *   string of exactly the bytes the real route answers (the physical limit of fastify + Node HTTP
 *   for that request/response size).
 * It reports `{type: 'ready', appPort, barePort, cases}` over IPC and runs until SIGTERM.
 */
import Fastify from 'fastify';
import { buildApp } from '../src/api/app.js';
import { REAL_CHAIN_FILE, realChainCache } from '../test/helpers/realChainCache.js';

export interface RestCase {
  readonly name: string;
  readonly path: string;
  readonly barePath: string;
  readonly body: string;
  readonly responseBytes: number;
}

async function main(): Promise<void> {
  // (the chain file from the parent: this module also runs from the build, dist/, where its own relative path differs)
  const market = realChainCache(process.env.BENCH_REAL_CHAIN_FILE ?? REAL_CHAIN_FILE, 1e9);
  const exps = market.expiries;
  const fw = market.forwards;
  const pair = { baseCurrency: 'BTC', quoteCurrency: 'USD' };
  const strikeNear = (i: number, m: number) => Math.round((fw[i % fw.length]! * m) / 1000) * 1000;
  const vanilla = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      instrumentId: `v${i}`,
      ...pair,
      amount: 1,
      vanillaOptionType: i % 2 ? 'PUT' : 'CALL',
      source: 'DERIBIT',
      priceMethod: 'DERIBIT',
      expirationTimestamp: exps[1 + (i % (exps.length - 1))]!,
      strike: strikeNear(1 + (i % (exps.length - 1)), 0.8 + 0.4 * ((i * 7) % 50) / 50),
      volatilityModel: 'SVI',
    }));
  const byStrike = [{ instrumentId: 's0', ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: exps[3]!, strike: strikeNear(3, 1) }];
  const scenarios = {
    riskScenarioInstruments: Array.from({ length: 100 }, (_, i) => ({
      instrumentId: `r${i}`,
      size: (i % 5) - 2 || 1,
      ...pair,
      source: 'DERIBIT',
      priceMethod: 'DERIBIT',
      instrumentType: i % 2 ? 'PUT' : 'CALL',
      volatilityModel: 'SVI',
      expirationTimestamp: exps[1 + (i % (exps.length - 1))]!,
      strike: strikeNear(1 + (i % (exps.length - 1)), 0.7 + 0.6 * ((i * 13) % 100) / 100),
    })),
    riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 },
  };

  const app = await buildApp({ cache: market.cache, security: { rateLimit: false, overload: false } });
  const defs: Array<{ name: string; path: string; body: unknown }> = [
    { name: 'vanilla, 1 instrument', path: '/api/v1/global/optionValuation/vanilla', body: vanilla(1) },
    { name: 'vanilla, 50 instruments', path: '/api/v1/global/optionValuation/vanilla', body: vanilla(50) },
    { name: 'byStrike, 1 instrument', path: '/api/v1/global/data/iV/byStrike', body: byStrike },
    { name: 'riskScenarios, 100 instruments', path: '/api/v1/global/scenarios/riskScenarios', body: scenarios },
  ];
  const bare = Fastify({ logger: false });
  const cases: RestCase[] = [];
  const skipped: string[] = [];
  for (const [i, d] of defs.entries()) {
    const body = JSON.stringify(d.body);
    const r = await app.inject({ method: 'POST', url: d.path, payload: body, headers: { 'content-type': 'application/json' } });
    if (r.statusCode !== 200) {
      skipped.push(`${d.name}: ${r.statusCode} ${r.body.slice(0, 200)}`);
      continue;
    }
    const fixed = r.body;
    const barePath = `/bare/${i}`;
    bare.post(barePath, async (_req, reply) => reply.type('application/json; charset=utf-8').send(fixed));
    cases.push({ name: d.name, path: d.path, barePath, body, responseBytes: Buffer.byteLength(fixed) });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const port = (a: { server: { address(): unknown } }) => (a.server.address() as { port: number }).port;
  process.send!({ type: 'ready', appPort: port(app), barePort: port(bare), cases, skipped });
  const stop = async () => {
    await app.close();
    await bare.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
}

main().catch((err) => {
  process.stderr.write(`restChild: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
