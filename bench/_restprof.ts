import { buildApp } from '../src/api/app.js';
import { realChainCache } from '../test/helpers/realChainCache.js';
const market = realChainCache(undefined, 1e9);
const exps = market.expiries; const fw = market.forwards;
const pair = { baseCurrency: 'BTC', quoteCurrency: 'USD' };
const strikeNear = (i: number, m: number) => Math.round((fw[i % fw.length]! * m) / 1000) * 1000;
const vanilla = (n: number) => Array.from({ length: n }, (_, i) => ({ instrumentId: `v${i}`, ...pair, amount: 1, vanillaOptionType: i % 2 ? 'PUT' : 'CALL', source: 'DERIBIT', priceMethod: 'DERIBIT', expirationTimestamp: exps[1 + (i % (exps.length - 1))]!, strike: strikeNear(1 + (i % (exps.length - 1)), 0.8 + 0.4 * ((i * 7) % 50) / 50), volatilityModel: 'SVI' }));
const scenarios = { riskScenarioInstruments: Array.from({ length: 100 }, (_, i) => ({ instrumentId: `r${i}`, size: (i % 5) - 2 || 1, ...pair, source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: i % 2 ? 'PUT' : 'CALL', volatilityModel: 'SVI', expirationTimestamp: exps[1 + (i % (exps.length - 1))]!, strike: strikeNear(1 + (i % (exps.length - 1)), 0.7 + 0.6 * ((i * 13) % 100) / 100) })), riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 } };
const app = await buildApp({ cache: market.cache, security: { rateLimit: false, overload: false } });
const which = process.env.W ?? 'v1';
const [path, body] = which === 'sc' ? ['/api/v1/global/scenarios/riskScenarios', JSON.stringify(scenarios)] : ['/api/v1/global/optionValuation/vanilla', JSON.stringify(vanilla(which === 'v50' ? 50 : 1))];
const n = Number(process.env.N ?? 2000);
for (let i = 0; i < 200; i++) await app.inject({ method: 'POST', url: path, payload: body, headers: { 'content-type': 'application/json' } });
const t0 = performance.now();
let bytes = 0;
for (let i = 0; i < n; i++) { const r = await app.inject({ method: 'POST', url: path, payload: body, headers: { 'content-type': 'application/json' } }); bytes = r.body.length; if (r.statusCode !== 200) throw new Error(r.body); }
console.log(which, ((performance.now() - t0) / n).toFixed(3), 'ms/req', bytes, 'B');
await app.close();
{
  const app2 = await buildApp({ cache: market.cache, security: { rateLimit: false, overload: false } });
  const r = await app2.inject({ method: 'POST', url: path, payload: body, headers: { 'content-type': 'application/json' } });
  const obj = JSON.parse(r.body);
  const t1 = performance.now();
  for (let i = 0; i < 50; i++) JSON.stringify(obj);
  console.log('stringify', ((performance.now() - t1) / 50).toFixed(3), 'ms');
  const s = JSON.stringify(obj);
  const t2 = performance.now();
  for (let i = 0; i < 50; i++) Buffer.from(s);
  console.log('to buffer', ((performance.now() - t2) / 50).toFixed(3), 'ms');
  console.log('rows per instrument', obj.riskScenarioInstrumentResults?.[0]?.riskScenarioItems?.length);
  await app2.close();
}
