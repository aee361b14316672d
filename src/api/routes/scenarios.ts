/**
 * The three scenario endpoints (interface-spec.md section 5):
 *   POST /api/v1/global/scenarios/riskScenarios          (5a: volUp = vol + volRangeUp, volDown = vol - volRangeDown)
 *   POST /api/v1/global/scenarios/volRangeRiskScenarios  (5b: one vol scenario per element of volShifts)
 *   POST /api/v1/global/scenarios/advancedRiskScenarios  (5c: Deribit portfolio-margin vol shock, volShock.ts)
 * Portfolios of CALL, PUT, FORWARD, PERPETUAL and SPOT (1 to 100), each valued on its own source's market:
 * options on the calibrated surface of (source, pair, volatilityModel) at the strike, forwards on the
 * forward curve of (source, pair), with the instrument's priceMethod (advanced: the source's own method).
 * Figures and market moves: src/quant/scenarios.ts and docs/conventions.md "Risk scenarios".
 *
 * PERPETUAL: its price is taken as the spot index (the cache holds no perpetual mark yet); it moves with the
 * ladder like every forward. Validation: 400 naming every bad item (decisions.md "Errors"), 503 when a
 * needed surface or forward curve is missing or stale.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Markets } from '../asOf.js';
import { AsOfQuery } from '../schemas.js';
import type { VolatilityModel } from '../../cache/snapshot.js';
import type { Pair, Source } from '../../domain/markets.js';
import type { Clock } from '../../domain/clock.js';
import type { MarketCache } from '../../cache/marketCache.js';
import { scenarioFigures, scenarioLadder, type ScenarioCell, type ScenarioPosition, type ScenarioRow } from '../../quant/scenarios.js';
import { advancedVolShock, daysToExpiry, shiftedVol, type VolShockParams } from '../../quant/volShock.js';
import { expiryPoint } from '../../cache/expiryPoint.js';
import { SECONDS_PER_YEAR } from '../../domain/time.js';
import {
  assertServable,
  checkExpiry,
  checkFiniteResult,
  checkMoneyness,
  DetailCollector,
  resolveInverse,
  resolvePair,
  resolvePriceMethod,
  checkUniqueIds,
} from '../rules.js';
import {
  AdvancedScenariosBody,
  RiskScenariosBody,
  VolRangeScenariosBody,
  MAX_SCENARIO_INSTRUMENTS,
  MAX_VOL_SHIFTS,
  SCENARIO_TYPE_NEEDS,
  type AdvancedScenarioInstrument,
  type ScenarioInstrument,
  type ScenarioTypeField,
} from '../scenarioSchemas.js';
import { routePlugin } from '../routeDefinition.js';
import { ADVANCED_SCENARIOS_SCHEMA_DOCS, RISK_SCENARIOS_SCHEMA_DOCS, VOL_RANGE_SCENARIOS_SCHEMA_DOCS } from './scenarioDocs.js';

type AnyInstrument = ScenarioInstrument | AdvancedScenarioInstrument;

/** An instrument resolved against the cache: its position, current vol and echo fields. */
export interface ResolvedScenarioInstrument {
  readonly position: ScenarioPosition;
  /** Current smile vol at the strike (CALL/PUT); null otherwise. */
  readonly volatility: number | null;
  readonly observationTimestamp: number;
  /** (expirationTimestamp - observationTimestamp) / 86400, fractional; 0 without an expiry. */
  readonly daysToExpiry: number;
  /** The instrument fields of the result (interface-spec.md 5 "Result instrument fields"). */
  readonly echo: Record<string, unknown>;
}

const PREFIX = (i: number) => `riskScenarioInstruments[${i}].`;
const isOption = (t: string) => t === 'CALL' || t === 'PUT';
/** The order in which missing fields are named (SCENARIO_TYPE_NEEDS says which are needed). */
const CHECK_ORDER: readonly ScenarioTypeField[] = ['volatilityModel', 'strike', 'expirationTimestamp'];

/**
 * Validate every instrument (400 naming all bad items), then resolve each against the cache (503 when its
 * market cannot be served). The priceMethod is the item's (OTC = DERIBIT) or, on advancedRiskScenarios where
 * it is not a field, the source's own.
 */
export async function resolveScenarioInstruments(markets: Markets, asOf: number | undefined, items: readonly AnyInstrument[]): Promise<ResolvedScenarioInstrument[]> {
  const errs = new DetailCollector();
  const checked = checkScenarioInstruments(errs, items, markets.clockAt(asOf));
  errs.throwIfAny('request');

  const cache = await markets.at(
    asOf,
    items.map((it, i) => ({ ...(checked[i]!.r as { source: Source; pair: Pair }), model: isOption(it.instrumentType) ? (it.volatilityModel as VolatilityModel) : null })),
  );
  const out = items.map((it, i) => {
    const { r, inverse } = checked[i]!;
    const { source, pair } = r as { source: Source; pair: Pair };
    const priceMethod = 'priceMethod' in it && typeof it.priceMethod === 'string' ? resolvePriceMethod(it.priceMethod) : source;
    const type = it.instrumentType;
    const base = {
      instrumentId: it.instrumentId,
      size: it.size,
      baseCurrency: it.baseCurrency,
      quoteCurrency: it.quoteCurrency,
      source: it.source,
      instrumentType: type,
      inverse: type === 'SPOT' ? null : inverse,
      volatilityModel: isOption(type) ? (it.volatilityModel as VolatilityModel) : null,
      expirationTimestamp: type === 'SPOT' ? null : (it.expirationTimestamp as number),
    };
    const held: HeldInstrument = { it, i, source, pair, inverse, priceMethod, base };
    return isOption(type) ? resolveOption(cache, held, errs) : resolveLinear(cache, held, errs);
  });
  errs.throwIfAny('request');
  return out;
}

/**
 * The checks of every instrument before any market is read (ids used once; source and pair; model and strike of an
 * option; expiry of all but SPOT, not before now but for a PERPETUAL; inverse), each item's pair and inverse flag.
 */
function checkScenarioInstruments(errs: DetailCollector, items: readonly AnyInstrument[], clock: Clock) {
  checkUniqueIds(errs, items.map((it) => it.instrumentId), PREFIX);
  return items.map((it, i) => {
    const prefix = PREFIX(i);
    const type = it.instrumentType;
    const r = resolvePair(errs, prefix, it.source, it.baseCurrency, it.quoteCurrency);
    for (const f of CHECK_ORDER) {
      if (SCENARIO_TYPE_NEEDS[type].includes(f) && it[f] === undefined) errs.add(`${prefix}${f}`, `Required for ${type}`);
    }
    if (it.expirationTimestamp !== undefined && type !== 'SPOT' && type !== 'PERPETUAL') checkExpiry(errs, prefix, it.expirationTimestamp, clock);
    const inverse = r && type !== 'SPOT' ? resolveInverse(errs, prefix, r.source, r.pair, it.inverse) : false;
    return { r, inverse };
  });
}

/** One checked instrument, with its market, inverse flag, price method and the echo fields common to every type. */
interface HeldInstrument {
  readonly it: AnyInstrument;
  /** Its index in the request. */
  readonly i: number;
  readonly source: Source;
  readonly pair: Pair;
  readonly inverse: boolean;
  readonly priceMethod: Source;
  readonly base: Record<string, unknown>;
}

/** A CALL or PUT: priced on the smile of its model at its expiry (503 when the surface cannot be served; the strike's moneyness checked). */
function resolveOption(cache: MarketCache, held: HeldInstrument, errs: DetailCollector): ResolvedScenarioInstrument {
  const { it, i, source, pair, inverse, priceMethod, base } = held;
  const type = it.instrumentType;
  const model = it.volatilityModel as VolatilityModel;
  assertServable(cache, source, pair, model);
  const snap = cache.getSurface(source, pair, model)!;
  const p = expiryPoint(snap, it.expirationTimestamp as number);
  const K = it.strike as number;
  checkMoneyness(errs, `${PREFIX(i)}strike`, K, p.forward);
  const sigma = p.vol(K);
  return {
    position: { type, size: it.size, inverse, priceMethod, S: p.spot, F: p.forward, K, T: p.T },
    volatility: sigma,
    observationTimestamp: p.observationTimestamp,
    daysToExpiry: Math.max(daysToExpiry(it.expirationTimestamp as number, p.observationTimestamp), 0),
    echo: { ...base, observationTimestamp: p.observationTimestamp, strike: K, spotPrice: p.spot, forwardPrice: p.forward, volatility: sigma },
  };
}

/** SPOT, FORWARD or PERPETUAL: on the forward curve (a FORWARD at its expiry's forward; 503 when the curve cannot be served). */
function resolveLinear(cache: MarketCache, held: HeldInstrument, errs: DetailCollector): ResolvedScenarioInstrument {
  const { it, i, source, pair, inverse, priceMethod, base } = held;
  const type = it.instrumentType;
  assertServable(cache, source, pair, null);
  const curve = cache.getForwardCurve(source, pair)!;
  const S = curve.spot;
  const obs = curve.observationTimestamp;
  let F = S;
  let T = 0;
  if (type === 'FORWARD') {
    T = Math.max((it.expirationTimestamp as number) - obs, 0) / SECONDS_PER_YEAR;
    F = curve.curve.forward(T);
  }
  const K = type === 'SPOT' ? undefined : (it.strike ?? F);
  if (K !== undefined && it.strike !== undefined) checkMoneyness(errs, `${PREFIX(i)}strike`, K, F);
  return {
    position: { type, size: it.size, inverse, priceMethod, S, F, ...(K !== undefined ? { K } : {}), T },
    volatility: null,
    observationTimestamp: obs,
    daysToExpiry: 0,
    echo: {
      ...base,
      observationTimestamp: obs,
      strike: K ?? null,
      spotPrice: S,
      forwardPrice: type === 'SPOT' ? null : F,
      volatility: null,
    },
  };
}

/**
 * The scenario results, or a 400 naming the first non-finite figure of each instrument whose figures are
 * not all finite (the input limits are meant to make this never happen; src/api/limits.ts).
 */
function finiteResults<T>(results: T[]): T[] {
  const errs = new DetailCollector();
  results.forEach((r, i) => checkFiniteResult(errs, PREFIX(i), r));
  errs.throwIfAny('request');
  return results;
}

/** instrumentPrice of the result: the price measure at the current market and vol; null for SPOT. */
function instrumentPrice(res: ResolvedScenarioInstrument): number | null {
  if (res.position.type === 'SPOT') return null;
  return scenarioFigures(res.position, 0, res.volatility ?? 0).price;
}

/**
 * One scenario item of 5a / 5c from a row whose cells are [up, unch, down]. Written as one object literal
 * (fixed shape) rather than keys added in a loop: V8 then keeps a fast hidden class and JSON.stringify its
 * fast path, which halves the serialization of a 100-instrument answer (bench/scenarios.bench.ts).
 */
function upUnchDownItem(row: ScenarioRow) {
  const [u, n, d] = row.cells as [ScenarioCell, ScenarioCell, ScenarioCell];
  return {
    scenario: row.scenario,
    spotPrice: row.spotPrice,
    forwardPrice: row.forwardPrice,
    priceVolUp: u.price,
    priceVolUnch: n.price,
    priceVolDown: d.price,
    basePlVolUp: u.basePl,
    basePlVolUnch: n.basePl,
    basePlVolDown: d.basePl,
    quotePlVolUp: u.quotePl,
    quotePlVolUnch: n.quotePl,
    quotePlVolDown: d.quotePl,
    baseValueVolUp: u.baseValue,
    baseValueVolUnch: n.baseValue,
    baseValueVolDown: d.baseValue,
    baseDeltaUp: u.baseDelta,
    baseDeltaUnch: n.baseDelta,
    baseDeltaDown: d.baseDelta,
    baseGammaUp: u.baseGamma,
    baseGammaUnch: n.baseGamma,
    baseGammaDown: d.baseGamma,
    baseNetDeltaUp: u.baseNetDelta,
    baseNetDeltaUnch: n.baseNetDelta,
    baseNetDeltaDown: d.baseNetDelta,
    baseThetaUp: u.baseTheta,
    baseThetaUnch: n.baseTheta,
    baseThetaDown: d.baseTheta,
    baseVegaUp: u.baseVega,
    baseVegaUnch: n.baseVega,
    baseVegaDown: d.baseVega,
    baseVolgaUp: u.baseVolga,
    baseVolgaUnch: n.baseVolga,
    baseVolgaDown: d.baseVolga,
    baseVannaUp: u.baseVanna,
    baseVannaUnch: n.baseVanna,
    baseVannaDown: d.baseVanna,
  };
}

/** Result of 5a / 5c for one instrument, given its volUp and volDown. */
function upUnchDownResult(res: ResolvedScenarioInstrument, priceRange: number, steps: number, volUp: number, volDown: number) {
  const sigma = res.volatility ?? 0;
  const rows = scenarioLadder(res.position, priceRange, steps, [volUp, sigma, volDown], sigma);
  return {
    ...res.echo,
    instrumentPrice: instrumentPrice(res),
    volUp: res.volatility === null ? 0 : volUp,
    volDown: res.volatility === null ? 0 : volDown,
    riskScenarioItems: rows.map(upUnchDownItem),
  };
}

/** Measures of 5b, each a map keyed by volScenario<n>. */
const VOL_RANGE_MEASURES: ReadonlyArray<keyof ScenarioCell> = [
  'price',
  'basePl',
  'quotePl',
  'baseValue',
  'baseDelta',
  'baseNetDelta',
  'baseGamma',
  'baseTheta',
  'baseVega',
  'baseVolga',
  'baseVanna',
];

/** The three scenario routes over `markets` (a named fastify-plugin, `scenarios`; their documentation: ./scenarioDocs.ts). */
export const scenarioRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('scenarios', async (app) => {
    app.post(
      '/api/v1/global/scenarios/riskScenarios',
      { schema: { summary: `Risk scenarios: price ladder x (vol up, unchanged, down) absolute shifts (1 to ${MAX_SCENARIO_INSTRUMENTS} instruments)`, ...RISK_SCENARIOS_SCHEMA_DOCS, body: RiskScenariosBody, querystring: AsOfQuery } },
      async (req) => {
        const { riskScenarioInstruments: items, riskScenarioParameters: prm } = req.body;
        const resolved = await resolveScenarioInstruments(markets, req.query.asOf, items);
        return {
          riskScenarioInstrumentResults: finiteResults(
            resolved.map((res) => {
              const sigma = res.volatility ?? 0;
              return upUnchDownResult(res, prm.priceRange, prm.priceRangeSteps, shiftedVol(sigma, prm.volRangeUp), shiftedVol(sigma, -prm.volRangeDown));
            }),
          ),
        };
      },
    );

    app.post(
      '/api/v1/global/scenarios/volRangeRiskScenarios',
      { schema: { summary: `Risk scenarios: price ladder x a list of absolute vol shifts (1 to ${MAX_SCENARIO_INSTRUMENTS} instruments, at most ${MAX_VOL_SHIFTS} shifts)`, ...VOL_RANGE_SCENARIOS_SCHEMA_DOCS, body: VolRangeScenariosBody, querystring: AsOfQuery } },
      async (req) => {
        const { riskScenarioInstruments: items, riskScenarioParameters: prm } = req.body;
        const resolved = await resolveScenarioInstruments(markets, req.query.asOf, items);
        const names = prm.volShifts.map((_, n) => `volScenario${n}`);
        return {
          riskScenarioInstrumentResults: finiteResults(resolved.map((res) => {
            const sigma = res.volatility ?? 0;
            const vols = prm.volShifts.map((x) => (res.volatility === null ? 0 : shiftedVol(sigma, x)));
            const rows = scenarioLadder(res.position, prm.priceRange, prm.priceRangeSteps, vols, sigma);
            return {
              ...res.echo,
              instrumentPrice: instrumentPrice(res),
              volScenarios: Object.fromEntries(names.map((nm, n) => [nm, vols[n]!])),
              riskScenarioItems: rows.map((row) => {
                const out: Record<string, unknown> = { scenario: row.scenario, spotPrice: row.spotPrice, forwardPrice: row.forwardPrice };
                for (const m of VOL_RANGE_MEASURES) out[m] = Object.fromEntries(names.map((nm, n) => [nm, row.cells[n]![m]]));
                return out;
              }),
            };
          })),
        };
      },
    );

    app.post(
      '/api/v1/global/scenarios/advancedRiskScenarios',
      {
        schema: {
          summary: `Risk scenarios with the Deribit portfolio-margin vol shock: volUp/volDown = vol (1 +/- range (30/days)^power) (1 to ${MAX_SCENARIO_INSTRUMENTS} instruments)`,
          ...ADVANCED_SCENARIOS_SCHEMA_DOCS,
          body: AdvancedScenariosBody,
          querystring: AsOfQuery,
        },
      },
      async (req) => {
        const { riskScenarioInstruments: items, riskScenarioParameters: prm } = req.body;
        const resolved = await resolveScenarioInstruments(markets, req.query.asOf, items);
        const shock: VolShockParams = prm;
        return {
          riskScenarioInstrumentResults: finiteResults(
            resolved.map((res) => {
              const { volUp, volDown } = advancedVolShock(res.volatility ?? 0, res.daysToExpiry, shock);
              return upUnchDownResult(res, prm.priceRange, prm.priceRangeSteps, volUp, volDown);
            }),
          ),
        };
      },
    );
  });
