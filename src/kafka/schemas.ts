/**
 * Versioned JSON documents the service publishes to Kafka, as zod schemas (the single source of truth; exported as
 * JSON Schema into docs/events.md by scripts/gen-events-doc.ts), plus the pure mappings cache object -> message value.
 *
 * Topics and keys: docs/spec/decisions.md "Events (Kafka)":
 * - `surface-snapshots` (compacted), key `SOURCE:BASE/QUOTE:MODEL`: {@link SurfaceSnapshotMessageSchema};
 * - `forward-curves` (compacted), key `SOURCE:BASE/QUOTE`: {@link ForwardCurveMessageSchema};
 * - `funding-updates` (kept by time), key `SOURCE:instrumentId`: {@link FundingUpdateMessageSchema};
 * - `surface-history` (kept 25 h, this project's addition for the 24 h snapshot history): the surface document
 *   without its quotes, at most one per key per history interval.
 *
 * Units (docs/conventions.md): every time is Unix SECONDS (fractional allowed), T in years ACT/365 from the
 * document's observationTimestamp, IVs are FRACTIONS, prices in the pair's quote currency, funding rates fractions
 * for the instrument's native interval. Versioning: `schemaVersion` is 1; within version 1 fields may be ADDED
 * (consumers must ignore unknown fields), nothing is removed or renamed (decisions.md "Versioning").
 */
import { z } from 'zod';
import { BASE_CURRENCIES, QUOTE_CURRENCIES, SOURCES } from '../domain/markets.js';
import { VOLATILITY_MODELS, type ForwardCurveSnapshot, type SurfaceSnapshot } from '../cache/snapshot.js';
import type { FundingRate } from '../domain/events.js';

/** The schema version every document of this module carries. */
export const SCHEMA_VERSION = 1 as const;

const source = z.enum(SOURCES).describe('Exchange wire value (DERIBIT, OKX, BYBIT)');
const baseCurrency = z.enum(BASE_CURRENCIES);
const quoteCurrency = z.enum(QUOTE_CURRENCIES);
const unixSeconds = z.number().describe('Unix time, seconds (fractional allowed)');
const positive = z.number().positive();
const schemaVersion = z.literal(SCHEMA_VERSION).describe('Document version; additive changes only within version 1');

/** One listed point of a forward curve. */
export const ForwardPointMessageSchema = z
  .object({
    expirationTimestamp: unixSeconds,
    T: z.number().describe('Years to expiry from observationTimestamp, ACT/365'),
    forward: positive.describe('Forward price, quote currency'),
    origin: z.enum(['option-underlying', 'future']).describe('option-underlying: the exchange\'s underlying price of that expiry\'s options; future: a dated future\'s mark price'),
  })
  .meta({ title: 'ForwardPoint' });

/** Fit diagnostics of one expiry (issue 4 may add fields: they pass through). */
export const FitDiagnosticsMessageSchema = z
  .looseObject({
    rmseVolPts: z.number().nonnegative().describe('RMSE of model vs mark IV, vol points (1 vol point = 0.01)'),
    maxErrorVolPts: z.number().nonnegative().describe('Largest absolute error, vol points'),
    quotesUsed: z.number().int().nonnegative().describe('Quotes the fit used'),
    butterflyFree: z.boolean().describe('True when the fitted smile passes the butterfly (density) check'),
    method: z.string().describe('How the fit was done, e.g. raw-svi, flat'),
    calibrationMs: z.number().nonnegative().describe('Wall-clock milliseconds of this expiry\'s fit'),
  })
  .meta({ title: 'FitDiagnostics' });

/** One market quote a smile fit used (optional in the document; the surface-history topic leaves them out). */
export const SmileQuoteMessageSchema = z
  .object({
    instrument: z.string().min(1),
    strike: positive.describe('Strike, quote currency'),
    optionType: z.enum(['C', 'P']),
    k: z.number().describe('Log-moneyness ln(K/F) against the expiry\'s forward'),
    markIv: positive.describe('Mark implied volatility, fraction'),
    bidIv: positive.nullable().describe('Bid IV, fraction; null when no bid'),
    askIv: positive.nullable().describe('Ask IV, fraction; null when no ask'),
  })
  .meta({ title: 'SmileQuote' });

/** One calibrated expiry of a surface document. */
export const ExpiryMessageSchema = z
  .object({
    expirationTimestamp: unixSeconds,
    T: z.number().positive().describe('Years to expiry from observationTimestamp, ACT/365'),
    forward: positive.describe('The expiry\'s forward, quote currency'),
    parameters: z.record(z.string(), z.number()).describe('Model parameters (raw SVI: a, b, rho, m, sigma)'),
    diagnostics: FitDiagnosticsMessageSchema,
    inputCount: z.number().int().nonnegative().describe('Market quotes given to this expiry\'s fit'),
    quotes: z.array(SmileQuoteMessageSchema).optional().describe('The quotes themselves (surface-snapshots only)'),
  })
  .meta({ title: 'SurfaceExpiry' });

/**
 * No-arbitrage status of one calibrated surface and its cumulative repair/rejection counts (issue 4). Only the two
 * verdicts are required; every other field (calendarFreeRaw, calendarGrid, ...) passes through as the calibrator
 * wrote it.
 */
export const SurfaceArbitrageMessageSchema = z
  .looseObject({
    butterflyFree: z.boolean().describe('Every served slice passes its butterfly check'),
    calendarFree: z.boolean().describe('The served surface is calendar-free on the grid'),
    counts: z
      .record(z.string(), z.number().int().nonnegative())
      .describe('Cumulative counts of this (source, pair, model) since the calibrator started: fits, repairs, rejections...'),
  })
  .meta({ title: 'SurfaceArbitrage' });

/** Value of a `surface-snapshots` (and `surface-history`) message: one recalibration of a (source, pair, model). */
export const SurfaceSnapshotMessageSchema = z
  .object({
    schemaVersion,
    source,
    baseCurrency,
    quoteCurrency,
    volatilityModel: z.enum(VOLATILITY_MODELS),
    observationTimestamp: unixSeconds.describe('Time of the newest market data used, Unix seconds (exchange time)'),
    spot: positive.describe('Spot index, quote currency'),
    sequence: z.number().int().positive().describe('Increments with every recalibration of this key; restarts at 1 when the calibrator restarts'),
    calibrationMs: z.number().nonnegative().describe('Wall-clock milliseconds of the whole surface calibration'),
    inputCount: z.number().int().nonnegative().describe('Market quotes given to the fits, all expiries'),
    forwardCurve: z.array(ForwardPointMessageSchema).describe('Listed forward points the surface reads forwards from'),
    expiries: z.array(ExpiryMessageSchema).min(1),
    arbitrage: SurfaceArbitrageMessageSchema.optional().describe('No-arbitrage status and repair counts of this model\'s surface'),
    skipped: z
      .array(z.object({ expirationTimestamp: unixSeconds, reason: z.string() }))
      .optional()
      .describe('Listed expiries this model could not serve, and why'),
  })
  .meta({ title: 'SurfaceSnapshotMessage', description: 'Topic surface-snapshots, key SOURCE:BASE/QUOTE:MODEL' });
export type SurfaceSnapshotMessage = z.infer<typeof SurfaceSnapshotMessageSchema>;

/** Value of a `forward-curves` message: one forward-curve update of a (source, pair). */
export const ForwardCurveMessageSchema = z
  .object({
    schemaVersion,
    source,
    baseCurrency,
    quoteCurrency,
    observationTimestamp: unixSeconds,
    spot: positive.describe('Spot index, quote currency'),
    sequence: z.number().int().positive(),
    points: z.array(ForwardPointMessageSchema),
  })
  .meta({ title: 'ForwardCurveMessage', description: 'Topic forward-curves, key SOURCE:BASE/QUOTE' });
export type ForwardCurveMessage = z.infer<typeof ForwardCurveMessageSchema>;

/** Value of a `funding-updates` message: one new settled funding-rate point. */
export const FundingUpdateMessageSchema = z
  .object({
    schemaVersion,
    source,
    instrumentId: z.string().min(1).describe('Funding instrument, e.g. BTC-PERPETUAL'),
    interest: z.number().describe('Funding rate for the native interval, fraction (may be negative)'),
    timestamp: unixSeconds.describe('Settlement time, Unix seconds'),
    baseCurrency,
    quoteCurrency,
    intervalHours: positive.describe('Native funding interval, hours (Deribit history: 1)'),
  })
  .meta({ title: 'FundingUpdateMessage', description: 'Topic funding-updates, key SOURCE:instrumentId' });
export type FundingUpdateMessage = z.infer<typeof FundingUpdateMessageSchema>;

/** The logical topics (names before KAFKA_TOPIC_PREFIX). */
export const TOPICS = {
  surfaces: 'surface-snapshots',
  forwardCurves: 'forward-curves',
  funding: 'funding-updates',
  surfaceHistory: 'surface-history',
} as const;
export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

/** Header `schema` value of each topic's documents, e.g. `surface-snapshot/1`. */
export const SCHEMA_HEADER: Readonly<Record<TopicName, string>> = {
  'surface-snapshots': `surface-snapshot/${SCHEMA_VERSION}`,
  'surface-history': `surface-snapshot/${SCHEMA_VERSION}`,
  'forward-curves': `forward-curve/${SCHEMA_VERSION}`,
  'funding-updates': `funding-update/${SCHEMA_VERSION}`,
};

/** Key of a funding message: `SOURCE:instrumentId` (decisions.md). */
export function fundingKey(source: string, instrumentId: string): string {
  return `${source}:${instrumentId}`;
}

/**
 * Map a cache surface snapshot to its message value (not validated here: the publisher validates).
 * @param forwardPoints the listed points of the forward curve the surface reads (`s.forwardCurve`): the
 *   ForwardCurveSnapshot of the same calibration holds them (the surface snapshot only holds the curve object)
 * @param includeQuotes carry each expiry's quotes (true for surface-snapshots, false for surface-history)
 */
export function surfaceToMessage(
  s: SurfaceSnapshot,
  forwardPoints: ForwardCurveSnapshot['points'],
  includeQuotes: boolean,
): SurfaceSnapshotMessage {
  // Optional parts of the snapshot (issue 4's no-arbitrage status; absent on hand-built snapshots).
  const extra = s as {
    readonly arbitrage?: SurfaceSnapshotMessage['arbitrage'];
    readonly skipped?: ReadonlyArray<{ readonly expirationTimestamp: number; readonly reason: string }>;
  };
  let inputCount = 0;
  const expiries = s.slices.map((sl) => {
    inputCount += sl.quotes.length;
    return {
      expirationTimestamp: sl.expirationTimestamp,
      T: sl.T,
      forward: sl.forward,
      parameters: { ...sl.params },
      diagnostics: { ...sl.fit },
      inputCount: sl.quotes.length,
      ...(includeQuotes ? { quotes: sl.quotes.map((q) => ({ ...q })) } : {}),
    };
  });
  return {
    schemaVersion: SCHEMA_VERSION,
    source: s.source,
    baseCurrency: s.pair.base,
    quoteCurrency: s.pair.quote,
    volatilityModel: s.model,
    observationTimestamp: s.observationTimestamp,
    spot: s.spot,
    sequence: s.sequence,
    calibrationMs: s.calibrationMs,
    inputCount,
    forwardCurve: forwardPoints.map((p) => ({ ...p })),
    expiries,
    ...(extra.arbitrage ? { arbitrage: structuredClone(extra.arbitrage) } : {}),
    ...(extra.skipped ? { skipped: extra.skipped.map((x) => ({ expirationTimestamp: x.expirationTimestamp, reason: x.reason })) } : {}),
  };
}

/** Map a cache forward-curve snapshot to its message value. */
export function forwardCurveToMessage(c: ForwardCurveSnapshot): ForwardCurveMessage {
  return {
    schemaVersion: SCHEMA_VERSION,
    source: c.source,
    baseCurrency: c.pair.base,
    quoteCurrency: c.pair.quote,
    observationTimestamp: c.observationTimestamp,
    spot: c.spot,
    sequence: c.sequence,
    points: c.points.map((p) => ({ ...p })),
  };
}

/** Map a normalized funding point to its message value. */
export function fundingToMessage(p: FundingRate): FundingUpdateMessage {
  return {
    schemaVersion: SCHEMA_VERSION,
    source: p.source,
    instrumentId: p.instrumentId,
    interest: p.interest,
    timestamp: p.timestamp,
    baseCurrency: p.base,
    quoteCurrency: p.quote,
    intervalHours: p.intervalHours,
  };
}

/** Map a funding message back to the normalized event (the replica and the restore feed the FundingStore with it). */
export function messageToFunding(m: FundingUpdateMessage): FundingRate {
  return {
    kind: 'funding',
    source: m.source,
    instrumentId: m.instrumentId,
    base: m.baseCurrency,
    quote: m.quoteCurrency,
    interest: m.interest,
    intervalHours: m.intervalHours,
    timestamp: m.timestamp,
  };
}

/**
 * The JSON Schemas (draft 2020-12) of the three documents, as docs/events.md prints them. `io: 'input'` leaves
 * objects open (no `additionalProperties: false`), matching the additive-only versioning rule.
 */
export function eventJsonSchemas(): Record<'surface-snapshots' | 'forward-curves' | 'funding-updates', unknown> {
  return {
    'surface-snapshots': z.toJSONSchema(SurfaceSnapshotMessageSchema, { io: 'input' }),
    'forward-curves': z.toJSONSchema(ForwardCurveMessageSchema, { io: 'input' }),
    'funding-updates': z.toJSONSchema(FundingUpdateMessageSchema, { io: 'input' }),
  };
}
