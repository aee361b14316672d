/**
 * One exchange's view of the shared simulated {@link Market}: the same spot, smiles, basis and
 * funding dynamics, seen through a few per-exchange constants so that OKX and Bybit quote slightly
 * different (but just as arbitrage-free) numbers than Deribit. Pure and deterministic: every number
 * is a function of the market state and the constants below, nothing is random here.
 *
 * - Index: S_x = S (1 + indexOffsetBp / 10^4) (each exchange builds its own index from its own
 *   constituents, so indices differ by a basis point or two).
 * - Volatility: the ATM term structure is scaled, sigmaAtm_x(T) = volMultiplier * sigmaAtm(T), and the
 *   smile is the market's SSVI smile (Gatheral and Jacquier 2014, eq. (4.1)) evaluated at that ATM
 *   total variance theta_x(T) = sigmaAtm_x(T)^2 T, with the market's rho and eta. The result is again
 *   an SSVI surface with eta (1 + |rho|) <= 2 and theta_x increasing in T (a constant multiplier keeps
 *   d/dT[sigma^2 T] >= 0), so it is free of butterfly and calendar arbitrage by the paper's
 *   Theorems 4.1 and 4.2.
 * - Basis: y_x(T) = y(T) + basisOffset (annualized simple basis), F_x(T) = S_x (1 + y_x(T) T).
 * - Perpetual premium and funding: p_x = premiumMultiplier * p + premiumOffset (8-hour rates); the
 *   funding accrued over each UTC hour is transformed the same way,
 *   interest_1h,x = premiumMultiplier * interest_1h + premiumOffset / 8, so that an N-hour settlement
 *   is the sum of the N hourly amounts that end at it.
 */
import { MS_PER_YEAR, ssviTotalVariance, type FundingPoint, type Market, type Underlying } from './market.js';

/** Per-exchange constants of a {@link MarketView}. */
export interface ExchangeViewParams {
  /** Multiplier of the ATM implied-vol term structure (> 0; 1 = the market's). */
  readonly volMultiplier: number;
  /** Added to the annualized simple basis y(T), fraction per year. */
  readonly basisOffset: number;
  /** Index offset, basis points of the market index. */
  readonly indexOffsetBp: number;
  /** Multiplier of the perpetual premium and of the funding accrual. */
  readonly premiumMultiplier: number;
  /** Added to the perpetual premium, 8-hour rate (funding accrues premiumOffset / 8 an hour). */
  readonly premiumOffset: number;
}

/** The identity view (Deribit's own numbers). */
export const NEUTRAL_VIEW: ExchangeViewParams = { volMultiplier: 1, basisOffset: 0, indexOffsetBp: 0, premiumMultiplier: 1, premiumOffset: 0 };

/** OKX's constants: vols 2 % higher, basis +0.5 %/y, index +1.5 bp, funding 10 % richer plus 0.5 bp per 8 h. */
export const OKX_VIEW: ExchangeViewParams = { volMultiplier: 1.02, basisOffset: 0.005, indexOffsetBp: 1.5, premiumMultiplier: 1.1, premiumOffset: 0.5e-4 };

/** Bybit's constants: vols 2.5 % lower, basis -0.4 %/y, index -1 bp, funding 10 % poorer minus 0.3 bp per 8 h. */
export const BYBIT_VIEW: ExchangeViewParams = { volMultiplier: 0.975, basisOffset: -0.004, indexOffsetBp: -1, premiumMultiplier: 0.9, premiumOffset: -0.3e-4 };

/** An exchange's view of the market (see the module docstring). */
export class MarketView {
  /** @throws RangeError when volMultiplier is not finite > 0. */
  constructor(
    readonly market: Market,
    readonly params: ExchangeViewParams = NEUTRAL_VIEW,
  ) {
    if (!(params.volMultiplier > 0 && Number.isFinite(params.volMultiplier))) throw new RangeError(`MarketView: volMultiplier must be > 0, got ${params.volMultiplier}`);
  }

  /** Simulator time, Unix ms. */
  get now(): number {
    return this.market.now;
  }

  /** The exchange's index, quote currency. */
  spot(u: Underlying): number {
    return this.market.spot(u) * (1 + this.params.indexOffsetBp / 1e4);
  }

  /** Annualized simple basis y_x(T), fraction per year; T in years. */
  annualizedBasis(u: Underlying, T: number): number {
    return this.market.annualizedBasis(u, T) + this.params.basisOffset;
  }

  /** Forward F_x(T) = S_x (1 + y_x(T) T) (S_x for T <= 0). */
  forward(u: Underlying, T: number): number {
    const t = Math.max(T, 0);
    return this.spot(u) * Math.max(0.5, 1 + this.annualizedBasis(u, t) * t);
  }

  /** Forward of an expiry (Unix ms) seen at `nowMs`. */
  forwardAt(u: Underlying, expiryMs: number, nowMs: number): number {
    return this.forward(u, (expiryMs - nowMs) / MS_PER_YEAR);
  }

  /** ATM implied vol (fraction) at T years. */
  atmVol(u: Underlying, T: number): number {
    return this.params.volMultiplier * this.market.atmVol(u, T);
  }

  /** Implied vol (fraction) at T years and forward log-moneyness k = ln(K / F_x(T)); ATM vol for T <= 0. */
  impliedVol(u: Underlying, T: number, k: number): number {
    if (!(T > 0)) return this.atmVol(u, 0);
    const a = this.atmVol(u, T);
    return Math.sqrt(ssviTotalVariance(k, a * a * T, this.market.smile(u)) / T);
  }

  /**
   * This exchange's MARK IV of a strike: the market's mark (jump-diffusion IV with mark noise and plateaus,
   * market.ts markIv) times this view's smile over the market's at that point.
   */
  markIv(u: Underlying, T: number, k: number, key: string): number {
    if (!(T > 0)) return this.atmVol(u, 0);
    return (this.market.markIv(u, T, k, key) * this.impliedVol(u, T, k)) / this.market.impliedVol(u, T, k);
  }

  /** Perpetual premium p_x, 8-hour rate. */
  premium(u: Underlying): number {
    return this.params.premiumMultiplier * this.market.funding(u).premium + this.params.premiumOffset;
  }

  /** Perpetual mark S_x (1 + p_x). */
  perpetualMark(u: Underlying): number {
    return this.spot(u) * (1 + this.premium(u));
  }

  /** Instantaneous damped funding rate of the view, 8-hour rate. */
  currentFunding8h(u: Underlying): number {
    return this.params.premiumMultiplier * this.market.funding(u).currentFunding + this.params.premiumOffset;
  }

  /** Funding accrued in one hour of the market, transformed to this view (fraction of notional). */
  private hourly(interest1h: number): number {
    return this.params.premiumMultiplier * interest1h + this.params.premiumOffset / 8;
  }

  /**
   * Hourly funding points of the view with start <= timestamp <= end (Unix ms), ascending:
   * the market's points with interest_1h transformed, interest_8h the sum of the last 8 of them
   * (index prices are the view's).
   */
  fundingHistory(u: Underlying, startMs: number, endMs: number): FundingPoint[] {
    const all = this.market.fundingHistory(u, startMs - 8 * 3_600_000, endMs);
    const k = 1 + this.params.indexOffsetBp / 1e4;
    const out: FundingPoint[] = [];
    for (let i = 0; i < all.length; i++) {
      const p = all[i]!;
      if (p.timestamp < startMs) continue;
      let sum = 0;
      for (let j = Math.max(0, i - 7); j <= i; j++) sum += this.hourly(all[j]!.interest_1h);
      out.push({ timestamp: p.timestamp, index_price: p.index_price * k, prev_index_price: p.prev_index_price * k, interest_1h: this.hourly(p.interest_1h), interest_8h: sum });
    }
    return out;
  }

  /**
   * Funding settled at `settlementMs` (a whole UTC hour) for an `intervalHours` interval: the sum of
   * the view's hourly accruals of the hours ending in (settlementMs - interval, settlementMs].
   * Null when the market's history does not cover that span.
   */
  settledFunding(u: Underlying, settlementMs: number, intervalHours: number): number | null {
    const pts = this.market.fundingHistory(u, settlementMs - (intervalHours - 1) * 3_600_000, settlementMs);
    if (pts.length !== intervalHours) return null;
    let sum = 0;
    for (const p of pts) sum += this.hourly(p.interest_1h);
    return sum;
  }

  /**
   * The rate the current (unsettled) interval of `intervalHours` ending at `nextSettlementMs` is heading
   * for: the accrual of its completed whole hours plus the current damped rate for the rest of it.
   */
  predictedFunding(u: Underlying, nextSettlementMs: number, intervalHours: number): number {
    const startMs = nextSettlementMs - intervalHours * 3_600_000;
    const done = this.market.fundingHistory(u, startMs + 1, nextSettlementMs);
    let sum = 0;
    for (const p of done) sum += this.hourly(p.interest_1h);
    const lastHour = done.length > 0 ? done[done.length - 1]!.timestamp : startMs;
    const remainingH = Math.max(0, (nextSettlementMs - lastHour) / 3_600_000);
    return sum + (this.currentFunding8h(u) * remainingH) / 8;
  }
}
