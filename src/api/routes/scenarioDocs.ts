/**
 * Documentation of the three scenario routes (./scenarios.ts registers them with it): their answers (interface-spec.md
 * section 5 "Result instrument fields", 5a/5b/5c), descriptions, and the live examples and per-instrument rules of the
 * OpenAPI document (src/api/routeDefinition.ts RouteDocs). Kept beside the routes: the answers' shapes take more
 * lines than the route handlers.
 */
import { z } from 'zod';
import { MAX_VOL_SHIFTS, SCENARIO_TYPE_NEEDS, ScenarioInstrumentTypeValue } from '../scenarioSchemas.js';
import { BATCH100, inWords, MARKET_POST, num, numOrNull, type JsonSchema, type LiveDocContext, type RouteDocs } from '../routeDefinition.js';

/** Fields of every scenario result instrument (spec 5 "Result instrument fields"). */
const scenarioResultFields = {
  instrumentId: z.string(),
  size: num(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  instrumentType: z.enum(['CALL', 'PUT', 'FORWARD', 'PERPETUAL', 'SPOT']),
  inverse: z.boolean().nullable(),
  volatilityModel: z.string().nullable(),
  expirationTimestamp: numOrNull(),
  observationTimestamp: num(),
  strike: numOrNull(),
  spotPrice: num(),
  forwardPrice: numOrNull(),
  instrumentPrice: numOrNull(),
  volatility: numOrNull(),
};
/** The three volatilities of 5a / 5c, as the measure names end. */
const UUD = ['Up', 'Unch', 'Down'] as const;
/** Meaning of the scenario measure stems (spec 5a table). */
const MEASURE_TEXT: Readonly<Record<string, string>> = {
  priceVol: 'Instrument percent price',
  basePlVol: 'baseCurrency P&L',
  quotePlVol: 'quoteCurrency P&L',
  baseValueVol: 'Base-currency instrument value',
  baseDelta: 'Base-currency delta',
  baseGamma: 'Base-currency gamma',
  baseNetDelta: 'Base-currency net delta',
  baseTheta: 'Base-currency theta',
  baseVega: 'Base-currency vega',
  baseVolga: 'Base-currency volga',
  baseVanna: 'Base-currency vanna',
};

/** One scenario item of 5a / 5c: every measure stem at the up-shifted, current and down-shifted volatility. */
const upUnchDownItem = z.object({
  scenario: num(),
  spotPrice: num().describe('Scenario spot: spot (1 + shift)'),
  forwardPrice: num().describe('Scenario forward: forward (1 + shift)'),
  ...Object.fromEntries(
    Object.entries(MEASURE_TEXT).flatMap(([s, text]) =>
      UUD.map((v) => [`${s}${v}`, num().describe(`${text}, at the ${v === 'Up' ? 'up-shifted' : v === 'Down' ? 'down-shifted' : 'current market'} volatility.`)]),
    ),
  ),
});
/** Answer of riskScenarios and advancedRiskScenarios (5a, 5c). */
const UpUnchDownResults = z.object({
  riskScenarioInstrumentResults: z.array(
    z.object({ ...scenarioResultFields, volUp: num(), volDown: num(), riskScenarioItems: z.array(upUnchDownItem) }),
  ),
});
/** A map volScenario<n> -> figure (5b). */
const volMap = () => z.record(z.string(), num());
/** Answer of volRangeRiskScenarios (5b). */
const VolRangeResults = z.object({
  riskScenarioInstrumentResults: z.array(
    z.object({
      ...scenarioResultFields,
      volScenarios: volMap(),
      riskScenarioItems: z.array(
        z.object({
          scenario: num(),
          spotPrice: num().describe('Scenario spot: spot (1 + shift)'),
          forwardPrice: num().describe('Scenario forward: forward (1 + shift)'),
          price: volMap(),
          basePl: volMap(),
          quotePl: volMap(),
          baseValue: volMap(),
          baseDelta: volMap(),
          baseNetDelta: volMap(),
          baseGamma: volMap(),
          baseTheta: volMap(),
          baseVega: volMap(),
          baseVolga: volMap(),
          baseVanna: volMap(),
        }),
      ),
    }),
  ),
});

/** Example instruments on the live example market: a CALL at the money (long 2) and a FORWARD (short 1). */
function exampleInstruments(ctx: LiveDocContext) {
  const m = ctx.market;
  const call = { instrumentId: 'r1', size: 2, ...ctx.pair, source: m.source, priceMethod: m.source, instrumentType: 'CALL', volatilityModel: 'SVI', expirationTimestamp: m.expiry, strike: ctx.strike };
  const forward = { instrumentId: 'f1', size: -1, ...ctx.pair, source: m.source, instrumentType: 'FORWARD', expirationTimestamp: m.expiry };
  return { call, forward };
}

/** The document's rules on one instrument: a branch per served pair (inverse flag, strike range), per-type needs. */
function instrumentRules(_item: JsonSchema, ctx: LiveDocContext): JsonSchema[] {
  return [
    { anyOf: ctx.pairBranches(ctx.served, { inverse: true, prices: ['strike'] }) },
    { oneOf: typeGroups().map(typeBranch) },
  ];
}

/** The instrumentTypes grouped by the fields they need ({@link SCENARIO_TYPE_NEEDS}), in the enum's order. */
function typeGroups(): Array<{ types: string[]; needs: readonly string[] }> {
  const groups: Array<{ types: string[]; needs: readonly string[] }> = [];
  for (const t of ScenarioInstrumentTypeValue.options) {
    const needs = SCENARIO_TYPE_NEEDS[t];
    const g = groups.find((x) => x.needs.join() === needs.join());
    if (g) g.types.push(t);
    else groups.push({ types: [t], needs });
  }
  return groups;
}

/** The oneOf branch of one group: its types, the fields they need, in words. */
function typeBranch({ types, needs }: { types: string[]; needs: readonly string[] }): JsonSchema {
  const who = inWords(types, 'and');
  const verb = types.length > 1 ? 'need' : 'needs';
  const description = needs.length === 0 ? `${who} ${verb} none of them` : `${who} ${verb} ${inWords(needs, 'and')}${needs.includes('strike') ? '' : ' (strike optional: the trade price)'}`;
  return { description, ...(needs.length > 0 ? { required: [...needs] } : {}), properties: { instrumentType: { enum: types, description: inWords(types, 'or') } } };
}

/** POST riskScenarios (5a): description. */
const RISK_SCENARIOS_DESCRIPTION = `Risk scenarios with a fixed absolute up/down volatility shift (volUp = vol + volRangeUp, volDown = vol - volRangeDown, floored at 0.0001). ${BATCH100}`;
/** POST riskScenarios (5a): answer, errors, live example and instrument rules. */
const riskScenariosDocs: RouteDocs = {
  response: UpUnchDownResults,
  errors: MARKET_POST,
  live: {
    body: (ctx) => {
      const { call, forward } = exampleInstruments(ctx);
      return { riskScenarioInstruments: [call, { ...forward, priceMethod: ctx.market.source }], riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 } };
    },
    constrainItem: instrumentRules,
  },
};

/** POST volRangeRiskScenarios (5b): description. */
const VOL_RANGE_SCENARIOS_DESCRIPTION = `Risk scenarios for a list of absolute volatility shifts (at most ${MAX_VOL_SHIFTS}); every measure is a map keyed volScenario<n>, n the position of the shift in volShifts. ${BATCH100}`;
/** POST volRangeRiskScenarios (5b): answer, errors, live example and instrument rules. */
const volRangeScenariosDocs: RouteDocs = {
  response: VolRangeResults,
  errors: MARKET_POST,
  live: {
    body: (ctx) => {
      const { call, forward } = exampleInstruments(ctx);
      return { riskScenarioInstruments: [call, { ...forward, priceMethod: ctx.market.source }], riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volShifts: [-0.2, 0, 0.2, 0.5] } };
    },
    constrainItem: instrumentRules,
  },
};

/** POST advancedRiskScenarios (5c): description. */
const ADVANCED_SCENARIOS_DESCRIPTION = `Risk scenarios with a term-dependent volatility shock (the exchange portfolio-margin approach): vegaPower = shortTermVegaPower if daysToExpiry < 30, else longTermVegaPower; volUp = MAX(vol (1 + volRangeUp (30/daysToExpiry)^vegaPower), minVolForShockUp); volDown = MAX(vol (1 - volRangeDown (30/daysToExpiry)^vegaPower), 0); daysToExpiry = (expirationTimestamp - observationTimestamp) / 86400. Instruments have no priceMethod field. ${BATCH100}`;
/** POST advancedRiskScenarios (5c): answer, errors, live example and instrument rules (its instruments have no priceMethod). */
const advancedScenariosDocs: RouteDocs = {
  response: UpUnchDownResults,
  errors: MARKET_POST,
  live: {
    body: (ctx) => {
      const { call, forward } = exampleInstruments(ctx);
      const { priceMethod: _pm, ...advanced } = call;
      return {
        riskScenarioInstruments: [advanced, forward],
        riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.16, volRangeUp: 0.5, volRangeDown: 0.25, minVolForShockUp: 0.5, shortTermVegaPower: 0.3, longTermVegaPower: 0.13 },
      };
    },
    constrainItem: (item, ctx) => {
      if (item.properties.priceMethod) {
        // zod's z.undefined() has no JSON Schema: state that the field must be absent
        item.properties.priceMethod = { not: {}, description: "Not a field of advancedRiskScenarios: must be absent (each instrument is valued with its source's own method)." };
      }
      return instrumentRules(item, ctx);
    },
  },
};

/** The schema members of POST riskScenarios beside its request schemas: tags, description, documentation. */
export const RISK_SCENARIOS_SCHEMA_DOCS = { tags: ['scenarios'], description: RISK_SCENARIOS_DESCRIPTION, docs: riskScenariosDocs };
/** The schema members of POST volRangeRiskScenarios beside its request schemas. */
export const VOL_RANGE_SCENARIOS_SCHEMA_DOCS = { tags: ['scenarios'], description: VOL_RANGE_SCENARIOS_DESCRIPTION, docs: volRangeScenariosDocs };
/** The schema members of POST advancedRiskScenarios beside its request schemas. */
export const ADVANCED_SCENARIOS_SCHEMA_DOCS = { tags: ['scenarios'], description: ADVANCED_SCENARIOS_DESCRIPTION, docs: advancedScenariosDocs };
