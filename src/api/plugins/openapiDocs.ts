/**
 * Documentation-only parts of the OpenAPI document (src/api/plugins/openapi.ts):
 * - {@link FIELD_DESCRIPTIONS}: the meaning, unit and rule of every request and response field, by field name,
 *   from docs/spec/interface-spec.md (field tables), decisions.md (aliases, limits, error shape, quant
 *   conventions) and docs/conventions.md. Filled into every JSON schema property that has no `.describe()` of
 *   its own, so the request schemas the routes validate with stay the single source of shape, enums and limits;
 * - {@link TAGS}: the tags of the document, in display order. Each route's own tags, description, 200 response
 *   and live examples are in the route's module (src/api/routeDefinition.ts RouteDocs), not here;
 * - {@link ErrorBody}: the one error shape (src/api/errors.ts, decisions.md "Errors").
 */
import { z } from 'zod';
import { VOLATILITY_MODELS } from '../../domain/volatilityModels.js';
import { MAX_INSTRUMENT_ID_LENGTH } from '../schemas.js';
import { MAX_SCENARIO_INSTRUMENTS, MAX_VOL_SHIFTS } from '../scenarioSchemas.js';

/** Error body of every 4xx/5xx answer (src/api/errors.ts errorBody). */
export const ErrorBody = z
  .object({
    statusCode: z.number().int().min(400).max(599).describe('HTTP status code, repeated in the body'),
    error: z.string().describe('HTTP reason phrase of the status, e.g. "Bad Request", "Service Unavailable"'),
    message: z.string().describe('What went wrong, in words; for 503 it says which (source, pair) and why (warming up, stale since when, not connected)'),
    details: z
      .array(
        z.object({
          path: z.string().describe('The offending field: `[3].strike` (batch item 3), `riskScenarioInstruments[0].strike`, or a query parameter name'),
          message: z.string().describe('Why the field is rejected, e.g. "Must be > 0"'),
        }),
      )
      .optional()
      .describe('Every offending field (400): a batch with any invalid item is rejected whole and every bad item is named'),
  })
  .meta({ id: 'ErrorBody', description: 'Error body of every error response (decisions.md "Errors"). No stack trace or internal detail is ever sent.' });

/** Descriptions of the error statuses (decisions.md "Errors"). */
export const ERROR_STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Invalid request: schema or rule violation, unsupported exchange/pair/model, batch size out of range, expiry in the past, startTime > endTime. `details` names every bad field of every bad item.',
  401: 'Missing or wrong X-API-Key header (only when API keys are configured). The dashboard routes also take the session cookie set by logging in at /login; /metrics takes Authorization: Bearer <METRICS_KEY> when one is configured.',
  404: 'Unknown route, or unknown funding instrumentId.',
  413: 'Body larger than the limit (default 1 MiB).',
  415: 'Content-Type is not application/json.',
  429: 'Rate limit exceeded; the Retry-After header says when to retry.',
  500: 'Unexpected internal error (logged on the server; no detail is sent).',
  503: 'No calibrated market data yet for that source/pair (warming up), the data is stale (older than STALE_AFTER_S, default 30 s, or the feed is disconnected), or the source is not connected in this deployment. The message says which and since when. Never a silent stale answer.',
};

/** Tags of the document, in display order, with their descriptions. */
export const TAGS = [
  { name: 'valuation', description: 'Option valuation and Greeks (spec sections 1, 2)' },
  { name: 'implied volatility', description: 'Implied volatility at a strike, a delta, and the summary (spec sections 3, 4, 8)' },
  { name: 'scenarios', description: 'Risk scenarios: price ladder crossed with volatility shifts (spec section 5)' },
  { name: 'market data', description: 'Funding rates, forward curve and the calibrated surface (spec sections 6, 7)' },
  { name: 'history', description: 'Series from the history store; every data endpoint also answers as of a past time with the query parameter asOf' },
  { name: 'health', description: 'Liveness and readiness' },
  { name: 'monitoring', description: 'Prometheus metrics and the live dashboard' },
  { name: 'streaming', description: 'Push channels: WebSocket JSON-RPC 2.0 at /api/v1/ws (not an HTTP operation; see /asyncapi.json and docs/streaming.md) and its Server-Sent Events twin' },
];

/**
 * Meaning, unit and rule of each field, by name (interface-spec.md field tables, decisions.md). Filled into
 * schema properties without a description of their own.
 */
export const FIELD_DESCRIPTIONS: Readonly<Record<string, string>> = {
  // ---- shared request fields
  instrumentId: `Caller-defined unique ID of the item (1 to ${MAX_INSTRUMENT_ID_LENGTH} characters), echoed in its result. For fundingRates: the id of a funding instrument (perpetual), e.g. BTC-PERPETUAL; see fundingInstruments.`,
  baseCurrency:
    'Base currency (ticker): BTC, ETH, SOL, XRP. Supported pairs: DERIBIT (XCHG_A) BTC/USD, ETH/USD, SOL/USDC, XRP/USDC; OKX (XCHG_B) BTC/USD, ETH/USD; BYBIT (XCHG_C) BTC/USDC, ETH/USDC, SOL/USDC. An unsupported pair is a 400.',
  quoteCurrency: 'Quote currency (ticker): USD, USDC. Prices and strikes are in the quote currency.',
  source:
    'Exchange the volatility model is calibrated to: DERIBIT, OKX, BYBIT, or the aliases XCHG_A (= DERIBIT), XCHG_B (= OKX), XCHG_C (= BYBIT). Results echo the value sent.',
  priceMethod: 'Valuation convention (instrument valuation model) of an exchange: DERIBIT, OKX, BYBIT (aliases XCHG_A, XCHG_B, XCHG_C) or OTC (currently = DERIBIT).',
  // from the one list of src/domain/volatilityModels.ts: a new model needs no edit here
  volatilityModel: `Volatility model of the calibrated surface, one of ${VOLATILITY_MODELS.join(', ')} (each model, its formula and sources: docs/conventions.md "Volatility surfaces").`,
  expirationTimestamp: 'Expiry, Unix time in seconds (UTC). Requests: must be >= the current time; between listed expiries (08:00 UTC) the surface is interpolated in total variance.',
  strike: 'Strike, quote currency; must be > 0.',
  amount: 'Instrument nominal, base-currency units.',
  vanillaOptionType: 'CALL, PUT or FORWARD (FORWARD when absent). strike is required for CALL and PUT; optional for FORWARD (when given, the price and delta are computed from it).',
  inverse:
    'true for inverse (coin-settled) instruments, false for linear ones. CALL/PUT: true for DERIBIT and OKX BTC/USD, ETH/USD, false for DERIBIT SOL/USDC, XRP/USDC and all BYBIT pairs; FORWARD/PERPETUAL: the instrument\'s settlement. Not required for SPOT; a value contradicting the market is a 400.',
  delta: 'Target forward Black-76 CALL delta N(d1), no premium adjustment; must be > 0.01 and < 0.99. 0.25 is the 25-delta call strike, 0.75 the 25-delta put strike.',
  startTime: 'Start of the period, Unix time in seconds (UTC); must be <= endTime.',
  endTime: 'End of the period, Unix time in seconds (UTC).',
  europeanBarrierOptionType: 'CALL, PUT, FORWARD, DIGITAL_CALL or DIGITAL_PUT.',
  barrierType: 'UP_AND_OUT, DOWN_AND_OUT, UP_AND_IN or DOWN_AND_IN (barrier observed at expiry). Required for every type except DIGITAL_CALL and DIGITAL_PUT.',
  barrier: 'Barrier level, quote currency; must be > 0. For digitals: the strike of the digital.',
  size: 'Position size, base-currency units: positive is LONG, negative is SHORT.',
  instrumentType: 'CALL, PUT, FORWARD, PERPETUAL or SPOT. CALL/PUT need volatilityModel, expirationTimestamp and strike; SPOT needs none of them.',
  riskScenarioInstruments: `The portfolio: 1 to ${MAX_SCENARIO_INSTRUMENTS} instruments. One baseCurrency/quoteCurrency and one source per request is recommended.`,
  riskScenarioParameters: 'Scenario parameters; every member listed for the endpoint is required.',
  priceRangeSteps: 'Number of steps of the price ladder on each side: an integer from 1 to 50. The result has 2*priceRangeSteps + 1 scenario items.',
  priceRange: 'Largest fractional forward-price shift of the ladder, 0 < priceRange < 1 (0.2 = +/-20 %).',
  volRangeUp: 'Upward volatility shift (riskScenarios: absolute, 0.54 with 0.05 gives 0.59; advancedRiskScenarios: relative shock size, see the formula). From 0 to 5.',
  volRangeDown: 'Downward volatility shift (riskScenarios: absolute, 0.54 with 0.05 gives 0.49; advancedRiskScenarios: relative shock size). From 0 to 5.',
  volShifts: `Absolute volatility shifts, 1 to ${MAX_VOL_SHIFTS} numbers from -5 to 5. Shifts -0.2, 0, 0.2, 0.5 on a 60 % vol give scenario vols 0.4, 0.6, 0.8, 1.1 (floored at 0.0001).`,
  minVolForShockUp: 'Floor of the up-shocked volatility, from 0 to 5.',
  shortTermVegaPower: 'Exponent of (30 / daysToExpiry) when daysToExpiry < 30, from 0 to 5.',
  longTermVegaPower: 'Exponent of (30 / daysToExpiry) when daysToExpiry >= 30, from 0 to 5.',
  // ---- common result fields
  observationTimestamp: 'Time at which the market data used was observed (newest exchange data of the snapshot), Unix seconds.',
  impliedVolatility: 'Implied volatility, fraction (0.55 = 55 %).',
  spotPrice: 'Current spot (the exchange index), quote currency.',
  forwardPrice: "Current forward of the expiry (the exchange's own at listed expiries, the forward curve in between), quote currency.",
  // ---- vanilla
  valueBase: 'Option (or forward) value, base currency.',
  deltaBase: 'Delta, base-currency units of forward exposure (plain forward Black delta; docs/conventions.md says which delta per priceMethod).',
  gammaBase: 'Gamma: change of deltaBase per 1 % move of the forward, base currency.',
  vegaBase: 'Vega per 1 % (0.01) implied-volatility move, base currency.',
  thetaBase: '1-day decay V(T - 1 day) - V(T), everything else fixed, base currency.',
  volgaBase: 'Volga per 1 % implied-volatility move (per 0.01²), base currency.',
  vannaBase: 'Vanna per 1 % implied-volatility move, base currency.',
  deltaDecayBase: '1-day change in delta, base currency.',
  timeValueBase: 'Option time value (value - intrinsic), base currency.',
  intrinsicValueBase: 'Intrinsic value, base currency.',
  carryBase: '1-day carry, base currency.',
  rhoBase: 'Change of valueBase per 1 % change in the basis (forward) rate, base currency.',
  totalThetaBase: '1-day change in valueBase with the forward rolled along the curve, base currency.',
  // ---- euBarrier
  percentPrice: 'Option price, percent of nominal.',
  percentDelta: 'Delta, percent.',
  percentGamma: 'Gamma, percent.',
  percentVega: 'Vega per 1 % implied-volatility move, percent.',
  percentTheta: '1-day decay, percent.',
  percentVolga: 'Volga per 1 % implied-volatility move, percent.',
  percentVanna: 'Vanna per 1 % implied-volatility move, percent.',
  // ---- forward curve
  fixedYields: 'Annualized basis yields of the listed (fixed) expiries; not sorted by expiry.',
  constMatYields: 'Annualized basis yields of the constant maturities 1D, 1W, 2W, 1M, 2M, 3M, 6M, 9M, 12M.',
  value: 'Annualized basis, simple: (F / S - 1) / T with T in years ACT/365 (0.05 = 5 % a year).',
  constMat: 'Constant-maturity label (forward curve: 1D, 1W, 2W, 1M, 2M, 3M, 6M, 9M, 12M; volatility summary: 1W, 2W, 1M, 2M, 3M, 6M, 9M).',
  // ---- funding
  interest: 'Funding rate of the settlement period, fraction of the position (may be negative).',
  timestamp: 'Settlement time of the funding rate, Unix seconds (UTC).',
  intervalHours: 'Funding interval of the instrument, hours.',
  points: 'Funding points held.',
  firstTimestamp: 'Oldest funding point held, Unix seconds; null when none.',
  lastTimestamp: 'Newest funding point held, Unix seconds; null when none.',
  // ---- surface
  sequence: 'Snapshot sequence number; increments with every recalibration of this (source, pair, model).',
  calibrationMs: 'Wall-clock milliseconds the calibration took.',
  expiries: 'Listed expiries of the surface, sorted by T. (/ready: number of expiries calibrated.)',
  T: 'Time to expiry in years, ACT/365: (expirationTimestamp - observationTimestamp) / (365 * 86400).',
  atmVol: 'ATM volatility (forward ATM, K = F), fraction.',
  parameters: 'Model parameters of the expiry (raw SVI: a, b, rho, m, sigma in total variance and log-moneyness; SABR: alpha, beta, rho, nu).',
  diagnostics: 'Fit diagnostics of the expiry.',
  rmseVolPts: 'RMSE of the model against the mark IVs, vol points (1 vol point = 0.01). Like the other error figures and warnings, measured on the served surface when one of its slices was last refitted; while every slice is confirmed (a refit would move it by less than the tracking tolerance, docs/conventions.md) they are kept, describing marks at most half a tolerance away from the current ones.',
  maxErrorVolPts: 'Largest absolute error of the model against the mark IVs, vol points.',
  quotesUsed: 'Market quotes used by the fit (one out-of-the-money quote per strike).',
  butterflyFree: 'True when the fitted smile passes the butterfly (non-negative density) check.',
  method: 'How the fit was done (mode, weighting, penalties, robust loss).',
  referenceRmseVolPts: "RMSE (vol points) of the same model's unconstrained fit of this expiry alone (before any arbitrage repair); null for sparse and kept-previous slices.",
  repairCostVolPts: 'What the arbitrage repairs cost: rmseVolPts minus referenceRmseVolPts, vol points; null with it.',
  plainRmseVolPts: "Information: RMSE (vol points) of the model's plain equal-weight least-squares fit of this expiry before any repair (the served fit minimizes the spread-weighted objective), as of the expiry's last cold fit (start, reconnect, the 60 s safety net: warm refits keep it); null for sparse and kept-previous slices and for Vanna-Volga.",
  // ---- iVSummary
  volatilityListed: 'One entry per listed expiry (not sorted by expiry).',
  volatilityConstMat: 'One entry per constant maturity 1W, 2W, 1M, 2M, 3M, 6M, 9M.',
  diffAtmVol: '24 h absolute change of atmVol.',
  delta10Skew: '10-delta risk reversal: vol(10-delta call) - vol(10-delta put), positive when calls are bid.',
  diffDelta10Skew: '24 h absolute change of delta10Skew.',
  delta25Skew: '25-delta risk reversal: vol(25-delta call) - vol(25-delta put), positive when calls are bid.',
  diffDelta25Skew: '24 h absolute change of delta25Skew.',
  delta10Bfly: '10-delta butterfly: (vol(10-delta call) + vol(10-delta put)) / 2 - ATM vol.',
  diffDelta10Bfly: '24 h absolute change of delta10Bfly.',
  delta25Bfly: '25-delta butterfly: (vol(25-delta call) + vol(25-delta put)) / 2 - ATM vol.',
  diffDelta25Bfly: '24 h absolute change of delta25Bfly.',
  // ---- scenarios
  riskScenarioInstrumentResults: 'One result per instrument, in order.',
  riskScenarioItems: 'The scenario items, scenario -priceRangeSteps..priceRangeSteps.',
  scenario: 'Scenario number k: the forward and spot are shifted by k*priceRange/priceRangeSteps (fraction); 0 is the current market.',
  instrumentPrice: 'Current instrument price (options: percent price; forward/perpetual: price); null for SPOT.',
  volatility: 'Current implied volatility at the strike, fraction; null for FORWARD, PERPETUAL, SPOT.',
  volUp: 'Up-shifted implied volatility, fraction (0 for FORWARD).',
  volDown: 'Down-shifted implied volatility, fraction (0 for FORWARD).',
  volScenarios: 'Map from scenario name volScenario<n> (n = zero-based position in volShifts) to the scenario volatility.',
  price: 'Map volScenario<n> -> price: CALL/PUT option percent price; FORWARD/PERPETUAL/SPOT instrument price.',
  basePl: 'Map volScenario<n> -> base-currency P&L.',
  quotePl: 'Map volScenario<n> -> quote-currency P&L.',
  baseValue: 'Map volScenario<n> -> base-currency instrument value.',
  baseDelta: 'Map volScenario<n> -> base-currency delta.',
  baseNetDelta: 'Map volScenario<n> -> base-currency net delta.',
  baseGamma: 'Map volScenario<n> -> base-currency gamma.',
  baseTheta: 'Map volScenario<n> -> base-currency theta.',
  baseVega: 'Map volScenario<n> -> base-currency vega.',
  baseVolga: 'Map volScenario<n> -> base-currency volga.',
  baseVanna: 'Map volScenario<n> -> base-currency vanna.',
  // ---- health
  status: 'ok / ready / warming-up; per pair: ok, not-connected, warming-up or stale.',
  missing: 'The configured (source, pair)s without a calibrated surface yet, as SOURCE:BASE/QUOTE.',
  pairs: 'Every configured (source, pair) with its calibration state.',
  pair: 'The pair, BASE/QUOTE.',
  calibrated: 'Whether an SVI surface is calibrated.',
  // ---- dashboard query
  model: `Volatility model shown: ${VOLATILITY_MODELS.join(', ')}.`,
};
