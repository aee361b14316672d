/**
 * POST /api/v1/global/optionValuation/vanilla (spec section 2): value and Greeks of CALL, PUT and
 * FORWARD in base currency, on the calibrated surface of `source` at the item's expiry, priced by
 * src/quant/vanilla.ts under the item's priceMethod (OTC = DERIBIT). Conventions: docs/conventions.md.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Markets } from '../asOf.js';
import { valueVanilla } from '../../quant/vanilla.js';
import type { Pair, Source } from '../../domain/markets.js';
import { AsOfQuery, VanillaBody } from '../schemas.js';
import { expiryPoint } from '../../cache/expiryPoint.js';
import {
  assertServable,
  checkExpiry,
  checkFiniteResult,
  checkMoneyness,
  checkUniqueIds,
  DetailCollector,
  resolveInverse,
  resolvePair,
  resolvePriceMethod,
} from '../rules.js';

export const vanillaRoutes =
  (markets: Markets): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      '/api/v1/global/optionValuation/vanilla',
      { schema: { summary: 'Vanilla option / forward value and Greeks in base currency (1 to 50 items)', body: VanillaBody, querystring: AsOfQuery } },
      async (req) => {
        const items = req.body;
        const asOf = req.query.asOf;
        const clock = markets.clockAt(asOf);
        const errs = new DetailCollector();
        checkUniqueIds(errs, items.map((it) => it.instrumentId), (i) => `[${i}].`);
        const resolved = items.map((it, i) => {
          const prefix = `[${i}].`;
          const type = it.vanillaOptionType ?? 'FORWARD';
          const r = resolvePair(errs, prefix, it.source, it.baseCurrency, it.quoteCurrency);
          checkExpiry(errs, prefix, it.expirationTimestamp, clock);
          if ((type === 'CALL' || type === 'PUT') && it.strike === undefined) {
            errs.add(`${prefix}strike`, `Required for ${type}`);
          }
          const inverse = r ? resolveInverse(errs, prefix, r.source, r.pair, it.inverse) : false;
          return { r, type, inverse };
        });
        errs.throwIfAny('request');

        // the market of every item (503 when not servable), then the rules that need its forward
        const cache = await markets.at(
          asOf,
          items.map((it, i) => ({ ...(resolved[i]!.r as { source: Source; pair: Pair }), model: it.volatilityModel })),
        );
        const points = items.map((it, i) => {
          const { source, pair } = resolved[i]!.r as { source: Source; pair: Pair };
          assertServable(cache, source, pair, it.volatilityModel);
          return expiryPoint(cache.getSurface(source, pair, it.volatilityModel)!, it.expirationTimestamp);
        });
        items.forEach((it, i) => {
          if (it.strike !== undefined) checkMoneyness(errs, `[${i}].strike`, it.strike, points[i]!.forward);
        });
        errs.throwIfAny('request');

        const results = items.map((it, i) => {
          const { type, inverse } = resolved[i]!;
          const p = points[i]!;
          const volStrike = it.strike ?? p.forward;
          const sigma = p.vol(volStrike);
          const v = valueVanilla({
            F: p.forward,
            S: p.spot,
            ...(it.strike !== undefined ? { K: it.strike } : {}),
            T: p.T,
            sigma,
            type,
            inverse,
            priceMethod: resolvePriceMethod(it.priceMethod),
            amount: it.amount,
          });
          const out = {
            instrumentId: it.instrumentId,
            observationTimestamp: p.observationTimestamp,
            impliedVolatility: sigma,
            spotPrice: p.spot,
            forwardPrice: p.forward,
            ...v,
          };
          checkFiniteResult(errs, `[${i}].`, out);
          return out;
        });
        errs.throwIfAny('request');
        return results;
      },
    );
  };
