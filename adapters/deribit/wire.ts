/**
 * zod schemas of the raw Deribit API v2 JSON-RPC messages this adapter handles.
 *
 * Wire units (converted in normalize.ts, never here): timestamps in MILLISECONDS; `mark_iv`,
 * `bid_iv`, `ask_iv` in PERCENT; option prices in the premium currency (coin for BTC/ETH inverse
 * options, USDC for linear ones); `underlying_price` = the expiry's forward; `index_price` = spot
 * index. Schemas are loose (unknown keys are kept) so that new exchange fields never break parsing.
 *
 * Sources (Deribit API v2 documentation, docs.deribit.com):
 * - Notifications: /articles/notifications (JSON-RPC `method: "subscription"`, `params.channel`, `params.data`)
 * - Ticker channel: /subscriptions/market-data/tickerinstrument_nameinterval (`ticker.{instrument_name}.{interval}`)
 * - Index channel: /subscriptions/market-data/deribit_price_indexindex_name (`deribit_price_index.{index_name}`)
 * - Heartbeats: /api-reference/session-management/public-set_heartbeat (server sends `heartbeat` with
 *   `params.type` `heartbeat` or `test_request`; answer the latter with public/test)
 * - public/test: /api-reference/supporting/public-test (`result.version`)
 * - public/subscribe: /api-reference/subscription-management/public-subscribe (`result`: subscribed channels)
 * - public/get_instruments: /api-reference/market-data/public-get_instruments
 * - public/get_funding_rate_history: /api-reference/market-data/public-get_funding_rate_history
 * - Errors: /articles/errors (`error.code`, `error.message`, optional `error.data`; 10028 too_many_requests)
 */
import { z } from 'zod';
import { fieldsOf } from '../shared/wireKit.js';

/** JSON numbers as zod 4 accepts them: finite (NaN and ±Infinity rejected). */
const num = z.number();
/** A numeric field that Deribit may print as null or omit. */
const optNum = num.nullable().optional();

/**
 * Fields common to every `ticker.{instrument_name}.{interval}` notification's `data`
 * (docs: subscriptions/market-data/tickerinstrument_nameinterval). `state` is one of open, closed,
 * settlement, delivered, inactive, locked, halted, archivized.
 */
export const TickerBaseSchema = z.looseObject({
  instrument_name: z.string(),
  /** Exchange time of the ticker, ms. */
  timestamp: num,
  state: z.string(),
  /** Mark price: coin for inverse options, quote currency for futures and linear options. */
  mark_price: num,
  /** Spot index of the instrument's currency pair, quote currency. */
  index_price: num,
  ...fieldsOf(optNum, ['best_bid_price', 'best_ask_price', 'best_bid_amount', 'best_ask_amount', 'last_price', 'open_interest', 'settlement_price']),
  /** A number, or the string "expired" once the instrument has expired. */
  estimated_delivery_price: z.union([num, z.string()]).nullable().optional(),
});
export type TickerBase = z.infer<typeof TickerBaseSchema>;

/** Greeks printed on option tickers: delta N(d1)-style, vega per 1 vol point, theta per day (docs: ticker channel). */
export const GreeksSchema = z.looseObject({
  delta: num,
  gamma: num,
  vega: num,
  theta: num,
  rho: num.optional(),
});

/**
 * Option ticker data: the base fields plus IVs (PERCENT; 0 means no bid/ask), `underlying_price`
 * (the forward the mark IV refers to), `underlying_index` (a future name, `SYN.*`, or `index_price`),
 * `interest_rate` and `greeks` (docs: ticker channel, "Options-specific data").
 */
export const OptionTickerSchema = TickerBaseSchema.extend({
  underlying_price: num,
  underlying_index: z.string().optional(),
  mark_iv: num,
  bid_iv: optNum,
  ask_iv: optNum,
  interest_rate: optNum,
  greeks: GreeksSchema.optional(),
});
export type OptionTicker = z.infer<typeof OptionTickerSchema>;

/**
 * Future/perpetual ticker data. Perpetuals add `current_funding` and `funding_8h` (fractions) and
 * `interest_value` (docs: ticker channel, "Perpetual-specific data").
 */
export const FutureTickerSchema = TickerBaseSchema.extend({
  ...fieldsOf(optNum, ['current_funding', 'funding_8h', 'interest_value']),
});
export type FutureTicker = z.infer<typeof FutureTickerSchema>;

/** `deribit_price_index.{index_name}` data: `{ index_name, price, timestamp }` (ms). */
export const PriceIndexDataSchema = z.looseObject({
  index_name: z.string(),
  price: num,
  timestamp: num,
});
export type PriceIndexData = z.infer<typeof PriceIndexDataSchema>;

/** A subscription notification: `{ jsonrpc, method: "subscription", params: { channel, data } }` (docs: articles/notifications). */
export const SubscriptionNotificationSchema = z.looseObject({
  jsonrpc: z.literal('2.0').optional(),
  method: z.literal('subscription'),
  params: z.looseObject({ channel: z.string(), data: z.unknown() }),
});
export type SubscriptionNotification = z.infer<typeof SubscriptionNotificationSchema>;

/**
 * Heartbeat notification after public/set_heartbeat: `params.type` `heartbeat` (keep-alive) or
 * `test_request` (must be answered with public/test or the server closes the connection).
 * Sample: test/fixtures/samples/deribit/nautilus__ws_heartbeat_test_request.json.
 */
export const HeartbeatSchema = z.looseObject({
  jsonrpc: z.literal('2.0').optional(),
  method: z.literal('heartbeat'),
  params: z.looseObject({ type: z.enum(['heartbeat', 'test_request']) }),
});
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

/** JSON-RPC error object (docs: articles/errors). */
export const RpcErrorObjectSchema = z.looseObject({
  code: num,
  message: z.string(),
  data: z.unknown().optional(),
});

/** Error response: `{ jsonrpc, id, error: { code, message, data? }, usIn, usOut, usDiff, testnet }`. */
export const RpcErrorResponseSchema = z.looseObject({
  jsonrpc: z.literal('2.0').optional(),
  id: z.union([num, z.string()]).nullable().optional(),
  error: RpcErrorObjectSchema,
});
export type RpcErrorResponse = z.infer<typeof RpcErrorResponseSchema>;

/** Success response envelope: `{ jsonrpc, id, result, usIn?, usOut?, usDiff?, testnet? }` (usIn/usOut in µs). */
export const RpcResultResponseSchema = z.looseObject({
  jsonrpc: z.literal('2.0').optional(),
  id: z.union([num, z.string()]).optional(),
  result: z.unknown(),
  usIn: num.optional(),
  usOut: num.optional(),
});
export type RpcResultResponse = z.infer<typeof RpcResultResponseSchema>;

/** public/subscribe and public/unsubscribe result: the list of channels now (un)subscribed. */
export const SubscribeResultSchema = z.array(z.string());

/** public/set_heartbeat result: `"ok"`. */
export const SetHeartbeatResultSchema = z.literal('ok');

/** public/test result: `{ version }`. */
export const TestResultSchema = z.looseObject({ version: z.string() });

/**
 * One instrument of a public/get_instruments result. Current listings carry `settlement_currency`,
 * `counter_currency`, `instrument_type` (`reversed` = inverse, `linear`) and `price_index`; the
 * 2021 format lacks them and prints the option premium currency as `quote_currency` (BTC).
 * `expiration_timestamp` is ms (year 3000 for perpetuals); `option_type` is `call`/`put`.
 */
export const InstrumentSchema = z.looseObject({
  instrument_name: z.string(),
  kind: z.string(),
  base_currency: z.string().optional(),
  quote_currency: z.string().optional(),
  counter_currency: z.string().optional(),
  settlement_currency: z.string().optional(),
  settlement_period: z.string().optional(),
  instrument_type: z.string().optional(),
  expiration_timestamp: num,
  creation_timestamp: num.optional(),
  strike: num.optional(),
  option_type: z.enum(['call', 'put']).optional(),
  is_active: z.boolean().optional(),
  state: z.string().optional(),
});
export type Instrument = z.infer<typeof InstrumentSchema>;

/**
 * One point of a public/get_funding_rate_history result: hourly, `timestamp` ms at the end of the
 * hour, `interest_1h` (the hour's funding rate, fraction), `interest_8h` (trailing 8 h), index
 * prices at the hour's end and start.
 */
export const FundingPointSchema = z.looseObject({
  timestamp: num,
  interest_1h: num,
  interest_8h: num.optional(),
  index_price: num.optional(),
  prev_index_price: num.optional(),
});
export type FundingPoint = z.infer<typeof FundingPointSchema>;

/** Build a JSON-RPC 2.0 request frame as Deribit expects it (docs: articles/json-rpc). */
export function rpcRequest(id: number, method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}
