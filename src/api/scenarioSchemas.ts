/**
 * Request schemas of the euBarrier endpoint (interface-spec.md section 1) and of the three scenario
 * endpoints (section 5), with the limits decisions.md "Limits the spec leaves open" sets:
 * priceRangeSteps integer 1..50, 0 < priceRange < 1, volRangeUp / volRangeDown 0..5, volShifts 1..16
 * numbers in -5..5, minVolForShockUp 0..5, vega powers 0..5, every listed member required.
 * Shape and per-field rules live here; rules that need the market, the clock or another field (supported
 * pair, expiry >= now, strike required by type, inverse flag) are checked in the routes with rules.ts.
 */
import { z } from 'zod';
import {
  BaseCurrencyValue,
  instrumentId,
  MAX_BATCH_ITEMS,
  notional,
  positive,
  PriceMethodValue,
  QuoteCurrencyValue,
  SourceValue,
  timestampS,
  VolatilityModelValue,
} from './schemas.js';

/** Most instruments of a scenario portfolio (riskScenarioInstruments; spec "Limits"). */
export const MAX_SCENARIO_INSTRUMENTS = 100;
/** Most volatility shifts of volRangeRiskScenarios (volShifts). */
export const MAX_VOL_SHIFTS = 16;

/** Batch of 1..max items. */
function batch<T extends z.ZodType>(item: T, max: number) {
  return z.array(item).min(1, `Must hold 1 to ${max} items`).max(max, `Must hold 1 to ${max} items`);
}

/** A number in [lo, hi] with one message naming the range. */
function between(lo: number, hi: number) {
  const msg = `Must be a number from ${lo} to ${hi}`;
  return z.number(msg).finite(msg).min(lo, msg).max(hi, msg);
}

/** europeanBarrierOptionType values (interface-spec.md). */
export const EuBarrierOptionTypeValue = z.enum(['CALL', 'PUT', 'FORWARD', 'DIGITAL_CALL', 'DIGITAL_PUT']);
/** barrierType values (interface-spec.md). */
export const BarrierTypeValue = z.enum(['UP_AND_OUT', 'DOWN_AND_OUT', 'UP_AND_IN', 'DOWN_AND_IN']);
/** instrumentType values of the scenario endpoints (interface-spec.md). */
export const ScenarioInstrumentTypeValue = z.enum(['CALL', 'PUT', 'FORWARD', 'PERPETUAL', 'SPOT']);

/** A field an instrument of the scenario endpoints may need, by its instrumentType. */
export type ScenarioTypeField = 'volatilityModel' | 'expirationTimestamp' | 'strike';
/**
 * The fields each instrumentType needs (interface-spec.md section 5): what src/api/routes/scenarios.ts checks (400
 * `Required for <type>`) and what the OpenAPI document states (src/api/routes/scenarioDocs.ts). A FORWARD or
 * PERPETUAL may give a strike (its trade price); SPOT needs none of them.
 */
export const SCENARIO_TYPE_NEEDS: Readonly<Record<z.infer<typeof ScenarioInstrumentTypeValue>, readonly ScenarioTypeField[]>> = {
  CALL: ['volatilityModel', 'expirationTimestamp', 'strike'],
  PUT: ['volatilityModel', 'expirationTimestamp', 'strike'],
  FORWARD: ['expirationTimestamp'],
  PERPETUAL: ['expirationTimestamp'],
  SPOT: [],
};

/**
 * POST /api/v1/global/optionValuation/euBarrier item (spec section 1). The enums are the service-wide
 * ones so that an unsupported source, pair or model gets the route's clear 400 ("euBarrier supports only
 * DERIBIT BTC/USD and ETH/USD, SVI"), not a bare enum error. strike and barrierType are required except for
 * digitals (checked in the route).
 */
export const EuBarrierItem = z.object({
  instrumentId,
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
  volatilityModel: VolatilityModelValue,
  europeanBarrierOptionType: EuBarrierOptionTypeValue,
  expirationTimestamp: timestampS,
  strike: positive.optional(),
  barrierType: BarrierTypeValue.optional(),
  barrier: positive,
});
export type EuBarrierItem = z.infer<typeof EuBarrierItem>;
export const EuBarrierBody = batch(EuBarrierItem, MAX_BATCH_ITEMS);

/** Instrument fields shared by the three scenario endpoints (spec section 5, "Request instrument fields"). */
const scenarioInstrumentFields = {
  instrumentId,
  /** Position size, base-currency units; positive LONG, negative SHORT. */
  size: notional,
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
  instrumentType: ScenarioInstrumentTypeValue,
  inverse: z.boolean().optional(),
  volatilityModel: VolatilityModelValue.optional(),
  expirationTimestamp: timestampS.optional(),
  strike: positive.optional(),
};

/** Instrument of riskScenarios and volRangeRiskScenarios (priceMethod required). */
export const ScenarioInstrument = z.object({ ...scenarioInstrumentFields, priceMethod: PriceMethodValue });
export type ScenarioInstrument = z.infer<typeof ScenarioInstrument>;

/** Instrument of advancedRiskScenarios: priceMethod is not a field (the source's own method is used). */
export const AdvancedScenarioInstrument = z.object({
  ...scenarioInstrumentFields,
  priceMethod: z
    .undefined('Not a field of advancedRiskScenarios: each instrument is valued with its source\'s own method')
    .optional(),
});
export type AdvancedScenarioInstrument = z.infer<typeof AdvancedScenarioInstrument>;

const ladder = {
  priceRangeSteps: z
    .number('Must be an integer from 1 to 50')
    .int('Must be an integer from 1 to 50')
    .min(1, 'Must be an integer from 1 to 50')
    .max(50, 'Must be an integer from 1 to 50'),
  priceRange: z
    .number('Must be a number with 0 < priceRange < 1')
    .finite('Must be a number with 0 < priceRange < 1')
    .gt(0, 'Must be a number with 0 < priceRange < 1')
    .lt(1, 'Must be a number with 0 < priceRange < 1'),
};

/** riskScenarioParameters of riskScenarios (spec 5a). */
export const RiskScenarioParameters = z.object({
  ...ladder,
  volRangeUp: between(0, 5),
  volRangeDown: between(0, 5),
});

/** riskScenarioParameters of volRangeRiskScenarios (spec 5b). */
export const VolRangeScenarioParameters = z.object({
  ...ladder,
  volShifts: z
    .array(between(-5, 5), `Must be an array of 1 to ${MAX_VOL_SHIFTS} numbers`)
    .min(1, `Must hold 1 to ${MAX_VOL_SHIFTS} shifts`)
    .max(MAX_VOL_SHIFTS, `Must hold 1 to ${MAX_VOL_SHIFTS} shifts`),
});

/** riskScenarioParameters of advancedRiskScenarios (spec 5c). */
export const AdvancedScenarioParameters = z.object({
  ...ladder,
  volRangeUp: between(0, 5),
  volRangeDown: between(0, 5),
  minVolForShockUp: between(0, 5),
  shortTermVegaPower: between(0, 5),
  longTermVegaPower: between(0, 5),
});

function scenarioBody<I extends z.ZodType, P extends z.ZodType>(instrument: I, params: P) {
  return z.object({
    riskScenarioInstruments: batch(instrument, MAX_SCENARIO_INSTRUMENTS),
    riskScenarioParameters: params,
  });
}

export const RiskScenariosBody = scenarioBody(ScenarioInstrument, RiskScenarioParameters);
export const VolRangeScenariosBody = scenarioBody(ScenarioInstrument, VolRangeScenarioParameters);
export const AdvancedScenariosBody = scenarioBody(AdvancedScenarioInstrument, AdvancedScenarioParameters);
