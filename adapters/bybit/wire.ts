/**
 * zod schemas of the raw Bybit API v5 public messages this adapter handles, and the request builders.
 *
 * Wire units (converted in normalize.ts, never here): market values arrive as JSON STRINGS, parsed
 * strictly by {@link bybitNum} (`""` = missing -> null); envelope times (`ts`, REST `time`) are JSON
 * numbers in MILLISECONDS, field times (`nextFundingTime`, `deliveryTime`, `launchTime`,
 * `fundingRateTimestamp`) are ms strings (a linear ticker's `deliveryTime` is ISO-8601 text, e.g.
 * `2025-12-26T08:00:00Z`); IVs (`markPriceIv`, `bidIv`, `askIv`) are FRACTIONS, 0 = no quote;
 * option `underlyingPrice` = the expiry's forward, `indexPrice` = spot index; option prices and
 * Greeks are in USDC (linear options). Objects are loose (unknown keys kept).
 *
 * Sources (Bybit V5 docs, https://bybit-exchange.github.io/docs/v5/, repo bybit-exchange/docs):
 * - Connect (/v5/ws/connect): public URLs `wss://stream.bybit.com/v5/public/{option|linear}`;
 *   heartbeat `{"req_id"?, "op": "ping"}`, recommended every 20 s; pong
 *   `{success, ret_msg: "pong", conn_id, op: "ping"}` (linear) or `{args: [ms], op: "pong"}` (option);
 *   subscribe `{req_id?, op: "subscribe", args: [topics]}`, answer `{success, ret_msg, conn_id,
 *   req_id?, op}` or, on the option stream, `{success, conn_id, data: {failTopics, successTopics},
 *   type: "COMMAND_RESP"}`. "Public channel - Args limits": for one public connection the `args`
 *   array cannot exceed 21,000 characters; options: up to 2000 args per connection; futures: no
 *   args limit; IP: no more than 500 connections in 5 minutes per domain.
 * - Ticker (/v5/websocket/public/ticker): topic `tickers.{symbol}`, push every 100 ms; linear and
 *   inverse tickers come as `snapshot` then `delta` ("If a response param is not found in the
 *   message, then its value has not changed"); option tickers are `snapshot` only.
 * - Instruments (/v5/market/instrument): GET /v5/market/instruments-info?category=option|linear
 *   &baseCoin=..&limit<=1000&cursor=.. -> `result.list`, `result.nextPageCursor`.
 * - Funding history (/v5/market/history-fund-rate): GET /v5/market/funding/history?category=linear
 *   &symbol=..&startTime&endTime&limit<=200 -> `result.list[{symbol, fundingRate, fundingRateTimestamp}]`
 *   (newest first; startTime alone is an error).
 * - REST envelope `{retCode: 0, retMsg: "OK", result, retExtInfo, time}`; non-zero retCode = error
 *   (10006: too many visits).
 */
import { z } from 'zod';
import { absentAsNull, decimalStringSchema, fieldsOf } from '../shared/wireKit.js';

/**
 * A numeric string field, parsed strictly: `""` -> null (missing); a plain decimal -> a finite
 * number; anything else (including a JSON number, whitespace, `NaN`, `Infinity`) fails validation
 * (adapters/shared/wireKit.ts, the same rule as OKX's).
 */
export const bybitNum = decimalStringSchema;

/** {@link bybitNum}, also accepting an absent field (-> null). */
export const bybitOptNum = absentAsNull(bybitNum);

/** A text field that may be absent (-> undefined). */
const optStr = z.string().optional();

/** A ticker push: `{topic, type: snapshot|delta, ts (ms), cs?, id?, data}` (docs: Ticker). */
export const TickerMessageSchema = z.looseObject({
  topic: z.string(),
  type: z.enum(['snapshot', 'delta']),
  ts: z.number(),
  cs: z.number().optional(),
  id: optStr,
  data: z.record(z.string(), z.unknown()),
});
export type TickerMessage = z.infer<typeof TickerMessageSchema>;

/**
 * Option ticker `data` (docs: Ticker, Option tab): `markPriceIv`, `bidIv`, `askIv` fractions (0 =
 * no quote on that side); `underlyingPrice` the expiry's forward; `indexPrice` the spot index;
 * `markPrice`, `bidPrice`, `askPrice` in USDC; `delta`, `gamma`, `vega`, `theta` as Bybit prints
 * them (vega per 1 vol point, theta per day, USDC).
 */
export const OptionTickerSchema = z.looseObject({
  symbol: z.string(),
  ...fieldsOf(bybitOptNum, ['bidPrice', 'bidSize', 'bidIv', 'askPrice', 'askSize', 'askIv', 'lastPrice', 'markPrice']),
  ...fieldsOf(bybitNum, ['indexPrice', 'markPriceIv', 'underlyingPrice']),
  ...fieldsOf(bybitOptNum, ['delta', 'gamma', 'vega', 'theta', 'predictedDeliveryPrice']),
});
export type OptionTicker = z.infer<typeof OptionTickerSchema>;

/**
 * A linear (or inverse) ticker record AFTER snapshot+delta merging (docs: Ticker, Linear/Inverse
 * tab). `fundingRate` ("" on futures) is the rate for the current interval, settled at
 * `nextFundingTime` (ms string); `fundingIntervalHour` the interval (absent in 2023 captures);
 * `deliveryTime` ISO text on futures.
 */
export const LinearTickerSchema = z.looseObject({
  symbol: z.string(),
  ...fieldsOf(bybitOptNum, ['markPrice', 'indexPrice', 'lastPrice', 'bid1Price', 'ask1Price', 'fundingRate', 'nextFundingTime', 'fundingIntervalHour']),
  deliveryTime: optStr,
  basis: bybitOptNum,
});
export type LinearTicker = z.infer<typeof LinearTickerSchema>;

/** Answer to an `op` request (subscribe, unsubscribe, ping) on a public stream (docs: Connect). */
export const OpResponseSchema = z.looseObject({
  op: z.string(),
  success: z.boolean().optional(),
  ret_msg: optStr,
  conn_id: optStr,
  req_id: optStr,
  args: z.array(z.unknown()).optional(),
});
export type OpResponse = z.infer<typeof OpResponseSchema>;

/** The option stream's subscription answer: `{success, conn_id, data: {failTopics, successTopics}, type: "COMMAND_RESP"}`. */
export const CommandRespSchema = z.looseObject({
  type: z.literal('COMMAND_RESP'),
  success: z.boolean().optional(),
  conn_id: optStr,
  data: z.looseObject({ failTopics: z.array(z.string()).optional(), successTopics: z.array(z.string()).optional() }).optional(),
});
export type CommandResp = z.infer<typeof CommandRespSchema>;

/** REST envelope: `{retCode, retMsg, result: {category?, list, nextPageCursor?}, time}` (retCode 0 = OK). */
export const BybitRestEnvelopeSchema = z.looseObject({
  retCode: z.number(),
  retMsg: optStr,
  result: z
    .looseObject({
      category: optStr,
      list: z.array(z.unknown()).optional(),
      nextPageCursor: optStr,
    })
    .optional(),
  time: z.number().optional(),
});
export type BybitRestEnvelope = z.infer<typeof BybitRestEnvelopeSchema>;

/**
 * One instruments-info item (option or linear). Options: `optionsType` Call/Put, `settleCoin`
 * USDC or USDT, `deliveryTime` ms. Linear: `contractType` LinearPerpetual / LinearFutures,
 * `settleCoin` USDT or USDC, `fundingInterval` minutes, `deliveryTime` "0" for perpetuals.
 * `status` Trading, PreLaunch, Delivering, Closed, ...
 */
export const BybitInstrumentSchema = z.looseObject({
  symbol: z.string(),
  status: optStr,
  baseCoin: z.string(),
  ...fieldsOf(optStr, ['quoteCoin', 'settleCoin', 'optionsType', 'contractType']),
  ...fieldsOf(bybitOptNum, ['launchTime', 'deliveryTime']),
  fundingInterval: z.number().optional(),
});
export type BybitInstrument = z.infer<typeof BybitInstrumentSchema>;

/** One funding-history item: `fundingRate` (fraction for the interval), `fundingRateTimestamp` (ms string). */
export const FundingHistoryItemSchema = z.looseObject({
  symbol: z.string(),
  ...fieldsOf(bybitNum, ['fundingRate', 'fundingRateTimestamp']),
});
export type FundingHistoryItem = z.infer<typeof FundingHistoryItemSchema>;

/** Bybit's cap on the `args` characters of one public connection (docs: Connect, "Args limits"). */
export const BYBIT_MAX_ARGS_CHARS = 21_000;
/** Bybit's cap on option args per connection (docs: Connect, "Args limits"). */
export const BYBIT_MAX_OPTION_ARGS = 2_000;
/** Bybit production public option stream (docs: Connect). */
export const BYBIT_OPTION_WS_URL = 'wss://stream.bybit.com/v5/public/option';
/** Bybit production public linear (USDT/USDC perpetual and futures) stream (docs: Connect). */
export const BYBIT_LINEAR_WS_URL = 'wss://stream.bybit.com/v5/public/linear';
/** Bybit production REST base. */
export const BYBIT_REST_URL = 'https://api.bybit.com';

/** Serialize one `{req_id?, op, args}` request frame (docs: Connect, "How to Subscribe to Topics"). */
export function bybitRequest(op: 'subscribe' | 'unsubscribe', args: readonly string[], reqId?: string): string {
  return JSON.stringify(reqId === undefined ? { op, args } : { req_id: reqId, op, args });
}

/** Characters an `args` array counts toward the 21,000 limit: the sum of its topic lengths. */
export function argsChars(topics: Iterable<string>): number {
  let n = 0;
  for (const t of topics) n += t.length;
  return n;
}

/**
 * Split topics into consecutive request batches of at most `maxArgs` topics and at most
 * `maxChars` topic characters each (order kept). A single topic longer than `maxChars` throws.
 */
export function batchBybitTopics(topics: readonly string[], maxArgs: number, maxChars: number = BYBIT_MAX_ARGS_CHARS): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let chars = 0;
  for (const t of topics) {
    if (t.length > maxChars) throw new RangeError(`Bybit topic ${t.slice(0, 60)} alone exceeds ${maxChars} characters`);
    if (cur.length > 0 && (cur.length >= maxArgs || chars + t.length > maxChars)) {
      out.push(cur);
      cur = [];
      chars = 0;
    }
    cur.push(t);
    chars += t.length;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
