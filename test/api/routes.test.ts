/**
 * The pricing routes on a seeded cache through fastify.inject() (no socket, as the fastify examples test routes),
 * against references computed here, independently of the service's code:
 * - byStrike at a listed expiry is raw SVI (Gatheral 2004, w(k) = a + b(rho (k - m) + sqrt((k - m)^2 + sigma^2)))
 *   evaluated from the parameters GET /surface publishes, sigma_imp = sqrt(w / T);
 * - vanilla (Deribit, inverse) is Black-76 with r = 0 at that vol, in coin: C_usd / F, with the normal CDF from
 *   Abramowitz-Stegun 26.2.17 written here; call - put = (F - K) / F (put-call parity in coin);
 * - byDelta is a fixed point: the strike of that Black-76 forward call delta at the returned vol (found here by
 *   bisection on the CDF) has that vol by byStrike;
 * - forwardCurve's fixed yields are (F / S - 1) / T of the listed forwards (ACT/365).
 * The cache holds the REAL recorded 878-option Deribit BTC chain (test/helpers/realChainCache.ts).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';

type Json = Record<string, any>;
const YEAR_S = 365 * 86_400;
const pair = { baseCurrency: 'BTC', quoteCurrency: 'USD' } as const;

/** Standard normal CDF, Abramowitz and Stegun 26.2.17 (|error| < 7.5e-8). */
function normCdf(x: number): number {
  const t = 1 / (1 + 0.2316419 * Math.abs(x));
  const poly = t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  const p = 1 - (Math.exp((-x * x) / 2) / Math.sqrt(2 * Math.PI)) * poly;
  return x >= 0 ? p : 1 - p;
}
/** Black-76 call with r = 0 (Black 1976), quote currency. */
function black76Call(F: number, K: number, T: number, vol: number): number {
  const sd = vol * Math.sqrt(T);
  const d1 = (Math.log(F / K) + 0.5 * sd * sd) / sd;
  return F * normCdf(d1) - K * normCdf(d1 - sd);
}

let m: RealChainCache;
let app: FastifyInstance;
let surface: Json;

async function call(method: 'GET' | 'POST', url: string, payload?: unknown): Promise<{ status: number; body: any }> {
  const r = await app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: r.statusCode, body: r.json() };
}

beforeAll(async () => {
  m = realChainCache(undefined, 1e9);
  app = await buildApp({ cache: m.cache });
  surface = (await call('GET', '/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI')).body;
});
afterAll(async () => {
  await app?.close();
});

/** Listed SVI expiries served as fitted (no calendar envelope), more than 3 days out. */
const plainExpiries = (): Json[] =>
  surface.expiries.filter((e: Json) => e.diagnostics.calendarRepaired !== true && e.expirationTimestamp - surface.observationTimestamp > 3 * 86_400);

describe('pricing routes on a seeded cache (inject)', () => {
  it('byStrike at listed expiries is raw SVI of the published parameters', async () => {
    const exps = plainExpiries();
    expect(exps.length).toBeGreaterThanOrEqual(3);
    for (const e of exps) {
      const T = (e.expirationTimestamp - surface.observationTimestamp) / YEAR_S;
      const strikes = [0.7, 0.9, 1, 1.1, 1.4].map((x) => Math.round(e.forwardPrice * x));
      const r = await call('POST', '/api/v1/global/data/iV/byStrike', strikes.map((K, i) => ({ instrumentId: `k${i}`, ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: e.expirationTimestamp, strike: K })));
      expect(r.status).toBe(200);
      const { a, b, rho, m: mm, sigma } = e.parameters;
      strikes.forEach((K, i) => {
        const k = Math.log(K / e.forwardPrice);
        const w = a + b * (rho * (k - mm) + Math.sqrt((k - mm) ** 2 + sigma * sigma));
        expect(r.body[i].impliedVolatility, `T ${T} K ${K}`).toBeCloseTo(Math.sqrt(w / T), 10);
      });
    }
  });

  it('vanilla (Deribit inverse) is Black-76 in coin at the served vol; call - put = (F - K) / F', async () => {
    const e = plainExpiries()[1]!;
    const T = (e.expirationTimestamp - surface.observationTimestamp) / YEAR_S;
    const K = Math.round(e.forwardPrice * 1.08);
    const base = { ...pair, amount: 1, source: 'DERIBIT', priceMethod: 'DERIBIT', expirationTimestamp: e.expirationTimestamp, strike: K, volatilityModel: 'SVI' };
    const r = await call('POST', '/api/v1/global/optionValuation/vanilla', [
      { ...base, instrumentId: 'c', vanillaOptionType: 'CALL' },
      { ...base, instrumentId: 'p', vanillaOptionType: 'PUT' },
    ]);
    expect(r.status).toBe(200);
    const [c, p] = r.body;
    expect(c.forwardPrice).toBeCloseTo(e.forwardPrice, 6);
    const F = c.forwardPrice;
    // A-S 26.2.17 is good to 7.5e-8 in the CDF: about 1e-7 of F in the price, 1e-7 in coin
    expect(c.valueBase).toBeCloseTo(black76Call(F, K, T, c.impliedVolatility) / F, 6);
    expect(c.valueBase - p.valueBase).toBeCloseTo((F - K) / F, 12);
    expect(c.impliedVolatility).toBe(p.impliedVolatility);
  });

  it('byDelta is a fixed point of the smile: the strike of that call delta at the returned vol has that vol', async () => {
    const e = plainExpiries()[2]!;
    const T = (e.expirationTimestamp - surface.observationTimestamp) / YEAR_S;
    const deltas = [0.1, 0.25, 0.5, 0.75, 0.9];
    const r = await call('POST', '/api/v1/global/data/iV/byDelta', deltas.map((delta, i) => ({ instrumentId: `d${i}`, ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: e.expirationTimestamp, delta })));
    expect(r.status).toBe(200);
    // K = F exp(-d1 sd + sd^2 / 2) with N(d1) = delta (Black-76 forward call delta), d1 found by bisection
    const strikes = deltas.map((delta, i) => {
      let lo = -10;
      let hi = 10;
      for (let j = 0; j < 200; j++) {
        const mid = (lo + hi) / 2;
        if (normCdf(mid) < delta) lo = mid;
        else hi = mid;
      }
      const sd = r.body[i].impliedVolatility * Math.sqrt(T);
      return e.forwardPrice * Math.exp(-((lo + hi) / 2) * sd + 0.5 * sd * sd);
    });
    const k = await call('POST', '/api/v1/global/data/iV/byStrike', strikes.map((K, i) => ({ instrumentId: `s${i}`, ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: e.expirationTimestamp, strike: K })));
    expect(k.status).toBe(200);
    deltas.forEach((delta, i) => expect(k.body[i].impliedVolatility, `delta ${delta}`).toBeCloseTo(r.body[i].impliedVolatility, 5));
    // and the smile is not flat: the wings differ
    expect(Math.abs(r.body[0].impliedVolatility - r.body[4].impliedVolatility)).toBeGreaterThan(0.005);
  });

  it('forwardCurve: fixed yields are (F / S - 1) / T of the listed forwards, ACT/365', async () => {
    const r = await call('GET', '/api/v1/global/data/forwardCurve?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD');
    expect(r.status).toBe(200);
    const spot = surface.spotPrice;
    for (const e of surface.expiries) {
      const y = r.body.fixedYields.find((x: Json) => x.expirationTimestamp === e.expirationTimestamp);
      expect(y, String(e.expirationTimestamp)).toBeDefined();
      const T = (e.expirationTimestamp - surface.observationTimestamp) / YEAR_S;
      expect(y.value).toBeCloseTo((e.forwardPrice / spot - 1) / T, 9);
    }
  });
});
