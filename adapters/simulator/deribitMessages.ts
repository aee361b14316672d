/**
 * Deribit API v2 message bodies built from the simulated market: ticker data of options,
 * futures and perpetuals, index data, and the JSON-RPC envelopes.
 *
 * Shapes and units follow the recorded messages in test/fixtures/deribit/:
 * - option ticker (crypto-msg-parser__ticker-notifications_2022-06.jsonl, BTC-30SEP22-60000-C):
 *   `underlying_price` = that expiry's forward, `underlying_index` = the future of the expiry or
 *   `SYN.<prefix>-<date>` (schepal 2020 chain) for inverse options, `index_price` for linear ones
 *   (tardis-node MATIC_USDC-9MAR24-1d02-C); `mark_iv`, `bid_iv`, `ask_iv` in PERCENT, 0 meaning
 *   no quote; `mark_price`, best prices in coin for inverse options (Black-76 USD price / F), in
 *   USDC for linear ones; greeks in USD per {@link black76Greeks}; `interest_rate` 0; times ms;
 * - future/perpetual ticker (crypto-msg-parser BTC-30SEP22, nautilus BTC-PERPETUAL 2025-12-12):
 *   `funding_8h`, `current_funding`, `interest_value` on perpetuals only;
 * - `deribit_price_index.{index_name}` data `{index_name, price, timestamp}` (docs.deribit.com);
 * - expired option final ticker (tardis-node BTC-8JUN20-8750-P): `state` closed, `delivery_price`,
 *   `estimated_delivery_price` "expired".
 */
import { black76Greeks, black76ImpliedVol, black76Price } from './black76.js';
import type { SimInstrument } from './chains.js';
import { deribitDateCode } from './chains.js';
import type { Market } from './market.js';
import { MS_PER_YEAR } from './market.js';
import { roundTo } from './decimals.js';
import { hash01, type Rng } from './rng.js';

/** A plain JSON object. */
export type Json = Record<string, unknown>;


/** Deribit option tick at a price: tick_size below the first step's above_price, else the step's. */
function tickAt(inst: SimInstrument, price: number): number {
  const c = inst.product.option;
  let t = c.tick_size;
  for (const s of c.tick_size_steps) if (price > s.above_price) t = s.tick_size;
  return t;
}

function floorTo(x: number, tick: number): number {
  return roundTo(Math.floor(x / tick + 1e-9) * tick, 10);
}

function ceilTo(x: number, tick: number): number {
  return roundTo(Math.ceil(x / tick - 1e-9) * tick, 10);
}

/** Time to expiry in years, ACT/365, from Unix ms. */
export function yearsTo(expiryMs: number, nowMs: number): number {
  return (expiryMs - nowMs) / MS_PER_YEAR;
}

/** The forward an option is marked on and its Deribit `underlying_index`. */
export function optionUnderlying(market: Market, inst: SimInstrument, nowMs: number): { readonly F: number; readonly index: string } {
  const p = inst.product;
  if (p.linear) return { F: roundTo(market.spot(inst.underlying), p.priceDecimals), index: 'index_price' };
  const T = yearsTo(inst.expiryMs, nowMs);
  return {
    F: roundTo(market.forward(inst.underlying, T), p.priceDecimals),
    index: inst.futureName ?? `SYN.${p.prefix}-${deribitDateCode(inst.expiryMs)}`,
  };
}

/** Stable per-instrument statistics (volume, open interest), derived from the name only. */
function instrumentStats(name: string, nearness: number): { readonly volume: number; readonly oi: number; readonly change: number } {
  const a = hash01(`vol:${name}`);
  const b = hash01(`oi:${name}`);
  const c = hash01(`chg:${name}`);
  const volume = a < 0.45 ? 0 : roundTo(((a - 0.45) * 120 * nearness) / 0.55, 1);
  return { volume, oi: roundTo(b * 900 * nearness, 1), change: roundTo((c - 0.5) * 40, 4) };
}

/** Mutable per-instrument memory of the ticker builder (settlement price at first sight). */
export type SettlementMemory = Map<string, number>;

/**
 * Data of a `ticker.{option}.{interval}` notification (also the public/ticker result).
 * mark_iv is the market's implied vol rounded to 0.01 percent; mark_price is Black-76 at that
 * mark_iv on the rounded forward, divided by F for inverse options, rounded to the product's
 * decimals; bid/ask are Black-76 at mark_iv -/+ a half-spread, rounded down/up to the tick, and
 * bid_iv/ask_iv are the implied vols of those rounded prices (so bid_iv <= mark_iv <= ask_iv).
 */
export function optionTicker(market: Market, inst: SimInstrument, nowMs: number, rng: Rng, memory: SettlementMemory): Json {
  const p = inst.product;
  const K = inst.strike!;
  const type = inst.optionType!;
  const T = Math.max(yearsTo(inst.expiryMs, nowMs), 1e-9);
  const index = roundTo(market.spot(inst.underlying), p.priceDecimals);
  const { F, index: underlyingIndex } = optionUnderlying(market, inst, nowMs);
  const k = Math.log(K / F);
  const markIv = roundTo(market.markIv(inst.underlying, T, k, inst.name.replace(/-[CP]$/, '')) * 100, 2);
  const sigma = markIv / 100;
  const unit = p.linear ? 1 : F; // quote-currency value of one unit of option price
  const mark = roundTo(black76Price(type, F, K, T, sigma) / unit, p.optionPriceDecimals);
  const g = black76Greeks(type, F, K, T, sigma);
  // Standardized moneyness |k| / sqrt(theta): wider quotes and fewer of them in the wings.
  const z = Math.abs(k) / Math.max(sigma * Math.sqrt(T), 1e-6);
  const halfSpreadPts = 0.5 + 0.35 * Math.min(z, 6) + 0.5 / Math.sqrt(Math.max(T * 365, 0.25));
  const noBook = z > 2.5 && hash01(`book:${inst.name}`) < 0.35;
  let bid = 0;
  let ask = 0;
  let bidIv = 0;
  let askIv = 0;
  let bidAmt = 0;
  let askAmt = 0;
  if (!noBook) {
    const minTick = p.option.tick_size;
    const rawBid = black76Price(type, F, K, T, Math.max(sigma - halfSpreadPts / 100, 0.01)) / unit;
    bid = rawBid >= minTick ? floorTo(rawBid, tickAt(inst, rawBid)) : 0;
    const rawAsk = black76Price(type, F, K, T, sigma + halfSpreadPts / 100) / unit;
    ask = Math.max(ceilTo(rawAsk, tickAt(inst, rawAsk)), minTick);
    if (bid > 0) {
      const iv = black76ImpliedVol(type, bid * unit, F, K, T, sigma);
      if (Number.isFinite(iv) && iv * 100 < markIv) bidIv = roundTo(Math.min(iv * 100, markIv), 2);
      else bid = 0;
    }
    const ivA = black76ImpliedVol(type, ask * unit, F, K, T, sigma);
    askIv = Number.isFinite(ivA) ? roundTo(Math.max(ivA * 100, markIv), 2) : 0;
    if (bid > 0) bidAmt = roundTo(0.1 + rng.uniform() * 40, 1);
    askAmt = roundTo(0.1 + rng.uniform() * 40, 1);
  }
  if (!memory.has(inst.name)) memory.set(inst.name, mark);
  const nearness = Math.exp(-z * z / 8);
  const st = instrumentStats(inst.name, nearness);
  const tick = p.option.tick_size;
  const band = (0.02 + 0.1 * mark / (p.linear ? index : 1)) * (p.linear ? index : 1);
  const traded = st.volume > 0;
  const gp = (x: number) => roundTo(x, 5);
  return {
    underlying_price: F,
    underlying_index: underlyingIndex,
    timestamp: nowMs,
    stats: {
      volume_notional: traded ? roundTo(st.volume * index, 0) : 0,
      volume_usd: traded ? roundTo(st.volume * index * (p.linear ? 1 : mark), 2) : 0,
      volume: st.volume,
      price_change: traded ? st.change : null,
      low: traded ? Math.max(tick, floorTo(mark * 0.85, tick)) : null,
      high: traded ? ceilTo(mark * 1.15 + tick, tick) : null,
    },
    state: 'open',
    settlement_price: memory.get(inst.name)!,
    open_interest: st.oi,
    min_price: Math.max(tick, floorTo(mark - band, tick)),
    max_price: ceilTo(mark + band, tick),
    mark_price: mark,
    mark_iv: markIv,
    last_price: traded ? Math.max(tick, roundTo(Math.round(mark / tick) * tick, 10)) : null,
    interest_rate: 0,
    instrument_name: inst.name,
    index_price: index,
    greeks: { vega: gp(g.vega), theta: gp(g.theta), rho: gp(g.rho), gamma: gp(g.gamma), delta: gp(g.delta) },
    estimated_delivery_price: index,
    bid_iv: bidIv,
    best_bid_price: bid,
    best_bid_amount: bidAmt,
    best_ask_price: ask,
    best_ask_amount: askAmt,
    ask_iv: askIv,
  };
}

/**
 * Final ticker of an option that has just expired (as Deribit sends it, recorded by tardis-node):
 * state closed, mark = intrinsic (coin for inverse), greeks 0, no book, `delivery_price` the
 * index at expiry and `estimated_delivery_price` the string "expired".
 */
export function expiredOptionTicker(market: Market, inst: SimInstrument, nowMs: number): Json {
  const p = inst.product;
  const index = roundTo(market.spot(inst.underlying), p.priceDecimals);
  const K = inst.strike!;
  const intrinsic = Math.max(inst.optionType === 'call' ? index - K : K - index, 0);
  const mark = roundTo(p.linear ? intrinsic : intrinsic / index, p.optionPriceDecimals);
  return {
    underlying_price: index,
    underlying_index: p.linear ? 'index_price' : `SYN.${p.prefix}-${deribitDateCode(inst.expiryMs)}`,
    timestamp: nowMs,
    stats: { volume: 0, price_change: null, low: null, high: null },
    state: 'closed',
    open_interest: 0,
    min_price: p.option.tick_size,
    max_price: p.option.tick_size,
    mark_price: mark,
    mark_iv: 0,
    last_price: null,
    interest_rate: 0,
    instrument_name: inst.name,
    index_price: index,
    greeks: { vega: 0, theta: 0, rho: 0, gamma: 0, delta: 0 },
    estimated_delivery_price: 'expired',
    delivery_price: index,
    bid_iv: 0,
    best_bid_price: 0,
    best_bid_amount: 0,
    best_ask_price: 0,
    best_ask_amount: 0,
    ask_iv: 0,
  };
}

/**
 * Data of a `ticker.{future}.{interval}` notification for dated futures and perpetuals.
 * Dated: mark = forward F(T) rounded to 2 (or the product's) decimals. Perpetual: mark = index
 * (1 + premium), plus `funding_8h`, `current_funding` (8-hour rates) and `interest_value`.
 * Best bid/ask straddle the mark on the instrument's tick.
 */
export function futureTicker(market: Market, inst: SimInstrument, nowMs: number, rng: Rng, memory: SettlementMemory): Json {
  const p = inst.product;
  const u = inst.underlying;
  const c = inst.perpetual ? p.perpetual : p.future!;
  const dp = p.priceDecimals;
  const index = roundTo(market.spot(u), dp);
  const mark = roundTo(inst.perpetual ? market.perpetualMark(u) : market.forward(u, yearsTo(inst.expiryMs, nowMs)), dp);
  const tick = c.tick_size;
  const spreadTicks = inst.perpetual ? 1 : 1 + Math.floor(rng.uniform() * 3);
  const bid = floorTo(mark - (spreadTicks * tick) / 2, tick);
  const ask = roundTo(bid + spreadTicks * tick, 10);
  if (!memory.has(inst.name)) memory.set(inst.name, mark);
  const h = hash01(`oi:${inst.name}`);
  const oiNotional = inst.perpetual ? 2e8 + h * 9e8 : 5e6 + h * 2e8;
  const openInterest = p.linear ? roundTo(oiNotional / 1000 / index, 1) : roundTo(oiNotional / c.contract_size, 0) * c.contract_size;
  const volumeUsd = roundTo((inst.perpetual ? 3e8 : 2e7) * (0.5 + hash01(`vol:${inst.name}`)) * (p.linear ? 0.01 : 1), -1);
  const amount = () => (p.linear ? roundTo((1 + rng.uniform() * 500) * c.contract_size, 4) : Math.round(1 + rng.uniform() * 20000) * c.contract_size);
  const base: Json = {
    timestamp: nowMs,
    state: 'open',
    stats: {
      high: ceilTo(mark * 1.02, tick),
      low: floorTo(mark * 0.98, tick),
      price_change: roundTo((hash01(`chg:${inst.name}`) - 0.5) * 6, 4),
      volume: roundTo(volumeUsd / index, 8),
      volume_usd: volumeUsd,
      volume_notional: volumeUsd,
    },
    index_price: index,
    instrument_name: inst.name,
    last_price: rng.uniform() < 0.5 ? bid : ask,
    settlement_price: memory.get(inst.name)!,
    min_price: floorTo(mark * 0.985, tick),
    max_price: ceilTo(mark * 1.015, tick),
    open_interest: openInterest,
    mark_price: mark,
  };
  if (inst.perpetual) {
    const f = market.funding(u);
    base.interest_value = f.interestValue;
  }
  Object.assign(base, {
    best_ask_price: ask,
    best_bid_price: bid,
    estimated_delivery_price: index,
    best_ask_amount: amount(),
    best_bid_amount: amount(),
  });
  if (inst.perpetual) {
    const f = market.funding(u);
    base.current_funding = roundTo(f.currentFunding, 8);
    base.funding_8h = roundTo(f.funding8h, 8);
  }
  return base;
}

/** Data of a `deribit_price_index.{index_name}` notification. */
export function indexData(market: Market, indexName: string, underlying: SimInstrument['underlying'], decimals: number, nowMs: number): Json {
  return { index_name: indexName, price: roundTo(market.spot(underlying), decimals), timestamp: nowMs };
}

/** JSON-RPC success envelope with Deribit's extra fields (usIn/usOut/usDiff in microseconds, testnet). */
export function rpcResult(id: unknown, result: unknown, usIn: number, usOut: number): Json {
  return { jsonrpc: '2.0', id, result, usIn, usOut, usDiff: usOut - usIn, testnet: false };
}

/** A Deribit JSON-RPC error object: `{code, message, data?}`. */
export interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: { readonly reason: string; readonly param?: string };
}

/** JSON-RPC error envelope (id omitted when the request had none), Deribit's extra fields. */
export function rpcError(id: unknown, error: RpcError, usIn: number, usOut: number): Json {
  const e: Json = { message: error.message, code: error.code };
  if (error.data) e.data = { ...error.data };
  const out: Json = { jsonrpc: '2.0' };
  if (id !== undefined) out.id = id;
  Object.assign(out, { error: e, testnet: false, usIn, usOut, usDiff: usOut - usIn });
  return out;
}

/** A subscription notification envelope. */
export function notification(channel: string, data: unknown): Json {
  return { jsonrpc: '2.0', method: 'subscription', params: { channel, data } };
}
