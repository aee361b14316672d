/**
 * Bybit API v5 public message bodies built from a Bybit view of the simulated market. Market values are
 * JSON STRINGS with trailing zeros cut (`"0.0505193"`), envelope times JSON numbers in milliseconds.
 * Shapes follow test/fixtures/bybit/:
 *
 * - option `tickers.{symbol}` (tardis-node SOL-28APR23-24-C / ETH-30JUN23-200-P 2023-04-05; docs
 *   BTC-6JAN23-17500-C): `{id: "tickers.<symbol>-<seq>-<ts>", topic, ts, data, type: "snapshot"}`;
 *   `markPriceIv`, `bidIv`, `askIv` FRACTIONS to 4 decimals (`"0"` = no quote, with `bidPrice`/`askPrice`
 *   and the size `"0"`); `underlyingPrice` the expiry's forward; `indexPrice` the index; `markPrice`
 *   Black-76 in USDC to 8 decimals; best prices on the option tick around the mark; Greeks with Bybit's
 *   conventions (exchangeGreeks.ts {@link bybitGreeks}) to 8 decimals; `predictedDeliveryPrice` "0".
 * - linear `tickers.{symbol}` (docs BTCUSDT perpetual and BTC-26DEC25 USDC future; tardis-node BTCUSD
 *   snapshot + delta): the full record ({@link linearRecord}) as a `snapshot`, then `delta`s carrying
 *   only the fields that changed, `{topic, type, data, cs, ts}`. Perpetuals: `fundingRate` = the rate
 *   the current interval is heading for, `nextFundingTime` its settlement (ms string),
 *   `fundingIntervalHour`, `fundingCap` "0.005"; futures: `deliveryTime` ISO text, `basis`, `basisRate`,
 *   `basisRateYear`, `fundingRate` and `nextFundingTime` "".
 * - funding history item `{symbol, fundingRate, fundingRateTimestamp}` (docs ETHPERP example).
 */
import { black76ImpliedVol, black76Price } from './black76.js';
import type { BybitSimInstrument } from './bybitChains.js';
import { decimalText, roundTo } from './decimals.js';
import { bybitGreeks } from './exchangeGreeks.js';
import type { MarketView } from './exchangeView.js';
import { MS_PER_YEAR } from './market.js';
import { hash01, type Rng } from './rng.js';

/** A plain JSON object. */
export type Json = Record<string, unknown>;

const HOUR_MS = 3_600_000;
/** Bybit's cap on a funding rate (instruments-info upper/lowerFundingRate, ticker fundingCap). */
export const BYBIT_FUNDING_CAP = 0.005;

/** Number as Bybit prints it: at most `dp` decimals, trailing zeros cut, `-0` as `0`. */
export function bybitStr(x: number, dp: number): string {
  return decimalText(x, dp);
}

function floorTo(x: number, tick: number): number {
  return roundTo(Math.floor(x / tick + 1e-9) * tick, 10);
}

function ceilTo(x: number, tick: number): number {
  return roundTo(Math.ceil(x / tick - 1e-9) * tick, 10);
}

/** Data of an option `tickers.{symbol}` snapshot (see the module docstring). */
export function optionTickerData(view: MarketView, inst: BybitSimInstrument, nowMs: number, rng: Rng): Json {
  const spec = inst.spec;
  const u = inst.underlying;
  const K = inst.strike!;
  const type = inst.optionType!;
  const T = Math.max((inst.expiryMs! - nowMs) / MS_PER_YEAR, 1e-9);
  const dp = spec.priceDecimals;
  const S = roundTo(view.spot(u), dp);
  const F = roundTo(view.forward(u, T), dp);
  const k = Math.log(K / F);
  const markIv = roundTo(view.markIv(u, T, k, inst.symbol.replace(/-[CP](-USDT)?$/, '')), 4);
  const mark = black76Price(type, F, K, T, markIv);
  const g = bybitGreeks(type, F, K, T, markIv);
  const z = Math.abs(k) / Math.max(markIv * Math.sqrt(T), 1e-6);
  const hs = (0.6 + 0.4 * Math.min(z, 6) + 0.5 / Math.sqrt(Math.max(T * 365, 0.25))) / 100;
  const noBook = z > 2.5 && hash01(`bybit-book:${inst.symbol}`) < 0.4;
  const tick = Number(spec.optionTick);
  let bid = 0;
  let ask = 0;
  let bidIv = 0;
  let askIv = 0;
  if (!noBook) {
    const rawBid = black76Price(type, F, K, T, Math.max(markIv - hs, 0.01));
    bid = rawBid >= tick ? floorTo(rawBid, tick) : 0;
    ask = Math.max(ceilTo(black76Price(type, F, K, T, markIv + hs), tick), tick);
    if (bid > 0) {
      const iv = black76ImpliedVol(type, bid, F, K, T, markIv);
      if (Number.isFinite(iv) && iv < markIv) bidIv = roundTo(iv, 4);
      else bid = 0;
    }
    const ivA = black76ImpliedVol(type, ask, F, K, T, markIv);
    askIv = Number.isFinite(ivA) ? roundTo(Math.max(ivA, markIv), 4) : 0;
    if (askIv === 0) ask = 0;
  }
  const size = () => bybitStr(roundTo(Number(spec.optionLot.minOrderQty) * (1 + Math.floor(rng.uniform() * 400)), 4), 4);
  const oi = roundTo(hash01(`bybit-oi:${inst.symbol}`) * 300 * Math.exp(-(z * z) / 8), 2);
  const traded = hash01(`bybit-tr:${inst.symbol}`) < 0.4;
  const last = traded ? Math.max(tick, roundTo(Math.round(mark / tick) * tick, 10)) : 0;
  const ps = (x: number) => bybitStr(x, 8);
  return {
    symbol: inst.symbol,
    bidPrice: bybitStr(bid, 8),
    bidSize: bid > 0 ? size() : '0',
    bidIv: bybitStr(bidIv, 4),
    askPrice: bybitStr(ask, 8),
    askSize: ask > 0 ? size() : '0',
    askIv: bybitStr(askIv, 4),
    lastPrice: bybitStr(last, 8),
    highPrice24h: bybitStr(traded ? ceilTo(last * 1.1, tick) : 0, 8),
    lowPrice24h: bybitStr(traded ? Math.max(tick, floorTo(last * 0.9, tick)) : 0, 8),
    markPrice: ps(mark),
    indexPrice: bybitStr(S, dp),
    markPriceIv: bybitStr(markIv, 4),
    underlyingPrice: bybitStr(F, dp),
    openInterest: bybitStr(oi, 2),
    turnover24h: bybitStr(traded ? roundTo(oi * S * 0.05, 2) : 0, 2),
    volume24h: bybitStr(traded ? roundTo(oi * 0.05, 2) : 0, 2),
    totalVolume: String(Math.round(oi * 3)),
    totalTurnover: String(Math.round(oi * 3 * S)),
    delta: ps(g.delta),
    gamma: ps(g.gamma),
    vega: ps(g.vega),
    theta: ps(g.theta),
    predictedDeliveryPrice: '0',
    change24h: bybitStr(traded ? (hash01(`bybit-chg:${inst.symbol}`) - 0.5) * 0.6 : 0, 8),
  };
}

/** The settlement of a perpetual's current funding interval: the next multiple of the interval after `nowMs`. */
export function bybitNextFunding(nowMs: number, intervalHours: number): number {
  const step = intervalHours * HOUR_MS;
  return (Math.floor(nowMs / step) + 1) * step;
}

function cap(x: number): number {
  return Math.max(-BYBIT_FUNDING_CAP, Math.min(BYBIT_FUNDING_CAP, x));
}

/** Mark of a linear instrument: perpetual index x (1 + premium), future the forward of its expiry. */
export function linearMark(view: MarketView, inst: BybitSimInstrument, nowMs: number): number {
  const raw = inst.kind === 'perpetual' ? view.perpetualMark(inst.underlying) : view.forwardAt(inst.underlying, inst.expiryMs!, nowMs);
  return roundTo(raw, inst.spec.priceDecimals);
}

/**
 * The full linear ticker record of a USDC/USDT perpetual or USDC future now (every value a string), in
 * the docs' key order. Best bid/ask straddle the mark by 1-2 ticks; 24 h statistics are stable per
 * symbol; openInterest and volumes move slowly.
 */
export function linearRecord(view: MarketView, inst: BybitSimInstrument, nowMs: number, rng: Rng): Record<string, string> {
  const spec = inst.spec;
  const dp = spec.priceDecimals;
  const tick = Number(spec.linearTick);
  const index = roundTo(view.spot(inst.underlying), dp);
  const mark = linearMark(view, inst, nowMs);
  const spread = 1 + Math.floor(rng.uniform() * 2);
  const bid = floorTo(mark - (spread * tick) / 2, tick);
  const ask = roundTo(bid + spread * tick, 10);
  const h = hash01(`bybit-lin:${inst.symbol}`);
  const change = (h - 0.5) * 0.06;
  const prev24 = roundTo(mark / (1 + change), dp);
  const oi = roundTo((inst.kind === 'perpetual' ? 5_000 : 300) * (0.5 + h) * (inst.spec.coin === 'BTC' ? 1 : inst.spec.coin === 'ETH' ? 15 : 400), 3);
  const vol = roundTo(oi * (2 + h), 3);
  const px = (x: number) => bybitStr(x, dp);
  const base: Record<string, string> = {
    symbol: inst.symbol,
    tickDirection: rng.uniform() < 0.5 ? 'PlusTick' : 'MinusTick',
    price24hPcnt: bybitStr(change, 6),
    lastPrice: px(rng.uniform() < 0.5 ? bid : ask),
    prevPrice24h: px(prev24),
    highPrice24h: px(Math.max(mark, prev24) * 1.01),
    lowPrice24h: px(Math.min(mark, prev24) * 0.99),
    prevPrice1h: px(roundTo(mark * (1 - change / 24), dp)),
    markPrice: px(mark),
    indexPrice: px(index),
    openInterest: bybitStr(oi, 3),
    openInterestValue: bybitStr(oi * mark, 2),
    turnover24h: bybitStr(vol * mark, 4),
    volume24h: bybitStr(vol, 4),
  };
  if (inst.kind === 'perpetual') {
    const H = inst.fundingIntervalHours ?? 8;
    const next = bybitNextFunding(nowMs, H);
    Object.assign(base, {
      fundingIntervalHour: String(H),
      fundingCap: String(BYBIT_FUNDING_CAP),
      nextFundingTime: String(next),
      fundingRate: bybitStr(cap(view.predictedFunding(inst.underlying, next, H)), 8),
    });
  } else {
    const T = Math.max((inst.expiryMs! - nowMs) / MS_PER_YEAR, 1e-9);
    const basis = mark - index;
    Object.assign(base, {
      deliveryTime: new Date(inst.expiryMs!).toISOString().replace('.000Z', 'Z'),
      basisRate: bybitStr(basis / index, 8),
      deliveryFeeRate: '0',
      predictedDeliveryPrice: '0.00',
      basis: px(basis),
      basisRateYear: bybitStr(basis / index / T, 8),
      nextFundingTime: '',
      fundingRate: '',
    });
  }
  Object.assign(base, {
    bid1Price: px(bid),
    bid1Size: bybitStr((1 + Math.floor(rng.uniform() * 300)) * Number(spec.linearLot.minOrderQty), 3),
    ask1Price: px(ask),
    ask1Size: bybitStr((1 + Math.floor(rng.uniform() * 300)) * Number(spec.linearLot.minOrderQty), 3),
  });
  if (inst.kind === 'perpetual') Object.assign(base, { preOpenPrice: '', preQty: '', curPreListingPhase: '' });
  return base;
}

/** The fields of `next` that differ from `prev` (always with `symbol`): a delta's `data`. */
export function recordDelta(prev: Readonly<Record<string, string>>, next: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { symbol: next.symbol! };
  for (const [k, v] of Object.entries(next)) if (prev[k] !== v) out[k] = v;
  return out;
}

/**
 * Funding history of a USDC perpetual, NEWEST FIRST: one item per settlement time t (a multiple of the
 * interval) with startMs <= t <= endMs and t <= nowMs, at most `limit`, back to the start of the market's
 * history. `fundingRate` = the rate settled at t (fraction for the interval).
 */
export function fundingHistoryList(view: MarketView, inst: BybitSimInstrument, nowMs: number, startMs: number, endMs: number, limit: number): Json[] {
  const H = inst.fundingIntervalHours ?? 8;
  const step = H * HOUR_MS;
  const out: Json[] = [];
  for (let t = Math.floor(Math.min(endMs, nowMs) / step) * step; t >= startMs && out.length < limit; t -= step) {
    const r = view.settledFunding(inst.underlying, t, H);
    if (r === null) break;
    out.push({ symbol: inst.symbol, fundingRate: bybitStr(cap(r), 8), fundingRateTimestamp: String(t) });
  }
  return out;
}
