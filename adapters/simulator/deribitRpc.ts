/**
 * The JSON-RPC methods of the Deribit simulator (deribitServer.ts), API v2 (docs.deribit.com, v2.1.1): their
 * parameter checks and answers. Errors use Deribit's JSON-RPC shape `{code, message, data: {reason, param}}` (e.g.
 * -32602 "Invalid params", gocryptotrader issue 2099), thrown as {@link RpcFailure}.
 */
import type { WebSocket } from 'ws';
import type { DeribitChains, SimInstrument } from './chains.js';
import { roundTo } from './decimals.js';
import { indexData, type Json, type RpcError } from './deribitMessages.js';
import type { FaultSwitches } from './faults.js';
import type { Market, Underlying } from './market.js';

/** The price indexes: name -> underlying and decimals. */
export const INDEXES: Readonly<Record<string, { readonly u: Underlying; readonly dp: number }>> = {
  btc_usd: { u: 'BTC', dp: 2 },
  eth_usd: { u: 'ETH', dp: 2 },
  sol_usdc: { u: 'SOL', dp: 4 },
  xrp_usdc: { u: 'XRP', dp: 4 },
};
const CURRENCIES = ['BTC', 'ETH', 'USDC', 'USDT', 'EURR', 'any'];
const KINDS = ['future', 'option', 'spot', 'future_combo', 'option_combo'];
const VERSION = '1.2.26';

/** Deribit's errors without parameters. */
export const ERR = {
  parse: { code: -32700, message: 'Parse error' },
  request: { code: -32600, message: 'Invalid Request' },
  method: { code: -32601, message: 'Method not found' },
  rejected: { code: 10028, message: 'too_many_requests' },
  raw: { code: 13778, message: 'raw_subscriptions_not_available_for_unauthorized' },
} as const satisfies Record<string, RpcError>;

/** Error -32602 "Invalid params" naming the parameter and the reason. */
export function invalid(param: string, reason: string): RpcError {
  return { code: -32602, message: 'Invalid params', data: { reason, param } };
}

/** A method's failure, answered with its RPC error. */
export class RpcFailure extends Error {
  constructor(readonly rpc: RpcError) {
    super(rpc.message);
  }
}

/** One connection of the Deribit simulator. */
export interface DeribitConn {
  readonly ws: WebSocket;
  readonly channels: Set<string>;
  hbTimer: NodeJS.Timeout | null;
  awaitingTest: boolean;
}

/** What the methods use of the simulator. */
export interface DeribitRpcTarget {
  readonly market: Market;
  readonly chains: DeribitChains;
  readonly switches: FaultSwitches;
  /** Refuse `.raw` channels with error 13778. */
  readonly rawRequiresAuth: boolean;
  /** The ticker of an instrument at nowMs (Unix ms). */
  tickerData(inst: SimInstrument, nowMs: number): Json;
  /** Send a test_request every intervalS seconds, closing the connection when one goes unanswered. */
  startHeartbeat(c: DeribitConn, intervalS: number): void;
  /** Subscribe the known channels of the list; returns them (unknown ones are left out, as Deribit does). */
  subscribeChannels(c: DeribitConn, channels: readonly string[]): string[];
  /** Unsubscribe one channel; false when the connection did not hold it. */
  removeSub(c: DeribitConn, ch: string): boolean;
}

/** A method: the connection and the request's params to the result. @throws RpcFailure */
export type RpcMethod = (c: DeribitConn, params: Json) => unknown;

function str(params: Json, name: string, required: boolean): string | undefined {
  const v = params[name];
  if (v === undefined) {
    if (required) throw new RpcFailure(invalid(name, 'required'));
    return undefined;
  }
  if (typeof v !== 'string') throw new RpcFailure(invalid(name, 'must be a string'));
  return v;
}

function num(params: Json, name: string): number {
  const v = params[name];
  if (v === undefined) throw new RpcFailure(invalid(name, 'required'));
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new RpcFailure(invalid(name, 'must be a number'));
  return n;
}

function channelList(params: Json): string[] {
  const v = params.channels;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new RpcFailure(invalid('channels', 'value must be a list'));
  return v as string[];
}

/** public/get_instruments: currency (or any), optional kind and expired (closed instruments). */
function getInstruments(chains: DeribitChains, params: Json): unknown {
  const currency = str(params, 'currency', true)!;
  if (!CURRENCIES.includes(currency)) throw new RpcFailure(invalid('currency', `must be one of the following: ${CURRENCIES.join(', ')}`));
  const kind = str(params, 'kind', false);
  if (kind !== undefined && !KINDS.includes(kind)) throw new RpcFailure(invalid('kind', `must be one of the following: ${KINDS.join(', ')}`));
  const expired = params.expired;
  if (expired !== undefined && typeof expired !== 'boolean' && expired !== 'true' && expired !== 'false') {
    throw new RpcFailure(invalid('expired', 'must be a boolean'));
  }
  const wantExpired = expired === true || expired === 'true';
  const list = wantExpired ? chains.expired().map((i) => ({ ...i, json: { ...i.json, is_active: false, state: 'closed' } })) : chains.all();
  return list.filter((i) => (currency === 'any' || i.product.currency === currency) && (kind === undefined || i.kind === kind)).map((i) => i.json);
}

/** public/get_funding_rate_history: a perpetual's funding points in [start_timestamp, end_timestamp] (ms). */
function getFundingRateHistory(x: DeribitRpcTarget, params: Json): unknown {
  const name = str(params, 'instrument_name', true)!;
  const inst = x.chains.get(name);
  if (!inst || !inst.perpetual) throw new RpcFailure(invalid('instrument_name', 'must be a perpetual instrument'));
  const start = num(params, 'start_timestamp');
  const end = num(params, 'end_timestamp');
  if (start > end) throw new RpcFailure(invalid('start_timestamp', 'must be less than end_timestamp'));
  const dp = inst.product.priceDecimals;
  return x.market.fundingHistory(inst.underlying, start, end).map((p) => ({
    timestamp: p.timestamp,
    index_price: roundTo(p.index_price, dp),
    prev_index_price: roundTo(p.prev_index_price, dp),
    interest_8h: p.interest_8h,
    interest_1h: p.interest_1h,
  }));
}

/** The market-data methods: instruments, index price, ticker, funding history. */
function marketDataMethods(x: DeribitRpcTarget): Record<string, RpcMethod> {
  return {
    'public/get_instruments': (_c, params) => getInstruments(x.chains, params),
    'public/get_index_price': (_c, params) => {
      const name = str(params, 'index_name', true)!;
      const idx = INDEXES[name];
      if (!idx) throw new RpcFailure(invalid('index_name', 'wrong format'));
      const price = indexData(x.market, name, idx.u, idx.dp, x.market.now).price;
      return { index_price: price, estimated_delivery_price: price };
    },
    'public/ticker': (_c, params) => {
      const name = str(params, 'instrument_name', true)!;
      const inst = x.chains.get(name);
      if (!inst) throw new RpcFailure(invalid('instrument_name', 'instrument not found'));
      return x.tickerData(inst, x.market.now);
    },
    'public/get_funding_rate_history': (_c, params) => getFundingRateHistory(x, params),
  };
}

/** The session methods: test, hello, time, heartbeat, subscriptions. */
function sessionMethods(x: DeribitRpcTarget): Record<string, RpcMethod> {
  return {
    'public/test': (c) => {
      c.awaitingTest = false;
      return { version: VERSION };
    },
    'public/hello': () => ({ version: VERSION }),
    'public/get_time': () => x.market.now,
    'public/set_heartbeat': (c, params) => {
      const interval = num(params, 'interval');
      if (interval < 10) throw new RpcFailure(invalid('interval', 'must be greater than or equal to 10'));
      x.startHeartbeat(c, interval);
      return 'ok';
    },
    'public/disable_heartbeat': (c) => {
      if (c.hbTimer) clearInterval(c.hbTimer);
      c.hbTimer = null;
      c.awaitingTest = false;
      return 'ok';
    },
    'public/subscribe': (c, params) => {
      const channels = channelList(params);
      if (x.switches.rejecting) throw new RpcFailure(ERR.rejected);
      if (x.rawRequiresAuth && channels.some((ch) => ch.endsWith('.raw'))) throw new RpcFailure(ERR.raw);
      return x.subscribeChannels(c, channels);
    },
    'public/unsubscribe': (c, params) => channelList(params).filter((ch) => x.removeSub(c, ch)),
    'public/unsubscribe_all': (c) => {
      for (const ch of [...c.channels]) x.removeSub(c, ch);
      return 'ok';
    },
  };
}

/** Every method of the simulator by name (without the `/api/v2/` prefix). */
export function deribitMethods(x: DeribitRpcTarget): Record<string, RpcMethod> {
  return { ...sessionMethods(x), ...marketDataMethods(x) };
}
