/**
 * Documentation-only parts of the OpenAPI document (src/api/plugins/openapi.ts):
 * - {@link FIELD_DESCRIPTIONS}: the meaning, unit and rule of every request and response field, by field name,
 *   from docs/spec/interface-spec.md (field tables), decisions.md (aliases, limits, error shape, quant
 *   conventions) and docs/conventions.md. Filled into every JSON schema property that has no `.describe()` of
 *   its own, so the request schemas the routes validate with stay the single source of shape, enums and limits;
 * - {@link ROUTE_DOCS}: per route, tags, a description and the 200 response schema (zod). These response
 *   schemas are NOT given to the routes (so serialization is untouched: fastify's plain JSON.stringify); they
 *   are added to the route schema inside the swagger transform only;
 * - {@link ErrorBody}: the one error shape (src/api/errors.ts, decisions.md "Errors").
 */
import { z } from 'zod';
import { VOLATILITY_MODELS } from '../../domain/volatilityModels.js';

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

const num = () => z.number();
const numOrNull = () => z.number().nullable();

/** Vanilla result item (spec section 2). */
const VanillaResult = z.object({
  instrumentId: z.string(),
  observationTimestamp: num(),
  impliedVolatility: num().describe('Implied volatility on the option strike (the forward for a FORWARD without strike), fraction'),
  spotPrice: num(),
  forwardPrice: num(),
  valueBase: num(),
  deltaBase: num(),
  gammaBase: num(),
  vegaBase: num(),
  thetaBase: num(),
  volgaBase: num(),
  vannaBase: num(),
  deltaDecayBase: num(),
  timeValueBase: num(),
  intrinsicValueBase: num(),
  carryBase: num(),
  rhoBase: num(),
  totalThetaBase: num(),
});

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

const ByStrikeResult = z.object({
  instrumentId: z.string(),
  observationTimestamp: num(),
  impliedVolatility: num().describe('Implied volatility at the target strike, fraction'),
  spotPrice: num(),
  forwardPrice: num(),
});

const ByDeltaResult = z.object({
  instrumentId: z.string(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  volatilityModel: z.string().describe('The requested volatility model'),
  observationTimestamp: num(),
  impliedVolatility: num().describe('Implied volatility at the strike whose forward Black call delta equals the target, fraction'),
  spotPrice: num(),
  forwardPrice: num(),
});

const ForwardCurveResult = z.object({
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  fixedYields: z.array(z.object({ expirationTimestamp: num(), value: num() })),
  constMatYields: z.array(z.object({ expirationTimestamp: num(), constMat: z.enum(['1D', '1W', '2W', '1M', '2M', '3M', '6M', '9M', '12M']), value: num() })),
  observationTimestamp: num().describe('Additive: time of the newest market data of the curve, Unix seconds (the `asOf` that answers this curve again)'),
  sequence: num().describe('Additive: the curve\'s sequence (the calibration that built it; the surfaces of that calibration carry the same)'),
});

const FundingRatesResult = z.array(z.object({ interest: num(), timestamp: num() })).max(200);

const FundingInstrumentsResult = z.array(
  z.object({
    instrumentId: z.string(),
    source: z.string(),
    baseCurrency: z.string(),
    quoteCurrency: z.string(),
    intervalHours: num(),
    points: num(),
    firstTimestamp: numOrNull(),
    lastTimestamp: numOrNull(),
  }),
);

const SurfaceResult = z.object({
  source: z.string(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  volatilityModel: z.string(),
  observationTimestamp: num(),
  spotPrice: num(),
  sequence: num(),
  calibrationMs: num(),
  arbitrage: z
    .object({
      butterflyFree: z.boolean().describe('Every served slice passes its butterfly check'),
      calendarFreeRaw: z.boolean().describe('The raw fitted slices were calendar-free on the grid (before the envelope)'),
      calendarFree: z.boolean().describe('The served surface is calendar-free: total variance non-decreasing in T at every grid k'),
      calendarGrid: z.string().describe('The grid of the calendar check, e.g. `241 points of k in [-3, 3]`'),
      counts: z
        .object({
          fits: num().describe('Expiry fits made'),
          constrainedRefits: num().describe('Fits whose violation a constrained refit removed (butterfly; SVI also the calendar floor)'),
          calendarRepaired: num().describe('Slices served with the calendar envelope'),
          rejected: num().describe('Fits rejected (arbitrage left after the refit)'),
          keptPrevious: num().describe('Rejected fits where the last good slice of the expiry was served instead'),
          dropped: num().describe('Rejected fits where no earlier good slice existed and the expiry was left out'),
        })
        .describe('Cumulative repair and rejection counts of this (source, pair, model) since the calibrator started'),
    })
    .nullable()
    .describe('No-arbitrage status of the surface and repair/rejection counts; null when the calibrator did not report them'),
  skipped: z
    .array(z.object({ expirationTimestamp: num(), reason: z.string().describe('Why the expiry is not served') }))
    .describe('Listed expiries this model could not serve, and why'),
  expiries: z.array(
    z.object({
      expirationTimestamp: num(),
      T: num(),
      forwardPrice: num().describe("The expiry's forward (the exchange's own: Deribit underlying_price), quote currency"),
      atmVol: num(),
      parameters: z.record(z.string(), num()),
      diagnostics: z.object({
        rmseVolPts: num(),
        maxErrorVolPts: num(),
        quotesUsed: num(),
        butterflyFree: z.boolean(),
        method: z.string(),
        calibrationMs: num(),
        referenceRmseVolPts: numOrNull().optional(),
        repairCostVolPts: numOrNull().optional(),
        plainRmseVolPts: numOrNull().optional(),
      }).loose(),
    }),
  ),
});

/** iVSummary entry: vols and changes are fractions; a figure that cannot be computed (no strike with that delta on the smile, no history point 24 h back) is null. */
const IvSummaryEntry = z.object({
  expirationTimestamp: num(),
  constMat: z.enum(['1W', '2W', '1M', '2M', '3M', '6M', '9M']).optional(),
  atmVol: num(),
  diffAtmVol: numOrNull(),
  delta10Skew: numOrNull(),
  diffDelta10Skew: numOrNull(),
  delta25Skew: numOrNull(),
  diffDelta25Skew: numOrNull(),
  delta10Bfly: numOrNull(),
  diffDelta10Bfly: numOrNull(),
  delta25Bfly: numOrNull(),
  diffDelta25Bfly: numOrNull(),
});
const IvSummaryResult = z.object({
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  volatilityModel: z.string(),
  observationTimestamp: num().describe('Observation time of the surface summarized, Unix seconds'),
  diffReferenceTimestamp: numOrNull().describe('Observation time of the history point (about 24 h earlier) the changes are measured against; null when there is none, and then every diff is null'),
  volatilityListed: z.array(IvSummaryEntry),
  volatilityConstMat: z.array(IvSummaryEntry),
});

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
const UUD = ['Up', 'Unch', 'Down'] as const;
const UUD_STEMS = ['priceVol', 'basePlVol', 'quotePlVol', 'baseValueVol', 'baseDelta', 'baseGamma', 'baseNetDelta', 'baseTheta', 'baseVega', 'baseVolga', 'baseVanna'];
const upUnchDownItem = z.object({
  scenario: num(),
  spotPrice: num().describe('Scenario spot: spot (1 + shift)'),
  forwardPrice: num().describe('Scenario forward: forward (1 + shift)'),
  ...Object.fromEntries(UUD_STEMS.flatMap((s) => UUD.map((v) => [`${s}${v}`, num()]))),
});
const UpUnchDownResults = z.object({
  riskScenarioInstrumentResults: z.array(
    z.object({ ...scenarioResultFields, volUp: num(), volDown: num(), riskScenarioItems: z.array(upUnchDownItem) }),
  ),
});
const volMap = () => z.record(z.string(), num());
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

const HealthResult = z.object({ status: z.literal('ok') });
const ReadyResult = z.object({
  status: z.enum(['ready', 'warming-up', 'catching-up', 'assigning-pairs', 'standby']).describe('catching-up: an API replica still reading its Kafka topics up to the end offsets it saw at start; assigning-pairs: a sharded calibrator waiting for its pair assignment; standby: a sharded calibrator whose PAIRS are all owned by other calibrators'),
  message: z.string().optional().describe('Why the process holds every answer (catching-up, assigning-pairs, standby)'),
  missing: z.array(z.string()),
  pairs: z.array(
    z.object({
      source: z.string(),
      pair: z.string(),
      calibrated: z.boolean(),
      observationTimestamp: numOrNull(),
      expiries: num(),
      status: z.enum(['ok', 'not-connected', 'warming-up', 'stale']),
    }),
  ),
});

/** The live dashboard's state (src/dashboard/state.ts DashboardState), in outline. */
const DashboardStateResult = z.object({
  selection: z
    .object({ source: z.string(), baseCurrency: z.string(), quoteCurrency: z.string(), volatilityModel: z.string() })
    .nullable()
    .describe('The (source, pair, model) shown; null while nothing is known yet'),
  options: z.array(z.object({ source: z.string(), pair: z.string(), models: z.array(z.string()).describe('Models with a calibrated surface') })).describe('Every (source, pair) known, with the models held'),
  generatedAt: num().describe('Wall-clock time the state was built, Unix seconds'),
  asOf: num().nullable().describe('The past time shown (query asOf, Unix seconds): the surface, curve and 24 h reference served then, from the history store; null when live'),
  unavailable: z
    .object({ reason: z.string().describe('not-connected, warming-up or stale'), message: z.string().describe('The 503 message of the API') })
    .nullable().describe('Why the API answers 503 for the selection now (its reason and message), or null'),
  market: z
    .object({
      mode: z.enum(['live', 'simulated', 'replay', 'replica']).describe('live exchanges, embedded simulators, replayed recordings (historical data), or a Kafka replica'),
      finished: z.boolean().optional().describe('Replay: the recording has been replayed to its end'),
    })
    .describe('How the service gets its data'),
  surface: z.record(z.string(), z.unknown()).nullable().describe('Smiles (market mark/bid/ask IVs, fitted curve of each model) and the ATM term structure with 25D/10D RR and BF; null before the first calibration'),
  forwardCurve: z.record(z.string(), z.unknown()).nullable().describe('Listed forward points with their annualized basis, and the constant maturities'),
  funding: z.array(z.record(z.string(), z.unknown())).describe('Funding history (oldest first, at most 240 points) of each perpetual of the pair'),
  feeds: z.array(z.record(z.string(), z.unknown())).describe('Feed-status panel: per exchange connected, messages/s, last message age, reconnects, dropped, stale and warming-up pairs'),
});

const IvSummaryHistoryResult = z.object({
  source: z.string(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  volatilityModel: z.string(),
  interval: z.string().describe('One point per interval: 1m, 5m, 1h or 1d'),
  from: num().describe('Start of the range, Unix seconds'),
  to: num().describe('End of the range, Unix seconds'),
  points: z
    .array(
      z.object({
        observationTimestamp: num().describe('Observation time of the surface the figures are of, Unix seconds (the first stored in its interval)'),
        sequence: num().describe('Sequence of that surface'),
        constMat: z.enum(['1W', '2W', '1M', '2M', '3M', '6M', '9M']),
        expirationTimestamp: num().describe('observationTimestamp + the constant maturity, Unix seconds'),
        atmVol: numOrNull().describe('Forward ATM vol, fraction'),
        delta25Skew: numOrNull().describe('25-delta risk reversal vol(call) - vol(put), fraction'),
        delta10Skew: numOrNull().describe('10-delta risk reversal, fraction'),
        delta25Bfly: numOrNull().describe('25-delta butterfly (vol(call) + vol(put)) / 2 - ATM, fraction'),
        delta10Bfly: numOrNull().describe('10-delta butterfly, fraction'),
      }),
    )
    .describe('Oldest first; per time, the constant maturities in label order'),
});

const SurfaceHistoryResult = z.object({
  source: z.string(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  volatilityModel: z.string(),
  interval: z.string().describe('One surface per interval: 1m, 5m, 1h or 1d'),
  from: num().describe('Start of the range, Unix seconds'),
  to: num().describe('End of the range, Unix seconds'),
  surfaces: z
    .array(
      z.object({
        observationTimestamp: num().describe('Observation time of the surface, Unix seconds (the first stored in its interval)'),
        sequence: num().describe('Its sequence'),
        spotPrice: num().describe('Spot index, quote currency'),
        expiries: z
          .array(
            z.object({
              expirationTimestamp: num(),
              T: num().describe('Years to expiry from observationTimestamp, ACT/365'),
              forwardPrice: num().describe('The expiry\'s forward, quote currency'),
              parameters: z.record(z.string(), num()).describe('Model parameters (raw SVI a, b, rho, m, sigma; SABR alpha, beta, rho, nu; Vanna-Volga pillars)'),
            }),
          )
          .describe('The served expiries'),
      }),
    )
    .describe('Oldest first'),
});

/** Documentation of one route. */
export interface RouteDoc {
  readonly tags: readonly string[];
  readonly description?: string;
  /** The 200 response (zod; documentation only). */
  readonly response?: z.ZodType;
  /** Content type of the 200 response when not JSON. */
  readonly responseContentType?: string;
  /** Further content types the 200 response may have (a `format` query parameter chooses), each a string body. */
  readonly alsoContentTypes?: readonly string[];
  /** Error statuses the route can answer (besides 500). */
  readonly errors: readonly number[];
}

/** 401 only when API keys are configured; 429 under the rate limit (RATE_LIMIT_MAX, on by default). */
const MARKET_GET = [400, 401, 404, 429, 503];
const MARKET_POST = [400, 401, 404, 413, 415, 429, 503];
const BATCH50 = 'The body is a JSON array of 1 to 50 items; the answer is one result per item, in order, each carrying its instrumentId.';
const BATCH100 = 'riskScenarioInstruments holds 1 to 100 instruments; one result per instrument. Scenario k of -priceRangeSteps..priceRangeSteps shifts spot and forward by k*priceRange/priceRangeSteps (fraction); scenario 0 is the current market.';

/** Per-route documentation, keyed by `METHOD url`. */
export const ROUTE_DOCS: Readonly<Record<string, RouteDoc>> = {
  'GET /health': { tags: ['health'], description: 'The process is alive (always 200).', response: HealthResult, errors: [] },
  'GET /ready': {
    tags: ['health'],
    description: '200 once every configured (source, pair) has a calibrated SVI surface (an API replica: also once it has read its Kafka topics up to the end offsets it saw at start); 503 before, listing what is missing (same body).',
    response: ReadyResult,
    errors: [503],
  },
  'POST /api/v1/global/optionValuation/vanilla': {
    tags: ['valuation'],
    description: `Vanilla option and forward value and Greeks on the calibrated surface (Black-76 on the expiry's forward, r = 0). Figures are in base currency per the amount (inverse: coin; linear: quote figure / spot). Greek units: vega and vanna per 0.01 vol, volga per 0.01², theta and the other 1-day figures as V(T - 1 day) - V(T), rho per 1 % basis-rate move. ${BATCH50}`,
    response: z.array(VanillaResult),
    errors: MARKET_POST,
  },
  'POST /api/v1/global/optionValuation/euBarrier': {
    tags: ['valuation'],
    description: `European barrier (barrier observed at expiry) and digital options on DERIBIT (XCHG_A) BTC/USD and ETH/USD, SVI only, priced by static replication on the smile of the expiry. Percent figures per unit of nominal. ${BATCH50}`,
    response: z.array(EuBarrierResult),
    errors: MARKET_POST,
  },
  'POST /api/v1/global/data/iV/byStrike': {
    tags: ['implied volatility'],
    description: `Implied volatility of the calibrated surface at (expiry, strike); between listed expiries the surface is interpolated linearly in total variance. ${BATCH50}`,
    response: z.array(ByStrikeResult),
    errors: MARKET_POST,
  },
  'POST /api/v1/global/data/iV/byDelta': {
    tags: ['implied volatility'],
    description: `Implied volatility at the strike whose plain forward Black-76 CALL delta N(d1) equals the target (solved on the smile, no premium adjustment; 0.75 is the 25-delta put strike). ${BATCH50}`,
    response: z.array(ByDeltaResult),
    errors: MARKET_POST,
  },
  'GET /api/v1/global/data/forwardCurve': {
    tags: ['market data'],
    description:
      'Annualized basis yields value = (F / S - 1) / T (simple, ACT/365) of the listed expiries (fixedYields, not sorted by expiry) and of the constant maturities 1D, 1W, 2W, 1M, 2M, 3M, 6M, 9M, 12M read off the curve interpolated between listed expiries.',
    response: ForwardCurveResult,
    errors: MARKET_GET,
  },
  'GET /api/v1/global/data/fundingRates': {
    tags: ['market data'],
    description:
      'Funding rates of a perpetual settled in [startTime, endTime], newest first. At most 200 elements: with more points in the range the 200 latest are returned. startTime > endTime is a 400; an unknown instrumentId a 404 naming the known ones.',
    response: FundingRatesResult,
    errors: MARKET_GET,
  },
  'GET /api/v1/global/data/fundingInstruments': {
    tags: ['market data'],
    description: 'The funding instruments (perpetuals) of a source, with their funding interval and the span of history held.',
    response: FundingInstrumentsResult,
    errors: [400, 401, 429, 503],
  },
  'GET /api/v1/global/data/surface': {
    tags: ['market data'],
    description:
      'The calibrated surface of one (source, pair, model): listed expiries with their forward, ATM vol (K = F), model parameters and fit diagnostics. Additive to the spec; also the way to find the listed expiries.',
    response: SurfaceResult,
    errors: MARKET_GET,
  },
  'GET /api/v1/global/data/iVSummary': {
    tags: ['implied volatility'],
    description:
      'ATM vol, 25-delta and 10-delta risk reversals (vol(call) - vol(put) at that forward delta) and butterflies ((vol(call) + vol(put)) / 2 - ATM vol) of the listed expiries (not sorted by expiry) and of the constant maturities 1W..9M, with their 24 h absolute changes.',
    response: IvSummaryResult,
    errors: MARKET_GET,
  },
  'GET /api/v1/global/data/iVSummary/history': {
    tags: ['history'],
    description:
      'History of the iVSummary figures per constant maturity (ATM vol, 25/10-delta risk reversal and butterfly) of one (source, pair, model) over [from, to] (default: the last 24 h), one point per interval (the first stored surface of each), from the history store (docs/operations.md "History"). format=csv gives the same rows as CSV, format=parquet as a Parquet file. A range of more than 100 000 rows is a 400; without a history store, a 404.',
    response: IvSummaryHistoryResult,
    alsoContentTypes: ['text/csv', 'application/vnd.apache.parquet'],
    errors: MARKET_GET,
  },
  'GET /api/v1/global/data/surface/history': {
    tags: ['history'],
    description:
      'History of the calibrated surface of one (source, pair, model) over [from, to] (default: the last 24 h): one surface per interval (the first stored of each) with its expiries, forwards and model parameters. format=csv: one row per (surface, expiry), a column per parameter; format=parquet: the same rows as a Parquet file. More than 10 080 surfaces is a 400; without a history store, a 404.',
    response: SurfaceHistoryResult,
    alsoContentTypes: ['text/csv', 'application/vnd.apache.parquet'],
    errors: MARKET_GET,
  },
  'POST /api/v1/global/scenarios/riskScenarios': {
    tags: ['scenarios'],
    description: `Risk scenarios with a fixed absolute up/down volatility shift (volUp = vol + volRangeUp, volDown = vol - volRangeDown, floored at 0.0001). ${BATCH100}`,
    response: UpUnchDownResults,
    errors: MARKET_POST,
  },
  'POST /api/v1/global/scenarios/volRangeRiskScenarios': {
    tags: ['scenarios'],
    description: `Risk scenarios for a list of absolute volatility shifts (at most 16); every measure is a map keyed volScenario<n>, n the position of the shift in volShifts. ${BATCH100}`,
    response: VolRangeResults,
    errors: MARKET_POST,
  },
  'POST /api/v1/global/scenarios/advancedRiskScenarios': {
    tags: ['scenarios'],
    description: `Risk scenarios with a term-dependent volatility shock (the exchange portfolio-margin approach): vegaPower = shortTermVegaPower if daysToExpiry < 30, else longTermVegaPower; volUp = MAX(vol (1 + volRangeUp (30/daysToExpiry)^vegaPower), minVolForShockUp); volDown = MAX(vol (1 - volRangeDown (30/daysToExpiry)^vegaPower), 0); daysToExpiry = (expirationTimestamp - observationTimestamp) / 86400. Instruments have no priceMethod field. ${BATCH100}`,
    response: UpUnchDownResults,
    errors: MARKET_POST,
  },
  'GET /metrics': { tags: ['monitoring'], responseContentType: 'text/plain', errors: [401] },
  'GET /dashboard/api/state': {
    tags: ['monitoring'],
    description:
      'The live dashboard state of one (source, pair, model): smiles (mark, bid and ask IVs with call deltas, the fitted curve and fit diagnostics of every model held), ATM term structure with 25D/10D risk reversals and butterflies and their 24 h changes, constant maturities, forward curve, funding history (with periods per year) and feed status. With `asOf` (Unix seconds): the state as served then, from the history store (404 with the kept range when nothing was served then; 400 for a future time). Missing query fields default to the first expected pair (DERIBIT BTC/USD) and SVI. With API keys configured it needs header X-API-Key or the dashboard session cookie (set by logging in at /login).',
    response: DashboardStateResult,
    errors: [400, 401, 404, 503],
  },
  'GET /dashboard/api/stream': {
    tags: ['monitoring'],
    description:
      'Server-Sent Events (text/event-stream, gzip when accepted) of the same state: a `state` event (the full state and `focusExpiry`) at connection and when the selection or the models held change, then `patch` events with what changed (the focused expiry at every check, other smiles at most every 5 s, new funding points), and `feeds` events with the feed rows that changed. Checked every second. With API keys configured it needs header X-API-Key or the dashboard session cookie (set by logging in at /login); a stream opened with a session is closed when the session expires or logs out.',
    responseContentType: 'text/event-stream',
    errors: [400, 401],
  },
  'GET /api/v1/stream': {
    tags: ['streaming'],
    description:
      'Server-Sent Events twin of the WebSocket API (GET /api/v1/ws, JSON-RPC 2.0; docs/streaming.md, /asyncapi.json): the same channels (surface, iv_summary, iv, forward_curve, funding, status; aliases XCHG_A/B/C accepted), the same documents and sequence numbers (those of the REST answers and Kafka documents). Each event: `id: <channel>:<sequence>,...` (the last sequence of every channel of the stream) and `data: {"channel", "data"}`; the current document of each channel first. Reconnect with header Last-Event-ID (or ?lastEventId=) to get every update missed in order, or the current document with data.reset = true when the gap is older than what is kept (STREAM_RESUME_DEPTH). A client whose socket stays blocked past STREAM_STALL_MS gets `event: close` and the stream ends. Limits: STREAM_MAX_CONNECTIONS_PER_KEY (429), STREAM_MAX_SUBSCRIPTIONS. With API keys configured it needs header X-API-Key.',
    responseContentType: 'text/event-stream',
    errors: [400, 401, 429, 503],
  },
  'GET /dashboard/api/push-stats': {
    tags: ['monitoring'],
    description: 'The figures of the dashboard\'s "Streaming API" panel: open WebSocket and SSE connections, subscriptions per channel kind, and counters since start (docs/streaming.md "Metrics" has the same as Prometheus series). With API keys configured it needs header X-API-Key or the dashboard session cookie.',
    response: z.object({
      generatedAt: num().describe('Service clock, Unix seconds'),
      connections: z.object({ ws: num().describe('Open WebSocket connections'), sse: num().describe('Open SSE streams') }).describe('Open connections per transport'),
      subscriptions: z.record(z.string(), num()).describe('Subscriptions held, by channel kind'),
      messages: num().describe('Notifications written since start'),
      bytes: num().describe('Bytes of notifications written since start'),
      conflated: num().describe('Updates replaced by a newer one before being written, since start'),
      slowCloses: num().describe('Connections closed as slow consumers (4008), since start'),
      resumes: z.record(z.string(), num()).describe('Subscriptions with since / Last-Event-ID, by outcome'),
      rpcErrors: num().describe('JSON-RPC errors answered, since start'),
      rejected: num().describe('Connections refused or closed for a limit or a credential, since start'),
    }),
    errors: [401],
  },
  'GET /asyncapi.json': {
    tags: ['streaming'],
    description: 'The AsyncAPI 3.0.0 document of the streaming API: the WebSocket server /api/v1/ws (JSON-RPC 2.0 requests, responses, heartbeats) and the SSE server /api/v1/stream, one channel per channel kind with its notification payload.',
    response: z.object({ asyncapi: z.string().describe('AsyncAPI version, 3.0.0') }).catchall(z.unknown()).describe('AsyncAPI 3.0.0 document'),
    errors: [],
  },
  'GET /dashboard/api/history': {
    tags: ['monitoring'],
    description:
      'The 25 h history before now (or before `asOf`) of ATM vol and 25D/10D risk reversal and butterfly, one point per 5 min (oldest first), for one listed expiry (`expiry`) or one constant maturity (`constMat`) of the selection: read from the history store when there is one (the points GET iVSummary/history answers at interval 5m), else from the in-memory 24 h history. With `asOf` and no store: 404.',
    response: z.object({
      selection: z.object({ source: z.string(), baseCurrency: z.string(), quoteCurrency: z.string(), volatilityModel: z.string() }).nullable().describe('The (source, pair, model) of the series; null while nothing is known yet'),
      origin: z.enum(['store', 'memory']).optional().describe('Where the points come from: the history store, or the in-memory history'),
      from: num().optional().describe('Start of the range, Unix seconds'),
      to: num().optional().describe('End of the range (now, or asOf), Unix seconds'),
      intervalS: num().optional().describe('One point per this many seconds (the first of each)'),
      points: z.array(z.object({ t: num().describe('Observation time, Unix seconds'), atmVol: num().nullable(), delta25Skew: num().nullable(), delta25Bfly: num().nullable(), delta10Skew: num().nullable(), delta10Bfly: num().nullable() })),
    }),
    errors: [400, 404, 503],
  },
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

/**
 * Meaning, unit and rule of each field, by name (interface-spec.md field tables, decisions.md). Filled into
 * schema properties without a description of their own.
 */
export const FIELD_DESCRIPTIONS: Readonly<Record<string, string>> = {
  // ---- shared request fields
  instrumentId: 'Caller-defined unique ID of the item (1 to 200 characters), echoed in its result. For fundingRates: the id of a funding instrument (perpetual), e.g. BTC-PERPETUAL; see fundingInstruments.',
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
  riskScenarioInstruments: 'The portfolio: 1 to 100 instruments. One baseCurrency/quoteCurrency and one source per request is recommended.',
  riskScenarioParameters: 'Scenario parameters; every member listed for the endpoint is required.',
  priceRangeSteps: 'Number of steps of the price ladder on each side: an integer from 1 to 50. The result has 2*priceRangeSteps + 1 scenario items.',
  priceRange: 'Largest fractional forward-price shift of the ladder, 0 < priceRange < 1 (0.2 = +/-20 %).',
  volRangeUp: 'Upward volatility shift (riskScenarios: absolute, 0.54 with 0.05 gives 0.59; advancedRiskScenarios: relative shock size, see the formula). From 0 to 5.',
  volRangeDown: 'Downward volatility shift (riskScenarios: absolute, 0.54 with 0.05 gives 0.49; advancedRiskScenarios: relative shock size). From 0 to 5.',
  volShifts: 'Absolute volatility shifts, 1 to 16 numbers from -5 to 5. Shifts -0.2, 0, 0.2, 0.5 on a 60 % vol give scenario vols 0.4, 0.6, 0.8, 1.1 (floored at 0.0001).',
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
  ...Object.fromEntries(
    UUD_STEMS.flatMap((s) =>
      UUD.map((v) => [
        `${s}${v}`,
        `${MEASURE_TEXT[s]}, at the ${v === 'Up' ? 'up-shifted' : v === 'Down' ? 'down-shifted' : 'current market'} volatility.`,
      ]),
    ),
  ),
  // ---- health
  status: 'ok / ready / warming-up; per pair: ok, not-connected, warming-up or stale.',
  missing: 'The configured (source, pair)s without a calibrated surface yet, as SOURCE:BASE/QUOTE.',
  pairs: 'Every configured (source, pair) with its calibration state.',
  pair: 'The pair, BASE/QUOTE.',
  calibrated: 'Whether an SVI surface is calibrated.',
  // ---- dashboard query
  model: `Volatility model shown: ${VOLATILITY_MODELS.join(', ')}.`,
};
