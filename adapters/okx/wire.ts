/**
 * zod schemas of the raw OKX API v5 public messages this adapter handles, and the request builders.
 *
 * Wire units (converted in normalize.ts, never here): EVERY value arrives as a JSON string;
 * {@link okxNum} parses it strictly (a plain decimal; `""` = missing -> null; anything else, e.g.
 * `"abc"`, `" 1"`, `"0x10"`, `"NaN"`, is a schema failure). Timestamps are Unix MILLISECONDS
 * (`ts`, `fundingTime`, `expTime`...); IVs (`markVol`, `bidVol`, `askVol`) are already FRACTIONS;
 * `fwdPx` is the expiry's forward; `idxPx` the spot index. Objects are loose (unknown keys kept) so
 * that new exchange fields never break parsing.
 *
 * Sources (OKX API v5 docs, https://www.okx.com/docs-v5/en/, mirrored in qiuham/crypto-api-docs):
 * - Subscribe / events: #overview-websocket-subscribe (`{id?, op, args:[{channel, instId|instFamily}]}`;
 *   answer `{event: subscribe|unsubscribe|error, arg?, code?, msg?, connId}`); the total length of
 *   the channels of one request cannot exceed 64 KB.
 * - Connect: #overview-websocket-connect (480 subscribe/unsubscribe/login requests per hour per
 *   connection; the connection breaks after 30 s without data; send the text `ping` after N < 30 s
 *   of silence and expect `pong`).
 * - Notice: #overview-websocket-notification (`{event: "notice", code: "64008", msg}` 60 s before a
 *   service-upgrade disconnect).
 * - Option summary: #public-data-websocket-option-summary-channel (`opt-summary`, arg `instFamily`).
 * - Index tickers: #public-data-websocket-index-tickers-channel (`index-tickers`, arg `instId` = `BTC-USD`).
 * - Mark price: #public-data-websocket-mark-price-channel (every 200 ms on change, else every 10 s).
 * - Tickers: #order-book-trading-market-data-ws-tickers-channel.
 * - Funding rate: #public-data-websocket-funding-rate-channel (pushed every 30-90 s; current format
 *   adds `settState`, `settFundingRate`, `nextFundingTime`, `method: current_period`).
 * - REST envelope `{code: "0", msg, data: [...]}`; GET /api/v5/public/instruments
 *   (#public-data-rest-api-get-instruments, 20 requests / 2 s per IP + instType) and
 *   GET /api/v5/public/funding-rate-history (#public-data-rest-api-get-funding-rate-history,
 *   10 requests / 2 s per IP + instId, `limit` <= 400, `after` = records older than a fundingTime).
 * - Error codes: #error-code-websocket-public (60012 invalid request, 60014 too frequent, 64008 ...).
 */
import { z } from 'zod';
import { absentAsNull, decimalStringSchema, fieldsOf } from '../shared/wireKit.js';

/**
 * A numeric string field, parsed strictly: `""` -> null (missing, OKX's convention); a plain
 * decimal as OKX prints it (`-0.0004270396398519`, `64280`, `1785870839964`; an exponent is
 * tolerated) -> a finite number; anything else (including an actual JSON number, whitespace, `NaN`,
 * `Infinity`, hex) fails validation (adapters/shared/wireKit.ts, the same rule as Bybit's).
 */
export const okxNum = decimalStringSchema;

/** {@link okxNum}, also accepting an absent field (-> null). */
export const okxOptNum = absentAsNull(okxNum);

/** A text field that may be absent (-> undefined). */
const optStr = z.string().optional();

/**
 * Parse one OKX numeric string outside a schema: null for `""`/absent, a finite number for a plain
 * decimal, `undefined` for anything invalid (the caller decides: drop or ignore).
 */
export function parseOkxNumber(v: unknown): number | null | undefined {
  if (v === undefined || v === '') return null;
  const r = okxNum.safeParse(v);
  return r.success ? r.data : undefined;
}

/** `arg` of a push or of an event answer: the channel and its instrument selector. */
export const OkxArgSchema = z.looseObject({
  channel: z.string(),
  instId: optStr,
  instFamily: optStr,
  /** Old (2021) selector of opt-summary, replaced by `instFamily` (error 64000). */
  uly: optStr,
  instType: optStr,
});
export type OkxArg = z.infer<typeof OkxArgSchema>;

/** A data push: `{ arg, data: [ ... ], action? }` (docs: every public channel's "Push data parameters"). */
export const OkxPushSchema = z.looseObject({
  arg: OkxArgSchema,
  data: z.array(z.unknown()),
  action: optStr,
});
export type OkxPush = z.infer<typeof OkxPushSchema>;

/**
 * An event answer: `subscribe`/`unsubscribe` acknowledgements, `error` (`code`, `msg`) and
 * `notice` (code 64008: the connection will soon be closed for a service upgrade).
 */
export const OkxEventSchema = z.looseObject({
  event: z.string(),
  id: optStr,
  arg: OkxArgSchema.optional(),
  code: optStr,
  msg: optStr,
  connId: optStr,
});
export type OkxEvent = z.infer<typeof OkxEventSchema>;

/**
 * One `opt-summary` item (docs: option summary channel). Plain `delta`/`gamma`/`vega`/`theta` are
 * OKX's coin-denominated ("PA") Greeks; `deltaBS`/`gammaBS`/`vegaBS`/`thetaBS` are Black-Scholes
 * Greeks in USD (vega per 1 vol point, theta per day). `fwdPx` (the forward) and `volLv` were added
 * after 2021: the 2021 captures lack them.
 */
export const OptSummarySchema = z.looseObject({
  instType: optStr,
  instId: z.string(),
  uly: optStr,
  ...fieldsOf(okxOptNum, ['delta', 'gamma', 'vega', 'theta', 'deltaBS', 'gammaBS', 'vegaBS', 'thetaBS', 'lever']),
  markVol: okxNum,
  ...fieldsOf(okxOptNum, ['bidVol', 'askVol', 'realVol', 'volLv', 'fwdPx']),
  ts: okxNum,
});
export type OptSummary = z.infer<typeof OptSummarySchema>;

/** One `index-tickers` item: `instId` is the index (`BTC-USD`), `idxPx` its price (docs: index tickers channel). */
export const IndexTickerSchema = z.looseObject({
  instId: z.string(),
  ...fieldsOf(okxNum, ['idxPx', 'ts']),
});
export type IndexTicker = z.infer<typeof IndexTickerSchema>;

/** One `mark-price` item (docs: mark price channel). */
export const MarkPriceSchema = z.looseObject({
  instType: optStr,
  instId: z.string(),
  markPx: okxNum,
  ts: okxNum,
});
export type MarkPrice = z.infer<typeof MarkPriceSchema>;

/** One `tickers` item: last trade and best bid/ask; empty strings when a side is empty (docs: tickers channel). */
export const TickerSchema = z.looseObject({
  instType: optStr,
  instId: z.string(),
  last: okxOptNum,
  bidPx: okxOptNum,
  askPx: okxOptNum,
  ts: okxNum,
});
export type Ticker = z.infer<typeof TickerSchema>;

/**
 * One `funding-rate` item. `fundingRate` is the current period's rate, settled at `fundingTime`;
 * `nextFundingTime - fundingTime` is the interval (normally 8 h; OKX may shorten it). Current format
 * (method `current_period`): `settState` `settled` means `settFundingRate` is the rate used by the
 * PREVIOUS settlement (at `prevFundingTime` when printed, else one interval before `fundingTime`);
 * `processing` means that settlement is under way. The 2021-2022 format (method `next_period`) has
 * only `fundingRate`, `fundingTime`, `nextFundingRate` and no `ts`.
 */
export const FundingRatePushSchema = z.looseObject({
  instType: optStr,
  instId: z.string(),
  method: optStr,
  formulaType: optStr,
  ...fieldsOf(okxNum, ['fundingRate', 'fundingTime']),
  ...fieldsOf(okxOptNum, ['nextFundingRate', 'nextFundingTime', 'prevFundingTime']),
  settState: optStr,
  ...fieldsOf(okxOptNum, ['settFundingRate', 'premium', 'interestRate', 'ts']),
});
export type FundingRatePush = z.infer<typeof FundingRatePushSchema>;

/** REST envelope: `{ code: "0", msg: "", data: [...] }`; a non-"0" code is an error. */
export const OkxRestEnvelopeSchema = z.looseObject({
  code: z.string(),
  msg: optStr,
  data: z.array(z.unknown()).optional(),
});
export type OkxRestEnvelope = z.infer<typeof OkxRestEnvelopeSchema>;

/**
 * One item of GET /api/v5/public/instruments. `expTime` (ms) is the delivery/exercise time
 * (08:00 UTC); `stk` the strike; `optType` `C`/`P`; `ctType` `inverse`/`linear` (futures, swaps);
 * `settleCcy` the settlement coin; `state` `live`, `suspend`, `preopen`, ... ; `listTime` ms.
 */
export const OkxInstrumentSchema = z.looseObject({
  instType: z.string(),
  instId: z.string(),
  instFamily: optStr,
  uly: optStr,
  expTime: okxOptNum,
  listTime: okxOptNum,
  stk: okxOptNum,
  optType: optStr,
  ctType: optStr,
  settleCcy: optStr,
  state: optStr,
});
export type OkxInstrument = z.infer<typeof OkxInstrumentSchema>;

/**
 * One item of GET /api/v5/public/funding-rate-history: `fundingTime` (ms) the settlement,
 * `fundingRate` ("predicted") and `realizedRate` ("actual") for that interval, fractions.
 */
export const FundingHistoryItemSchema = z.looseObject({
  instId: z.string(),
  instType: optStr,
  ...fieldsOf(okxNum, ['fundingTime', 'fundingRate']),
  realizedRate: okxOptNum,
  method: optStr,
  formulaType: optStr,
});
export type FundingHistoryItem = z.infer<typeof FundingHistoryItemSchema>;

/** One subscription argument as sent: `{channel, instId}` or `{channel, instFamily}`. */
export interface OkxSubscriptionArg {
  readonly channel: string;
  readonly instId?: string;
  readonly instFamily?: string;
}

/** Stable key of a subscription argument, e.g. `opt-summary|BTC-USD` (channel|instId-or-instFamily). */
export function argKey(a: { channel: string; instId?: string | undefined; instFamily?: string | undefined }): string {
  return `${a.channel}|${a.instId ?? a.instFamily ?? ''}`;
}

/** OKX's cap on one subscribe request, bytes (docs: "the total length of multiple channels cannot exceed 64 KB"). */
export const OKX_MAX_REQUEST_BYTES = 64 * 1024;
/** subscribe/unsubscribe/login requests allowed per connection per hour (docs: Connect). */
export const OKX_REQUESTS_PER_HOUR = 480;
/** OKX production public WebSocket. */
export const OKX_WS_URL = 'wss://ws.okx.com:8443/ws/v5/public';
/** OKX production REST base. */
export const OKX_REST_URL = 'https://www.okx.com';

/** Serialize one `{id, op, args}` request frame. `id`: 1-32 alphanumerics (docs: Subscribe). */
export function okxRequest(op: 'subscribe' | 'unsubscribe', args: readonly OkxSubscriptionArg[], id?: string): string {
  return JSON.stringify(id === undefined ? { op, args } : { id, op, args });
}

/**
 * Split `args` into request frames each at most `maxBytes` UTF-8 bytes long (greedy, order kept).
 * `id(i)` gives the i-th frame's id. An argument that cannot fit alone throws a RangeError.
 */
export function batchOkxRequests(
  op: 'subscribe' | 'unsubscribe',
  args: readonly OkxSubscriptionArg[],
  maxBytes: number = OKX_MAX_REQUEST_BYTES,
  id: (i: number) => string | undefined = () => undefined,
): { frames: string[]; batches: OkxSubscriptionArg[][] } {
  const frames: string[] = [];
  const batches: OkxSubscriptionArg[][] = [];
  let cur: OkxSubscriptionArg[] = [];
  let curBytes = 0;
  // frame bytes = empty frame + sum of argument bytes + (n - 1) commas
  const empty = (): number => Buffer.byteLength(okxRequest(op, [], id(batches.length)), 'utf8');
  let base = empty();
  for (const a of args) {
    const b = Buffer.byteLength(JSON.stringify(a), 'utf8');
    if (base + b > maxBytes) throw new RangeError(`OKX ${op} argument ${argKey(a)} alone exceeds ${maxBytes} bytes`);
    const withA = base + curBytes + b + (cur.length > 0 ? 1 : 0);
    if (withA > maxBytes && cur.length > 0) {
      frames.push(okxRequest(op, cur, id(batches.length)));
      batches.push(cur);
      base = empty();
      cur = [];
      curBytes = 0;
      if (base + b > maxBytes) throw new RangeError(`OKX ${op} argument ${argKey(a)} alone exceeds ${maxBytes} bytes`);
    }
    curBytes += b + (cur.length > 0 ? 1 : 0);
    cur.push(a);
  }
  if (cur.length > 0) {
    frames.push(okxRequest(op, cur, id(batches.length)));
    batches.push(cur);
  }
  return { frames, batches };
}
