/**
 * OKX API v5 public message bodies built from an exchange view of the simulated market.
 * EVERY value is a JSON string, as OKX prints them (`"0.7794507758"`, `"1640001659301"`); times are Unix
 * milliseconds. Shapes follow the recorded messages and docs examples in test/fixtures/okx/:
 *
 * - `opt-summary` item (docs example BTC-USD-241013-70000-P; tardis-node 2021 pushes): `markVol`,
 *   `bidVol`, `askVol` FRACTIONS (`"0"` when that side has no order, the current format), `fwdPx` the
 *   expiry's forward, the Black-Scholes Greeks `deltaBS`, `gammaBS`, `vegaBS`, `thetaBS` (USD) and the
 *   coin Greeks `delta`, `gamma`, `vega`, `theta`, computed with OKX's conventions
 *   (exchangeGreeks.ts {@link okxGreeks}); `lever` = 1 / premium in coin; `realVol` `""`; `volLv` the ATM
 *   vol of the expiry (a guess: OKX does not define the field); 10 decimals, trailing zeros cut.
 * - `index-tickers` item (tardis-node ETH-USD 2021): `idxPx`, `open24h`, `high24h`, `low24h`, `sodUtc0`,
 *   `sodUtc8` (index at 00:00 UTC and at 16:00 UTC of the day before, i.e. 00:00 UTC+8), from the market's
 *   hourly index history.
 * - `mark-price` item: `markPx` of a future (the forward) or swap (index x (1 + premium)).
 * - `tickers` item (crypto-msg-parser BTC-USD-220624, BTC-USD-SWAP): `last`, `lastSz`, `askPx`, `askSz`,
 *   `bidPx`, `bidSz` on the instrument tick around the mark, 24 h statistics, `volCcy24h`, `vol24h`.
 * - `funding-rate` item, current format (docs example BTC-USD-SWAP 2023-11): `fundingRate` = the rate the
 *   current 8-hour period is heading for, settled at `fundingTime`; `nextFundingTime` 8 h later;
 *   `settState` `settled` with `settFundingRate` = the rate of the settlement just made;
 *   `method` `current_period`, `formulaType` `noRate`, `premium`, `maxFundingRate`/`minFundingRate`
 *   +-0.00375, `ts`.
 * - funding-rate-history item (docs example): `fundingRate`, `realizedRate`, `fundingTime`, `method`
 *   `next_period`, `formulaType` `noRate`.
 */
import { decimalText, roundTo } from './decimals.js';
import { okxGreeks } from './exchangeGreeks.js';
import type { MarketView } from './exchangeView.js';
import { MS_PER_YEAR, type Underlying } from './market.js';
import type { OkxSimInstrument } from './okxChains.js';
import { hash01, type Rng } from './rng.js';

/** A plain JSON object. */
export type Json = Record<string, unknown>;

/** OKX's settlement interval of the simulated swaps, hours (00:00, 08:00, 16:00 UTC). */
export const OKX_FUNDING_INTERVAL_H = 8;
const HOUR_MS = 3_600_000;
const FUNDING_CAP = 0.00375;

/** Number as OKX prints it: at most `dp` decimals, trailing zeros and a trailing point cut, `-0` as `0`. */
export function okxStr(x: number, dp = 10): string {
  return decimalText(x, dp);
}

/** The exchange's index of an underlying, rounded to the family's decimals. */
export function okxIndex(view: MarketView, inst: Pick<OkxSimInstrument, 'underlying' | 'spec'>): number {
  return roundTo(view.spot(inst.underlying), inst.spec.priceDecimals);
}

/**
 * One `opt-summary` item. markVol is the view's implied vol at the option's forward log-moneyness;
 * fwdPx the view's forward of the expiry; bid/ask vols markVol -/+ a half-spread of 0.5 to 3.5 vol
 * points (wider away from the money and for short expiries); no bid when the bid premium would be below
 * the 0.0001 coin tick, and no order at all on about a third of the strikes beyond 2.5 standard deviations.
 */
export function optSummaryItem(view: MarketView, inst: OkxSimInstrument, nowMs: number): Json {
  const u = inst.underlying;
  const K = inst.strike!;
  const type = inst.optType === 'C' ? 'call' : 'put';
  const T = Math.max((inst.expiryMs! - nowMs) / MS_PER_YEAR, 1e-9);
  const S = view.spot(u);
  const F = view.forward(u, T);
  const k = Math.log(K / F);
  const sigma = view.markIv(u, T, k, inst.instId.replace(/-[CP]$/, ''));
  const g = okxGreeks(type, F, S, K, T, sigma);
  const z = Math.abs(k) / Math.max(sigma * Math.sqrt(T), 1e-6);
  const hs = (0.5 + 0.35 * Math.min(z, 6) + 0.5 / Math.sqrt(Math.max(T * 365, 0.25))) / 100;
  const noBook = z > 2.5 && hash01(`okx-book:${inst.instId}`) < 0.35;
  const bidPremium = g.coinPrice - (g.vegaBS / S) * hs * 100;
  const bidVol = noBook || bidPremium < 0.0001 || sigma - hs <= 0.01 ? 0 : sigma - hs;
  const askVol = noBook ? 0 : sigma + hs;
  return {
    instType: 'OPTION',
    instId: inst.instId,
    uly: inst.spec.family,
    delta: okxStr(g.delta),
    gamma: okxStr(g.gamma),
    vega: okxStr(g.vega),
    theta: okxStr(g.theta),
    lever: okxStr(g.coinPrice > 0 ? 1 / g.coinPrice : 0),
    markVol: okxStr(sigma),
    bidVol: okxStr(bidVol),
    askVol: okxStr(askVol),
    realVol: '',
    deltaBS: okxStr(g.deltaBS),
    gammaBS: okxStr(g.gammaBS),
    thetaBS: okxStr(g.thetaBS),
    vegaBS: okxStr(g.vegaBS),
    ts: String(nowMs),
    fwdPx: okxStr(F),
    volLv: okxStr(view.atmVol(u, T)),
  };
}

/** 24-hour statistics of an index from the market's hourly history (cached per hour by the caller). */
export interface IndexStats {
  readonly open24h: number;
  readonly high24h: number;
  readonly low24h: number;
  readonly sodUtc0: number;
  readonly sodUtc8: number;
}

/** 24 h open/high/low and start-of-day prices of the view's index, from its hourly history and `now`. */
export function indexStats(view: MarketView, u: Underlying, nowMs: number): IndexStats {
  const hist = view.fundingHistory(u, nowMs - 25 * HOUR_MS, nowMs);
  const spot = view.spot(u);
  const day = Math.floor(nowMs / 86_400_000) * 86_400_000;
  const at = (t: number): number => {
    let best = spot;
    for (const p of hist) if (p.timestamp <= t) best = p.index_price;
    return best;
  };
  const last24 = hist.filter((p) => p.timestamp >= nowMs - 24 * HOUR_MS).map((p) => p.index_price);
  const open = last24.length > 0 ? last24[0]! : spot;
  return {
    open24h: open,
    high24h: Math.max(spot, ...last24),
    low24h: Math.min(spot, ...last24),
    sodUtc0: at(day),
    sodUtc8: at(day - 8 * HOUR_MS),
  };
}

/** One `index-tickers` item of a family (`BTC-USD`). */
export function indexTickerItem(family: string, dp: number, price: number, st: IndexStats, nowMs: number): Json {
  const f = (x: number) => okxStr(roundTo(x, dp), dp);
  return { instId: family, idxPx: f(price), open24h: f(st.open24h), high24h: f(st.high24h), low24h: f(st.low24h), sodUtc0: f(st.sodUtc0), sodUtc8: f(st.sodUtc8), ts: String(nowMs) };
}

/** Mark of a future (the view's forward of its expiry) or a swap (index x (1 + premium)), on the family's decimals. */
export function okxMark(view: MarketView, inst: OkxSimInstrument, nowMs: number): number {
  const raw = inst.instType === 'SWAP' ? view.perpetualMark(inst.underlying) : view.forwardAt(inst.underlying, inst.expiryMs!, nowMs);
  return roundTo(raw, inst.spec.priceDecimals);
}

/** One `mark-price` item. */
export function markPriceItem(view: MarketView, inst: OkxSimInstrument, nowMs: number): Json {
  return { instId: inst.instId, instType: inst.instType, markPx: okxStr(okxMark(view, inst, nowMs), inst.spec.priceDecimals), ts: String(nowMs) };
}

/** One `tickers` item of a future or swap: best bid/ask 1-3 ticks around the mark, last at one of them. */
export function tickerItem(view: MarketView, inst: OkxSimInstrument, nowMs: number, rng: Rng, st: IndexStats): Json {
  const mark = okxMark(view, inst, nowMs);
  const tick = inst.spec.futureTick;
  const dp = inst.spec.priceDecimals;
  const spread = 1 + Math.floor(rng.uniform() * 3);
  const bid = roundTo(Math.floor(mark / tick - spread / 2) * tick, dp);
  const ask = roundTo(bid + spread * tick, dp);
  const ratio = mark / Math.max(view.spot(inst.underlying), 1e-9);
  const ctVal = Number(inst.spec.futureCtVal);
  const vol24h = Math.round((inst.instType === 'SWAP' ? 4e6 : 3e5) * (0.5 + hash01(`okx-vol:${inst.instId}`)) * (ctVal === 100 ? 1 : 3));
  const f = (x: number) => okxStr(roundTo(x * ratio, dp), dp);
  return {
    instType: inst.instType,
    instId: inst.instId,
    last: okxStr(rng.uniform() < 0.5 ? bid : ask, dp),
    lastSz: String(1 + Math.floor(rng.uniform() * 20)),
    askPx: okxStr(ask, dp),
    askSz: String(1 + Math.floor(rng.uniform() * 500)),
    bidPx: okxStr(bid, dp),
    bidSz: String(1 + Math.floor(rng.uniform() * 500)),
    open24h: f(st.open24h),
    high24h: f(st.high24h),
    low24h: f(st.low24h),
    sodUtc0: f(st.sodUtc0),
    sodUtc8: f(st.sodUtc8),
    volCcy24h: okxStr((vol24h * ctVal) / mark, 4),
    vol24h: String(vol24h),
    ts: String(nowMs),
  };
}

/** The next OKX settlement strictly after `nowMs` (a multiple of 8 h UTC). */
export function nextSettlement(nowMs: number, intervalH = OKX_FUNDING_INTERVAL_H): number {
  const step = intervalH * HOUR_MS;
  return (Math.floor(nowMs / step) + 1) * step;
}

function cap(x: number): number {
  return Math.max(-FUNDING_CAP, Math.min(FUNDING_CAP, x));
}

/** One `funding-rate` item (current format) of a swap. */
export function fundingRateItem(view: MarketView, inst: OkxSimInstrument, nowMs: number): Json {
  const u = inst.underlying;
  const fundingTime = nextSettlement(nowMs);
  const prev = fundingTime - OKX_FUNDING_INTERVAL_H * HOUR_MS;
  const settled = view.settledFunding(u, prev, OKX_FUNDING_INTERVAL_H);
  return {
    formulaType: 'noRate',
    fundingRate: okxStr(cap(view.predictedFunding(u, fundingTime, OKX_FUNDING_INTERVAL_H)), 16),
    fundingTime: String(fundingTime),
    impactValue: '',
    instId: inst.instId,
    instType: 'SWAP',
    interestRate: '',
    method: 'current_period',
    maxFundingRate: String(FUNDING_CAP),
    minFundingRate: String(-FUNDING_CAP),
    nextFundingRate: '',
    nextFundingTime: String(fundingTime + OKX_FUNDING_INTERVAL_H * HOUR_MS),
    premium: okxStr(view.premium(u), 16),
    settFundingRate: settled === null ? '' : okxStr(cap(settled), 16),
    settState: 'settled',
    ts: String(nowMs),
  };
}

/**
 * Funding history items of a swap, NEWEST FIRST: one per settlement (every 8 h) with
 * before < fundingTime < after (ms; either bound optional), at most `limit`. `realizedRate` is the
 * settled rate; `fundingRate` (OKX's published rate for that period) differs from it by a few 1e-10, as
 * in the docs example.
 */
export function fundingHistoryItems(view: MarketView, inst: OkxSimInstrument, nowMs: number, before: number | null, after: number | null, limit: number): Json[] {
  const out: Json[] = [];
  const step = OKX_FUNDING_INTERVAL_H * HOUR_MS;
  let t = Math.floor(nowMs / step) * step;
  if (after !== null) t = Math.min(t, (Math.ceil(after / step) - 1) * step);
  for (; out.length < limit; t -= step) {
    if (before !== null && t <= before) break;
    const realized = view.settledFunding(inst.underlying, t, OKX_FUNDING_INTERVAL_H);
    if (realized === null) break;
    const r = cap(realized);
    out.push({
      formulaType: 'noRate',
      fundingRate: okxStr(r * (1 + (hash01(`okx-fr:${inst.instId}:${t}`) - 0.5) * 1e-4), 16),
      fundingTime: String(t),
      instId: inst.instId,
      instType: 'SWAP',
      method: 'next_period',
      realizedRate: okxStr(r, 16),
    });
  }
  return out;
}

/** `{arg, data}` push envelope. */
export function okxPush(arg: Json, data: readonly Json[]): Json {
  return { arg, data };
}
