/**
 * POST /api/v1/global/optionValuation/euBarrier (interface-spec.md section 1): European barrier options
 * (barrier observed at expiry) and European digitals on DERIBIT (XCHG_A) BTC/USD and ETH/USD, SVI only,
 * priced by static replication on the calibrated smile of the item's expiry (src/quant/barrier.ts).
 * Percent figures per unit of nominal: docs/conventions.md "European barrier".
 *
 * Validation (400 naming every bad item, decisions.md "Errors"): the spec's field table via the schema;
 * source/pair/model outside DERIBIT BTC/USD, ETH/USD, SVI; strike and barrierType missing for CALL, PUT,
 * FORWARD (ignored for digitals); expiry before now; an instrumentId used twice. 503 when the surface is
 * missing or stale.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Markets } from '../asOf.js';
import { resolveSource, sourceAliases, type Pair, type Source } from '../../domain/markets.js';
import { EU_BARRIER_OPTION_TYPES, isDigital, valueEuBarrier } from '../../quant/barrier.js';
import { expiryPoint, type ExpiryPoint } from '../../cache/expiryPoint.js';
import type { Clock } from '../../domain/clock.js';
import {
  assertServable,
  checkExpiry,
  checkFiniteResult,
  checkMoneyness,
  checkUniqueIds,
  DetailCollector,
} from '../rules.js';
import { EuBarrierBody, type EuBarrierItem } from '../scenarioSchemas.js';
import { AsOfQuery, MAX_BATCH_ITEMS } from '../schemas.js';
import { BATCH50, inWords, MARKET_POST, num, routePlugin, type JsonSchema, type LiveDocContext, type RouteDocs } from '../routeDefinition.js';

/** The one source the euBarrier endpoint serves (interface-spec.md section 1: XCHG_A). */
const EU_BARRIER_SOURCE: Source = 'DERIBIT';
/** Pairs the euBarrier endpoint serves (interface-spec.md section 1: XCHG_A with BTC/USD and ETH/USD). */
const EU_BARRIER_PAIRS: readonly Pair[] = [
  { base: 'BTC', quote: 'USD' },
  { base: 'ETH', quote: 'USD' },
];
/** The one volatility model the euBarrier endpoint prices on (static replication on the SVI smile). */
const EU_BARRIER_MODEL = 'SVI' as const;

/** `DERIBIT (XCHG_A)`: the served source with its alias, as the errors and the documentation name it. */
const SOURCE_TEXT = `${EU_BARRIER_SOURCE} (${sourceAliases(EU_BARRIER_SOURCE).filter((a) => a !== EU_BARRIER_SOURCE).join(', ')})`;
/** `BTC/USD and ETH/USD`: the served pairs in words. */
const PAIRS_TEXT = inWords(EU_BARRIER_PAIRS.map((p) => `${p.base}/${p.quote}`), 'and');

/** euBarrier result item: percent figures per unit of nominal. */
const EuBarrierResult = z.object({
  instrumentId: z.string(),
  observationTimestamp: num(),
  impliedVolatility: num().describe(
    'Volatility on the strike for CALL, PUT, FORWARD; volatility on the barrier for DIGITAL_CALL, DIGITAL_PUT; fraction',
  ),
  spotPrice: num(),
  forwardPrice: num(),
  percentPrice: num(),
  percentDelta: num(),
  percentGamma: num(),
  percentVega: num(),
  percentTheta: num(),
  percentVolga: num(),
  percentVanna: num(),
});

/** Example batch on the first served pair: an up-and-out CALL at the money, and a DIGITAL_CALL 10 % above the forward. */
function euBarrierExample(ctx: LiveDocContext): unknown {
  const b = ctx.exampleMarket(EU_BARRIER_SOURCE, EU_BARRIER_PAIRS[0]!);
  const common = { baseCurrency: b.pair.base, quoteCurrency: b.pair.quote, source: EU_BARRIER_SOURCE, volatilityModel: EU_BARRIER_MODEL };
  return [
    { instrumentId: 'b1', ...common, europeanBarrierOptionType: 'CALL', expirationTimestamp: b.expiry, strike: ctx.nice(b.forward), barrierType: 'UP_AND_OUT', barrier: ctx.nice(b.forward * 1.2) },
    { instrumentId: 'b2', ...common, europeanBarrierOptionType: 'DIGITAL_CALL', expirationTimestamp: b.expiry, barrier: ctx.nice(b.forward * 1.1) },
  ];
}

/** The document's rules on one item: the one model, a branch per served pair (strike and barrier ranges), per-type needs. */
function euBarrierItemRules(item: JsonSchema, ctx: LiveDocContext): JsonSchema[] {
  // the types split as the route's check splits them (isDigital)
  const digitals = EU_BARRIER_OPTION_TYPES.filter(isDigital);
  const plain = EU_BARRIER_OPTION_TYPES.filter((t) => !isDigital(t));
  const servedHere = ctx.served.filter((p) => p.source === EU_BARRIER_SOURCE && EU_BARRIER_PAIRS.some((q) => q.base === p.pair.base && q.quote === p.pair.quote));
  item.properties.volatilityModel = { ...item.properties.volatilityModel, enum: [EU_BARRIER_MODEL] };
  const pairs = servedHere.length > 0 ? servedHere : EU_BARRIER_PAIRS.map((pair) => ({ source: EU_BARRIER_SOURCE, pair }));
  return [
    { anyOf: ctx.pairBranches(pairs, { prices: ['strike', 'barrier'] }) },
    {
      oneOf: [
        { description: `${inWords(plain, 'and')} need strike and barrierType`, required: ['strike', 'barrierType'], properties: { europeanBarrierOptionType: { enum: plain, description: inWords(plain, 'or') } } },
        { description: 'Digitals: barrier is the strike of the digital; strike and barrierType are ignored', properties: { europeanBarrierOptionType: { enum: digitals, description: inWords(digitals, 'or') } } },
      ],
    },
  ];
}

/** Documentation of POST euBarrier: its answer, errors, live example and rules. */
const euBarrierDocs: RouteDocs = { response: z.array(EuBarrierResult), errors: MARKET_POST, live: { body: euBarrierExample, constrainItem: euBarrierItemRules } };

/** POST euBarrier over `markets` (a named fastify-plugin, `euBarrier`). */
export const euBarrierRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('euBarrier', async (app) => {
    app.post(
      '/api/v1/global/optionValuation/euBarrier',
      {
        schema: {
          summary: `European barrier (observed at expiry) and digital options: percent price and Greeks, ${EU_BARRIER_SOURCE} ${PAIRS_TEXT}, ${EU_BARRIER_MODEL} (1 to ${MAX_BATCH_ITEMS} items)`,
          tags: ['valuation'],
          description: `European barrier (barrier observed at expiry) and digital options on ${SOURCE_TEXT} ${PAIRS_TEXT}, ${EU_BARRIER_MODEL} only, priced by static replication on the smile of the expiry. Percent figures per unit of nominal. ${BATCH50}`,
          body: EuBarrierBody,
          querystring: AsOfQuery,
          docs: euBarrierDocs,
        },
      },
      async (req) => {
        const items = req.body;
        const asOf = req.query.asOf;
        const errs = new DetailCollector();
        checkEuBarrierItems(errs, items, markets.clockAt(asOf));
        errs.throwIfAny('request');

        const cache = await markets.at(
          asOf,
          items.map((it) => ({ source: EU_BARRIER_SOURCE, pair: { base: it.baseCurrency, quote: it.quoteCurrency } as Pair, model: EU_BARRIER_MODEL })),
        );
        const points = items.map((it) => {
          const pair: Pair = { base: it.baseCurrency, quote: it.quoteCurrency };
          assertServable(cache, EU_BARRIER_SOURCE, pair, EU_BARRIER_MODEL);
          return expiryPoint(cache.getSurface(EU_BARRIER_SOURCE, pair, EU_BARRIER_MODEL)!, it.expirationTimestamp);
        });
        checkEuBarrierMoneyness(errs, items, points);
        errs.throwIfAny('request');

        const results = items.map((it, i) => {
          const out = euBarrierValue(it, points[i]!);
          checkFiniteResult(errs, `[${i}].`, out);
          return out;
        });
        errs.throwIfAny('request');
        return results;
      },
    );
  });

/**
 * The checks of the items before any surface is read: ids used once; {@link EU_BARRIER_SOURCE}, one of
 * {@link EU_BARRIER_PAIRS}, {@link EU_BARRIER_MODEL}; expiry not before now; strike and barrierType given for CALL, PUT, FORWARD (ignored for digitals).
 */
function checkEuBarrierItems(errs: DetailCollector, items: readonly EuBarrierItem[], clock: Clock): void {
  checkUniqueIds(errs, items.map((it) => it.instrumentId), (i) => `[${i}].`);
  items.forEach((it, i) => {
    const prefix = `[${i}].`;
    if (resolveSource(it.source) !== EU_BARRIER_SOURCE) {
      errs.add(`${prefix}source`, `euBarrier supports only ${SOURCE_TEXT}, got ${it.source}`);
    }
    if (!EU_BARRIER_PAIRS.some((p) => p.base === it.baseCurrency && p.quote === it.quoteCurrency)) {
      errs.add(`${prefix}baseCurrency`, `euBarrier supports only ${PAIRS_TEXT}, got ${it.baseCurrency}/${it.quoteCurrency}`);
    }
    if (it.volatilityModel !== EU_BARRIER_MODEL) {
      errs.add(`${prefix}volatilityModel`, `euBarrier supports only ${EU_BARRIER_MODEL}, got ${it.volatilityModel}`);
    }
    checkExpiry(errs, prefix, it.expirationTimestamp, clock);
    if (!isDigital(it.europeanBarrierOptionType)) {
      if (it.strike === undefined) errs.add(`${prefix}strike`, `Required for ${it.europeanBarrierOptionType}`);
      if (it.barrierType === undefined) errs.add(`${prefix}barrierType`, `Required for ${it.europeanBarrierOptionType}`);
    }
  });
}

/** The barrier's moneyness, and the strike's (not for digitals), against each item's forward. */
function checkEuBarrierMoneyness(errs: DetailCollector, items: readonly EuBarrierItem[], points: readonly ExpiryPoint[]): void {
  items.forEach((it, i) => {
    checkMoneyness(errs, `[${i}].barrier`, it.barrier, points[i]!.forward);
    if (it.strike !== undefined && !isDigital(it.europeanBarrierOptionType)) {
      checkMoneyness(errs, `[${i}].strike`, it.strike, points[i]!.forward);
    }
  });
}

/** One item's answer: its percent price and Greeks by static replication on the smile of its expiry's point. */
function euBarrierValue(it: EuBarrierItem, p: ExpiryPoint) {
  const digital = isDigital(it.europeanBarrierOptionType);
  const r = valueEuBarrier({
    F: p.forward,
    T: p.T,
    smile: p.vol,
    smileSlope: p.volSlope,
    type: it.europeanBarrierOptionType,
    B: it.barrier,
    ...(digital ? {} : { K: it.strike!, barrierType: it.barrierType! }),
  });
  return {
    instrumentId: it.instrumentId,
    observationTimestamp: p.observationTimestamp,
    impliedVolatility: r.impliedVolatility,
    spotPrice: p.spot,
    forwardPrice: p.forward,
    percentPrice: r.percentPrice,
    percentDelta: r.percentDelta,
    percentGamma: r.percentGamma,
    percentVega: r.percentVega,
    percentTheta: r.percentTheta,
    percentVolga: r.percentVolga,
    percentVanna: r.percentVanna,
  };
}
