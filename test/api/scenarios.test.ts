/**
 * The three scenario endpoints through fastify inject() on buildApp, with a MarketCache holding constructed
 * SVI surfaces (src/quant/surface.ts) and forward curves (src/quant/forwardCurve.ts) for DERIBIT BTC/USD
 * (inverse) and BYBIT BTC/USDC (linear).
 * Checks: result shape and nulls exactly per the spec's tables; scenario 0 Unch equals the vanilla endpoint;
 * P&L 0 at scenario 0 Unch; linear P&L exact in the shift; the spec's examples; the Deribit reference set on
 * 7- and 90-day options against hand-computed shocks; every validation rule and batch limit answers a 400
 * naming the field; 503 when the market is missing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { Pair, Source } from '../../src/domain/markets.js';
import { ForwardCurve } from '../../src/quant/forwardCurve.js';
import { VolSurface } from '../../src/quant/surface.js';

const OBS = 1_750_000_000;
const DAY = 86400;
const YEAR = 365 * DAY;
const BTC: Pair = { base: 'BTC', quote: 'USD' };
const BTCUSDC: Pair = { base: 'BTC', quote: 'USDC' };
const SPOT = 60_000;
const EXP7 = OBS + 7 * DAY;
const EXP30 = OBS + 30 * DAY;
const EXP90 = OBS + 90 * DAY;
const fwd = (days: number) => SPOT * (1 + (0.05 * days) / 365);

/** SVI surface with ATM vol exactly 60 % at every listed expiry (w(0) = 0.36 T), put skew; F = S (1 + 0.05 T). */
function putMarket(cache: MarketCache, source: Source, pair: Pair): void {
  const Ts = [7, 30, 90, 180].map((d) => (d * DAY) / YEAR);
  const curve = new ForwardCurve(SPOT, Ts.map((T) => ({ expirationTimestamp: OBS + Math.round(T * YEAR), T, forward: SPOT * (1 + 0.05 * T) })));
  const surface = new VolSurface(
    Ts.map((T) => ({
      expirationTimestamp: OBS + Math.round(T * YEAR),
      T,
      forward: curve.forward(T),
      params: { a: 0.36 * T * 0.85, b: 0.36 * T * 0.5, rho: -0.3, m: 0, sigma: 0.3 },
    })),
  );
  const snap: SurfaceSnapshot = { source, pair, model: 'SVI', observationTimestamp: OBS, spot: SPOT, slices: [], surface, forwardCurve: curve, calibrationMs: 1, sequence: 1 };
  cache.putSurface(snap);
  cache.putForwardCurve({ source, pair, observationTimestamp: OBS, spot: SPOT, points: [], curve, sequence: 1 });
  cache.touch(source, pair, OBS);
}

let app: FastifyInstance;
let cache: MarketCache;

beforeAll(async () => {
  cache = new MarketCache(new MarketClock(OBS), 30, [
    { source: 'DERIBIT', pair: BTC },
    { source: 'BYBIT', pair: BTCUSDC },
    { source: 'OKX', pair: BTC },
  ]);
  putMarket(cache, 'DERIBIT', BTC);
  putMarket(cache, 'BYBIT', BTCUSDC);
  cache.setFeedConnected('DERIBIT', true);
  cache.setFeedConnected('BYBIT', true);
  cache.setFeedConnected('OKX', true);
  app = await buildApp({ cache });
});
afterAll(async () => {
  await app.close();
});

const URL = {
  risk: '/api/v1/global/scenarios/riskScenarios',
  range: '/api/v1/global/scenarios/volRangeRiskScenarios',
  advanced: '/api/v1/global/scenarios/advancedRiskScenarios',
} as const;

function inst(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instrumentId: 'c1',
    size: 2,
    baseCurrency: 'BTC',
    quoteCurrency: 'USD',
    source: 'DERIBIT',
    priceMethod: 'DERIBIT',
    instrumentType: 'CALL',
    volatilityModel: 'SVI',
    expirationTimestamp: EXP30,
    strike: 65_000,
    ...over,
  };
}
const RISK_PRM = { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 };
const RANGE_PRM = { priceRangeSteps: 4, priceRange: 0.2, volShifts: [-0.2, 0, 0.2, 0.5] };
const DERIBIT_REF = { priceRangeSteps: 4, priceRange: 0.16, volRangeUp: 0.5, volRangeDown: 0.25, minVolForShockUp: 0.5, shortTermVegaPower: 0.3, longTermVegaPower: 0.13 };

async function post(url: string, instruments: unknown[], params: unknown) {
  const res = await app.inject({ method: 'POST', url, payload: { riskScenarioInstruments: instruments, riskScenarioParameters: params } as object });
  return { status: res.statusCode, body: res.json() as any };
}
function paths(body: any): string[] {
  return (body.details ?? []).map((d: { path: string }) => d.path);
}

/** A mixed portfolio: inverse and linear options, forwards, a perpetual, spot. */
const PORTFOLIO = [
  inst(),
  inst({ instrumentId: 'p1', instrumentType: 'PUT', strike: 55_000, size: -3, priceMethod: 'OTC' }),
  inst({ instrumentId: 'f1', instrumentType: 'FORWARD', strike: 59_000, volatilityModel: undefined, size: 4 }),
  inst({ instrumentId: 'perp', instrumentType: 'PERPETUAL', strike: undefined, volatilityModel: undefined, inverse: true, size: -1 }),
  inst({ instrumentId: 's1', instrumentType: 'SPOT', strike: undefined, volatilityModel: undefined, expirationTimestamp: undefined, size: 1.5 }),
  inst({ instrumentId: 'lc', quoteCurrency: 'USDC', source: 'BYBIT', priceMethod: 'BYBIT', inverse: false, strike: 62_000 }),
  inst({ instrumentId: 'lf', quoteCurrency: 'USDC', source: 'XCHG_C', priceMethod: 'BYBIT', instrumentType: 'FORWARD', strike: 59_000, volatilityModel: undefined, size: 3 }),
];

const UUD = ['price', 'basePl', 'quotePl', 'baseValue', 'baseDelta', 'baseGamma', 'baseNetDelta', 'baseTheta', 'baseVega', 'baseVolga', 'baseVanna'];
const stem = (m: string) => (['price', 'basePl', 'quotePl', 'baseValue'].includes(m) ? `${m}Vol` : m);

describe('riskScenarios', () => {
  it('answers every instrument with the spec fields, nulls exactly where the spec table says, and the 9-rung ladder', async () => {
    const r = await post(URL.risk, PORTFOLIO, RISK_PRM);
    expect(r.status).toBe(200);
    const res = r.body.riskScenarioInstrumentResults;
    expect(res).toHaveLength(PORTFOLIO.length);
    const byId = Object.fromEntries(res.map((x: any) => [x.instrumentId, x]));
    const nullFields = (x: any) => Object.keys(x).filter((k) => x[k] === null).sort();
    expect(nullFields(byId.c1)).toEqual([]);
    expect(nullFields(byId.f1)).toEqual(['volatility', 'volatilityModel']);
    expect(nullFields(byId.perp)).toEqual(['volatility', 'volatilityModel']);
    expect(nullFields(byId.s1)).toEqual(['expirationTimestamp', 'forwardPrice', 'instrumentPrice', 'inverse', 'strike', 'volatility', 'volatilityModel']);
    for (const x of res) {
      for (const k of ['instrumentId', 'size', 'baseCurrency', 'quoteCurrency', 'source', 'instrumentType', 'observationTimestamp', 'spotPrice', 'volUp', 'volDown', 'riskScenarioItems']) {
        expect(x[k], `${x.instrumentId}.${k}`).not.toBeNull();
        expect(x[k], `${x.instrumentId}.${k}`).not.toBeUndefined();
      }
      expect(x.observationTimestamp).toBe(OBS);
      expect(x.riskScenarioItems.map((i: any) => i.scenario)).toEqual([-4, -3, -2, -1, 0, 1, 2, 3, 4]);
      const shifts = [-0.2, -0.15, -0.1, -0.05, 0, 0.05, 0.1, 0.15, 0.2];
      x.riskScenarioItems.forEach((item: any, j: number) => {
        expect(item.spotPrice).toBeCloseTo(SPOT * (1 + shifts[j]!), 8);
        for (const m of UUD) for (const v of ['Up', 'Unch', 'Down']) expect(Number.isFinite(item[`${stem(m)}${v}`]), `${m}${v}`).toBe(true);
      });
    }
    // Echoes as given (alias XCHG_C kept), inverse per the pair's rule, effective strike of a forward.
    expect(byId.lf.source).toBe('XCHG_C');
    expect(byId.lf.inverse).toBe(false);
    expect(byId.f1.inverse).toBe(true);
    expect(byId.perp.strike).toBe(SPOT);
    // PERPETUAL: priced off the perpetual price = spot index; forwardPrice is that price.
    expect(byId.perp.forwardPrice).toBe(SPOT);
    expect(byId.f1.forwardPrice).toBeCloseTo(fwd(30), 6);
    expect(byId.f1.riskScenarioItems[8].forwardPrice).toBeCloseTo(fwd(30) * 1.2, 6);
  });

  it('volUp / volDown = vol +/- the shifts (0.54 +/- 0.05 style); 0.0 for FORWARD, PERPETUAL, SPOT', async () => {
    const r = await post(URL.risk, PORTFOLIO, RISK_PRM);
    for (const x of r.body.riskScenarioInstrumentResults) {
      if (x.instrumentType === 'CALL' || x.instrumentType === 'PUT') {
        expect(x.volUp).toBeCloseTo(x.volatility + 0.05, 14);
        expect(x.volDown).toBeCloseTo(x.volatility - 0.05, 14);
      } else {
        expect(x.volUp).toBe(0);
        expect(x.volDown).toBe(0);
      }
    }
  });

  it('scenario 0 Unch equals the vanilla endpoint; P&L there is 0', async () => {
    const r = await post(URL.risk, PORTFOLIO, RISK_PRM);
    for (const x of r.body.riskScenarioInstrumentResults) {
      const s0 = x.riskScenarioItems[4];
      expect(s0.scenario).toBe(0);
      expect(s0.basePlVolUnch).toBe(0);
      expect(s0.quotePlVolUnch).toBe(0);
      if (x.instrumentType === 'SPOT' || x.instrumentType === 'PERPETUAL') continue;
      const p = PORTFOLIO.find((q) => q.instrumentId === x.instrumentId)!;
      const van = await app.inject({
        method: 'POST',
        url: '/api/v1/global/optionValuation/vanilla',
        payload: [
          {
            instrumentId: 'v',
            baseCurrency: p.baseCurrency,
            quoteCurrency: p.quoteCurrency,
            amount: p.size,
            vanillaOptionType: p.instrumentType,
            source: p.source,
            priceMethod: p.priceMethod,
            expirationTimestamp: p.expirationTimestamp,
            strike: p.strike,
            volatilityModel: 'SVI',
          },
        ],
      });
      expect(van.statusCode).toBe(200);
      const v = van.json()[0];
      const tol = 1e-9 * Math.max(1, Math.abs(v.valueBase));
      expect(Math.abs(s0.baseValueVolUnch - v.valueBase)).toBeLessThan(tol);
      expect(Math.abs(s0.baseNetDeltaUnch - v.deltaBase)).toBeLessThan(1e-12);
      expect(Math.abs(s0.baseVegaUnch - v.vegaBase)).toBeLessThan(1e-12);
      expect(Math.abs(s0.baseThetaUnch - v.thetaBase)).toBeLessThan(1e-12);
      expect(Math.abs(s0.baseVolgaUnch - v.volgaBase)).toBeLessThan(1e-12);
      if (x.volatility !== null) expect(x.volatility).toBe(v.impliedVolatility);
      expect(x.forwardPrice).toBe(v.forwardPrice);
      // instrumentPrice: the current price measure (percent price of an option, forward price of a forward).
      expect(x.instrumentPrice).toBe(s0.priceVolUnch);
    }
  });

  it('linear instruments: P&L exact in the shift', async () => {
    const r = await post(URL.risk, PORTFOLIO, RISK_PRM);
    const byId = Object.fromEntries(r.body.riskScenarioInstrumentResults.map((x: any) => [x.instrumentId, x]));
    const shifts = [-0.2, -0.15, -0.1, -0.05, 0, 0.05, 0.1, 0.15, 0.2];
    shifts.forEach((x, j) => {
      expect(byId.lf.riskScenarioItems[j].quotePlVolUnch).toBeCloseTo(3 * fwd(30) * x, 7); // linear forward, size 3
      expect(byId.s1.riskScenarioItems[j].quotePlVolUp).toBeCloseTo(1.5 * SPOT * x, 7); // spot, size 1.5
      expect(byId.s1.riskScenarioItems[j].basePlVolDown).toBe(0);
      const Fk = fwd(30) * (1 + x);
      expect(byId.f1.riskScenarioItems[j].basePlVolUnch).toBeCloseTo(4 * 59_000 * (1 / fwd(30) - 1 / Fk), 12); // inverse forward
      expect(byId.perp.riskScenarioItems[j].basePlVolUnch).toBeCloseTo(-1 * SPOT * (1 / SPOT - 1 / (SPOT * (1 + x))), 12);
    });
  });
});

describe('volRangeRiskScenarios', () => {
  it('the spec example: shifts -0.2, 0, 0.2, 0.5 on a 60 % vol give 0.4, 0.6, 0.8, 1.1; maps keyed volScenario<n>', async () => {
    const atm = inst({ instrumentId: 'atm', strike: fwd(30) }); // ATM strike: vol exactly 0.6 on this surface
    const r = await post(URL.range, [atm, PORTFOLIO[2]], RANGE_PRM);
    expect(r.status).toBe(200);
    const [x, f] = r.body.riskScenarioInstrumentResults;
    expect(x.volatility).toBeCloseTo(0.6, 12);
    const expected = [0.4, 0.6, 0.8, 1.1];
    expect(Object.keys(x.volScenarios).sort()).toEqual(['volScenario0', 'volScenario1', 'volScenario2', 'volScenario3']);
    expected.forEach((v, n) => expect(x.volScenarios[`volScenario${n}`]).toBeCloseTo(v, 12));
    expect(x.volUp).toBeUndefined();
    expect(x.volDown).toBeUndefined();
    expect(x.riskScenarioItems).toHaveLength(9);
    for (const item of x.riskScenarioItems) {
      for (const m of ['price', 'basePl', 'quotePl', 'baseValue', 'baseDelta', 'baseNetDelta', 'baseGamma', 'baseTheta', 'baseVega', 'baseVolga', 'baseVanna']) {
        expect(Object.keys(item[m]).sort(), m).toEqual(['volScenario0', 'volScenario1', 'volScenario2', 'volScenario3']);
      }
    }
    const s0 = x.riskScenarioItems[4];
    expect(s0.basePl.volScenario1).toBe(0);
    expect(s0.quotePl.volScenario1).toBe(0);
    // Higher vol, higher long-call value.
    expect(s0.baseValue.volScenario3).toBeGreaterThan(s0.baseValue.volScenario2);
    // A forward has no vol: its scenario vols are 0.0 and its figures the same in every vol scenario.
    expect(Object.values(f.volScenarios)).toEqual([0, 0, 0, 0]);
    expect(f.riskScenarioItems[0].price.volScenario0).toBe(f.riskScenarioItems[0].price.volScenario3);
    expect(f.riskScenarioItems[0].price.volScenario0).toBeCloseTo(fwd(30) * 0.8, 6);
  });

  it('vols are floored at 0.0001', async () => {
    const r = await post(URL.range, [inst()], { ...RANGE_PRM, volShifts: [-5] });
    expect(r.body.riskScenarioInstrumentResults[0].volScenarios.volScenario0).toBe(0.0001);
  });
});

describe('advancedRiskScenarios', () => {
  it('the Deribit reference set on a 7-day and a 90-day option: volUp/volDown by the formula, written out by hand', async () => {
    const i7 = inst({ instrumentId: 'o7', expirationTimestamp: EXP7, strike: fwd(7), priceMethod: undefined });
    const i90 = inst({ instrumentId: 'o90', expirationTimestamp: EXP90, strike: fwd(90), priceMethod: undefined });
    const r = await post(URL.advanced, [i7, i90], DERIBIT_REF);
    expect(r.status).toBe(200);
    const [a, b] = r.body.riskScenarioInstrumentResults;
    // ATM vols are 0.6 on this surface. By hand (test/quant/scenarios.test.ts shows the steps):
    // 7 days: f = (30/7)^0.3 = 1.547416 -> volUp 0.6 * 1.773708 = 1.064225, volDown 0.6 * 0.613146 = 0.367888
    // 90 days: f = (30/90)^0.13 = 0.866910 -> volUp 0.6 * 1.433455 = 0.860073, volDown 0.6 * 0.783272 = 0.469963
    expect(a.volatility).toBeCloseTo(0.6, 12);
    expect(b.volatility).toBeCloseTo(0.6, 12);
    expect(a.volUp).toBeCloseTo(1.064225, 6);
    expect(a.volDown).toBeCloseTo(0.367888, 6);
    expect(b.volUp).toBeCloseTo(0.860073, 6);
    expect(b.volDown).toBeCloseTo(0.469963, 6);
    // Deribit's ladder: 4 steps of 0.16 -> shifts -0.16 .. 0.16 by 0.04.
    expect(a.riskScenarioItems.map((x: any) => x.scenario)).toEqual([-4, -3, -2, -1, 0, 1, 2, 3, 4]);
    expect(a.riskScenarioItems[0].spotPrice).toBeCloseTo(SPOT * 0.84, 8);
    // The Up/Down figures use those vols: vega-scaled P&L at scenario 0 is positive for vol up on a long call.
    expect(a.riskScenarioItems[4].basePlVolUp).toBeGreaterThan(0);
    expect(a.riskScenarioItems[4].basePlVolDown).toBeLessThan(0);
    expect(a.riskScenarioItems[4].basePlVolUnch).toBe(0);
  });

  it('uses the source\'s own method (no priceMethod field): net delta premium-adjusted on DERIBIT inverse', async () => {
    const r = await post(URL.advanced, [inst({ priceMethod: undefined })], DERIBIT_REF);
    const s0 = r.body.riskScenarioInstrumentResults[0].riskScenarioItems[4];
    expect(s0.baseNetDeltaUnch).toBeCloseTo(s0.baseDeltaUnch - s0.baseValueVolUnch, 12);
    const lin = await post(URL.advanced, [inst({ priceMethod: undefined, quoteCurrency: 'USDC', source: 'BYBIT' })], DERIBIT_REF);
    const l0 = lin.body.riskScenarioInstrumentResults[0].riskScenarioItems[4];
    expect(l0.baseNetDeltaUnch).toBe(l0.baseDeltaUnch);
  });

  it('a FORWARD has volUp = volDown = 0.0', async () => {
    const r = await post(URL.advanced, [inst({ priceMethod: undefined, instrumentType: 'FORWARD', volatilityModel: undefined })], DERIBIT_REF);
    expect(r.body.riskScenarioInstrumentResults[0].volUp).toBe(0);
    expect(r.body.riskScenarioInstrumentResults[0].volDown).toBe(0);
  });
});

describe('scenario validation (400 naming the field)', () => {
  const P = 'riskScenarioInstruments[0].';
  const instrumentCases: Array<[string, Record<string, unknown>, string]> = [
    ['size missing', { size: undefined }, `${P}size`],
    ['size not a number', { size: '2' }, `${P}size`],
    ['instrumentId missing', { instrumentId: undefined }, `${P}instrumentId`],
    ['unknown instrumentType', { instrumentType: 'SWAP' }, `${P}instrumentType`],
    ['instrumentType missing', { instrumentType: undefined }, `${P}instrumentType`],
    ['priceMethod missing', { priceMethod: undefined }, `${P}priceMethod`],
    ['priceMethod unknown', { priceMethod: 'CME' }, `${P}priceMethod`],
    ['unknown source', { source: 'KRAKEN' }, `${P}source`],
    ['unsupported pair', { source: 'BYBIT' }, `${P}baseCurrency`],
    ['unknown base', { baseCurrency: 'DOGE' }, `${P}baseCurrency`],
    ['base missing', { baseCurrency: undefined }, `${P}baseCurrency`],
    ['unknown quote', { quoteCurrency: 'EUR' }, `${P}quoteCurrency`],
    ['quote missing', { quoteCurrency: undefined }, `${P}quoteCurrency`],
    ['source missing', { source: undefined }, `${P}source`],
    ['unknown volatilityModel', { volatilityModel: 'HESTON' }, `${P}volatilityModel`],
    ['expiry not a number', { expirationTimestamp: '2025-07-01' }, `${P}expirationTimestamp`],
    ['CALL without strike', { strike: undefined }, `${P}strike`],
    ['strike 0', { strike: 0 }, `${P}strike`],
    ['CALL without volatilityModel', { volatilityModel: undefined }, `${P}volatilityModel`],
    ['CALL without expiry', { expirationTimestamp: undefined }, `${P}expirationTimestamp`],
    ['CALL expired', { expirationTimestamp: OBS - 60 }, `${P}expirationTimestamp`],
    ['FORWARD without expiry', { instrumentType: 'FORWARD', expirationTimestamp: undefined }, `${P}expirationTimestamp`],
    ['FORWARD expired', { instrumentType: 'FORWARD', expirationTimestamp: OBS - 60 }, `${P}expirationTimestamp`],
    ['inverse false on DERIBIT BTC/USD', { inverse: false }, `${P}inverse`],
    ['inverse not boolean', { inverse: 'yes' }, `${P}inverse`],
  ];
  for (const [name, over, path] of instrumentCases) {
    it(`${name} -> 400 at ${path}`, async () => {
      const r = await post(URL.risk, [inst(over)], RISK_PRM);
      expect(r.status).toBe(400);
      expect(paths(r.body)).toContain(path);
    });
  }

  const Q = 'riskScenarioParameters.';
  const paramCases: Array<[keyof typeof URL, Record<string, unknown>, string]> = [
    ['risk', { priceRangeSteps: 0 }, `${Q}priceRangeSteps`],
    ['risk', { priceRangeSteps: 51 }, `${Q}priceRangeSteps`],
    ['risk', { priceRangeSteps: 2.5 }, `${Q}priceRangeSteps`],
    ['risk', { priceRangeSteps: undefined }, `${Q}priceRangeSteps`],
    ['risk', { priceRange: 0 }, `${Q}priceRange`],
    ['risk', { priceRange: 1 }, `${Q}priceRange`],
    ['risk', { priceRange: -0.1 }, `${Q}priceRange`],
    ['risk', { priceRange: undefined }, `${Q}priceRange`],
    ['risk', { volRangeUp: -0.01 }, `${Q}volRangeUp`],
    ['risk', { volRangeUp: 5.01 }, `${Q}volRangeUp`],
    ['risk', { volRangeUp: undefined }, `${Q}volRangeUp`],
    ['risk', { volRangeDown: 6 }, `${Q}volRangeDown`],
    ['risk', { volRangeDown: undefined }, `${Q}volRangeDown`],
    ['range', { volShifts: [] }, `${Q}volShifts`],
    ['range', { volShifts: Array.from({ length: 17 }, (_, i) => i / 100) }, `${Q}volShifts`],
    ['range', { volShifts: [0.1, 5.5] }, `${Q}volShifts[1]`],
    ['range', { volShifts: [-5.01] }, `${Q}volShifts[0]`],
    ['range', { volShifts: undefined }, `${Q}volShifts`],
    ['range', { priceRangeSteps: 51 }, `${Q}priceRangeSteps`],
    ['advanced', { minVolForShockUp: -1 }, `${Q}minVolForShockUp`],
    ['advanced', { minVolForShockUp: undefined }, `${Q}minVolForShockUp`],
    ['advanced', { shortTermVegaPower: 5.5 }, `${Q}shortTermVegaPower`],
    ['advanced', { shortTermVegaPower: undefined }, `${Q}shortTermVegaPower`],
    ['advanced', { longTermVegaPower: -0.1 }, `${Q}longTermVegaPower`],
    ['advanced', { longTermVegaPower: undefined }, `${Q}longTermVegaPower`],
    ['advanced', { volRangeUp: undefined }, `${Q}volRangeUp`],
    ['advanced', { volRangeDown: 5.1 }, `${Q}volRangeDown`],
    ['advanced', { priceRange: 1.5 }, `${Q}priceRange`],
  ];
  for (const [ep, over, path] of paramCases) {
    it(`${ep}: ${JSON.stringify(over)} -> 400 at ${path}`, async () => {
      const base = ep === 'risk' ? RISK_PRM : ep === 'range' ? RANGE_PRM : DERIBIT_REF;
      const instrument = ep === 'advanced' ? inst({ priceMethod: undefined }) : inst();
      const r = await post(URL[ep], [instrument], { ...base, ...over });
      expect(r.status).toBe(400);
      expect(paths(r.body)).toContain(path);
    });
  }

  it('advancedRiskScenarios rejects a priceMethod field', async () => {
    const r = await post(URL.advanced, [inst()], DERIBIT_REF);
    expect(r.status).toBe(400);
    expect(paths(r.body)).toContain(`${P}priceMethod`);
  });

  it('batch limits: 0 or 101 instruments -> 400; 100 -> 200; 16 shifts -> 200; members required', async () => {
    expect((await post(URL.risk, [], RISK_PRM)).status).toBe(400);
    const many = (n: number) => Array.from({ length: n }, (_, i) => inst({ instrumentId: `i${i}` }));
    const r101 = await post(URL.risk, many(101), RISK_PRM);
    expect(r101.status).toBe(400);
    expect(paths(r101.body)).toContain('riskScenarioInstruments');
    expect((await post(URL.risk, many(100), RISK_PRM)).status).toBe(200);
    const r16 = await post(URL.range, [inst()], { ...RANGE_PRM, volShifts: Array.from({ length: 16 }, (_, i) => (i - 8) / 20) });
    expect(r16.status).toBe(200);
    expect(Object.keys(r16.body.riskScenarioInstrumentResults[0].volScenarios)).toHaveLength(16);
    const noParams = await app.inject({ method: 'POST', url: URL.risk, payload: { riskScenarioInstruments: [inst()] } });
    expect(noParams.statusCode).toBe(400);
    const noInstruments = await app.inject({ method: 'POST', url: URL.risk, payload: { riskScenarioParameters: RISK_PRM } });
    expect(noInstruments.statusCode).toBe(400);
  });

  it('duplicate instrumentId -> 400 naming the second; every bad instrument is named', async () => {
    const r = await post(URL.risk, [inst(), inst({ instrumentId: 'x', strike: undefined }), inst()], RISK_PRM);
    expect(r.status).toBe(400);
    expect(paths(r.body).sort()).toEqual(['riskScenarioInstruments[1].strike', 'riskScenarioInstruments[2].instrumentId']);
  });
});

describe('scenario market state', () => {
  it('503 when an instrument\'s market has no data yet (OKX configured, warming up)', async () => {
    const r = await post(URL.risk, [inst(), inst({ instrumentId: 'o', source: 'OKX', priceMethod: 'OKX' })], RISK_PRM);
    expect(r.status).toBe(503);
    expect(r.body.message).toMatch(/OKX/);
    const f = await post(URL.risk, [inst({ source: 'OKX', priceMethod: 'OKX', instrumentType: 'FORWARD', volatilityModel: undefined })], RISK_PRM);
    expect(f.status).toBe(503);
  });
});
