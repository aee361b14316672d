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
import type { Markets } from '../asOf.js';
import { resolveSource, type Pair } from '../../domain/markets.js';
import { isDigital, valueEuBarrier } from '../../quant/barrier.js';
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
import { AsOfQuery } from '../schemas.js';

/** Pairs the euBarrier endpoint serves (interface-spec.md section 1: XCHG_A with BTC/USD and ETH/USD). */
export const EU_BARRIER_PAIRS: readonly Pair[] = [
  { base: 'BTC', quote: 'USD' },
  { base: 'ETH', quote: 'USD' },
];

export const euBarrierRoutes =
  (markets: Markets): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      '/api/v1/global/optionValuation/euBarrier',
      {
        schema: {
          summary: 'European barrier (observed at expiry) and digital options: percent price and Greeks, DERIBIT BTC/USD and ETH/USD, SVI (1 to 50 items)',
          body: EuBarrierBody,
          querystring: AsOfQuery,
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
          items.map((it) => ({ source: 'DERIBIT' as const, pair: { base: it.baseCurrency, quote: it.quoteCurrency } as Pair, model: 'SVI' as const })),
        );
        const points = items.map((it) => {
          const pair: Pair = { base: it.baseCurrency, quote: it.quoteCurrency };
          assertServable(cache, 'DERIBIT', pair, 'SVI');
          return expiryPoint(cache.getSurface('DERIBIT', pair, 'SVI')!, it.expirationTimestamp);
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
  };

/**
 * The checks of the items before any surface is read: ids used once; DERIBIT, BTC/USD or ETH/USD, SVI; expiry not
 * before now; strike and barrierType given for CALL, PUT, FORWARD (ignored for digitals).
 */
function checkEuBarrierItems(errs: DetailCollector, items: readonly EuBarrierItem[], clock: Clock): void {
  checkUniqueIds(errs, items.map((it) => it.instrumentId), (i) => `[${i}].`);
  items.forEach((it, i) => {
    const prefix = `[${i}].`;
    if (resolveSource(it.source) !== 'DERIBIT') {
      errs.add(`${prefix}source`, `euBarrier supports only DERIBIT (XCHG_A), got ${it.source}`);
    }
    if (!EU_BARRIER_PAIRS.some((p) => p.base === it.baseCurrency && p.quote === it.quoteCurrency)) {
      errs.add(`${prefix}baseCurrency`, `euBarrier supports only BTC/USD and ETH/USD, got ${it.baseCurrency}/${it.quoteCurrency}`);
    }
    if (it.volatilityModel !== 'SVI') {
      errs.add(`${prefix}volatilityModel`, `euBarrier supports only SVI, got ${it.volatilityModel}`);
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
