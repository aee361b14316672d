/**
 * Risk scenarios of a position (interface-spec.md section 5): a ladder of forward-price shifts crossed with
 * volatility scenarios, each re-valued with Black-76 (r = 0) and the conventions of vanilla.ts.
 *
 * Market moves (our choices, docs/conventions.md "Risk scenarios"):
 * - Scenario k of -n..n shifts the price by x_k = k * priceRange / n (fraction; interface-spec.md 5): the
 *   spot and every forward move together, S_k = S (1 + x_k), F_k = F (1 + x_k) (a PERPETUAL's price too).
 * - Vols are sticky-strike: the scenario vol of an option is its current smile vol at its strike, shifted by
 *   the vol scenario, the same on every rung of the ladder. This is the reading of the spec that makes the
 *   per-instrument fields volUp / volDown / volScenarios (one number per instrument, not per rung) the vols
 *   actually used, and it is how Deribit's portfolio margin applies its vol shock to each option's current
 *   IV (volShock.ts).
 * - Time does not pass in a scenario (T fixed; theta is still the 1-day figure at the scenario point).
 *
 * Figures per scenario point (all "base" figures in base currency, times size; vanilla.ts conventions):
 * - value: CALL/PUT Black-76 quote price / F_k (inverse, coin) or / S_k (linear); FORWARD and PERPETUAL
 *   1 - K/F_k coin (inverse) or (F_k - K)/S_k (linear), K the strike or, without one, today's forward
 *   (perpetual price); SPOT 1 coin per unit.
 * - quote value = base value * S_k; basePl and quotePl are the changes of the base and quote values from
 *   the current market (scenario 0, current vol), so scenario 0 with the current vol has P&L exactly 0.
 * - price: CALL/PUT percent price 100 * value per unit (the coin price x 100 on inverse pairs);
 *   FORWARD / PERPETUAL / SPOT the instrument's price in quote currency (F_k, the perpetual price, S_k).
 * - baseDelta: the plain forward Black delta N(d1) (call), N(d1) - 1 (put), as the exchanges' tickers print
 *   it; 1 for FORWARD, PERPETUAL and SPOT. baseNetDelta: the delta net of the premium held in coin, per the
 *   priceMethod's convention (vanilla.ts deltaConvention): N(d1) - value in coin for inverse DERIBIT/OKX
 *   (Deribit: "Net Transaction Delta = Position Deltas - Option Position Mark Prices"), K/F_k for an
 *   inverse forward; the plain delta otherwise. It equals the vanilla endpoint's deltaBase.
 * - baseGamma = d(baseDelta)/dF per one quote unit of F (Deribit's greeks.gamma); baseVega, baseVanna per
 *   vol point (0.01), baseVolga per vol point squared, baseTheta = value(T - 1 day) - value(T) at the
 *   scenario's forward, spot and vol; as vanilla.ts. FORWARD, PERPETUAL and SPOT have no gamma, vega, volga,
 *   vanna or theta.
 *
 * Sources: Black (1976) and Haug (2007) ch. 2 via black76.ts; decisions.md "Quant conventions"; Deribit
 * support, "Delta decay during settlement" (net delta = position deltas - option mark prices) and
 * "Portfolio Margin" (price-move ladder and vol shock of the advanced scenarios, volShock.ts).
 * Tested in test/quant/scenarios.test.ts.
 */
import { black76Greeks } from './black76.js';
import { normCdf, normPdf } from './normal.js';
import { deltaConvention, ONE_DAY_YEARS, VOL_POINT, type PriceMethod } from './vanilla.js';

/** Instrument types of the scenario endpoints (interface-spec.md "instrumentType"). */
export type ScenarioInstrumentType = 'CALL' | 'PUT' | 'FORWARD' | 'PERPETUAL' | 'SPOT';

/** A position and its current market. Prices in quote currency per one unit of base currency. */
export interface ScenarioPosition {
  readonly type: ScenarioInstrumentType;
  /** Position size in base-currency units; negative is short. */
  readonly size: number;
  /** Coin-settled (inverse) instrument; ignored for SPOT. */
  readonly inverse: boolean;
  /** Valuation convention (decides baseNetDelta, vanilla.ts deltaConvention). */
  readonly priceMethod: PriceMethod;
  /** Current spot index (> 0). */
  readonly S: number;
  /** Current forward of the expiry (CALL, PUT, FORWARD) or the perpetual's price (PERPETUAL); ignored for SPOT. */
  readonly F: number;
  /** Strike: required for CALL/PUT; FORWARD/PERPETUAL default to today's F; ignored for SPOT. */
  readonly K?: number;
  /** Years to expiry ACT/365 (>= 0); 0 for PERPETUAL and SPOT. */
  readonly T: number;
}

/** Figures of a position at one scenario point (see the module docstring for each definition). */
export interface ScenarioFigures {
  /** CALL/PUT: percent price per unit; FORWARD/PERPETUAL/SPOT: the instrument's quote price. Not times size. */
  readonly price: number;
  readonly baseValue: number;
  readonly quoteValue: number;
  readonly baseDelta: number;
  readonly baseNetDelta: number;
  readonly baseGamma: number;
  readonly baseTheta: number;
  readonly baseVega: number;
  readonly baseVolga: number;
  readonly baseVanna: number;
}

/** Scenario figures plus P&L against the current market value. */
export interface ScenarioCell extends ScenarioFigures {
  /** baseValue - current baseValue. */
  readonly basePl: number;
  /** quoteValue - current quoteValue. */
  readonly quotePl: number;
}

/** One rung of the ladder: the moved market and one cell per vol scenario (same order as the vols given). */
export interface ScenarioRow {
  /** Integer scenario number, -n..n. */
  readonly scenario: number;
  /** Fractional price shift x_k. */
  readonly shift: number;
  /** S (1 + x_k). */
  readonly spotPrice: number;
  /** F (1 + x_k): the forward (CALL/PUT/FORWARD), perpetual price (PERPETUAL) or spot (SPOT). */
  readonly forwardPrice: number;
  readonly cells: readonly ScenarioCell[];
}

/**
 * The price ladder: shifts k * priceRange / steps for k = -steps..steps (interface-spec.md 5: priceRange 0.2,
 * steps 4 give -0.2, -0.15, ..., 0.2; scenario 0 is exactly 0).
 * @throws RangeError when steps is not an integer >= 1 or priceRange is not finite
 */
export function priceShifts(priceRange: number, steps: number): number[] {
  if (!(Number.isInteger(steps) && steps >= 1)) throw new RangeError(`priceShifts: steps must be an integer >= 1, got ${steps}`);
  if (!Number.isFinite(priceRange)) throw new RangeError(`priceShifts: priceRange must be finite, got ${priceRange}`);
  return Array.from({ length: 2 * steps + 1 }, (_, i) => ((i - steps) * priceRange) / steps);
}

function checkPosition(p: ScenarioPosition): void {
  if (!(p.S > 0 && Number.isFinite(p.S))) throw new RangeError(`scenario: spot S must be finite > 0, got ${p.S}`);
  if (!Number.isFinite(p.size)) throw new RangeError(`scenario: size must be finite, got ${p.size}`);
  if (p.type === 'SPOT') return;
  if (!(p.F > 0 && Number.isFinite(p.F))) throw new RangeError(`scenario: forward F must be finite > 0, got ${p.F}`);
  if (!(p.T >= 0 && Number.isFinite(p.T))) throw new RangeError(`scenario: T must be finite >= 0, got ${p.T}`);
  if ((p.type === 'CALL' || p.type === 'PUT') && !(p.K !== undefined && p.K > 0 && Number.isFinite(p.K))) {
    throw new RangeError(`scenario: a ${p.type} needs a strike > 0, got ${p.K}`);
  }
  if (p.K !== undefined && !(p.K > 0 && Number.isFinite(p.K))) throw new RangeError(`scenario: strike must be finite > 0, got ${p.K}`);
}

/**
 * Black-76 quote price (r = 0) for s = sigma sqrt T > 0, each side from its own formula (a put from
 * N(-d2), N(-d1), keeping an out-of-the-money put's relative accuracy) and never below intrinsic, as
 * black76.ts black76Price; inlined here because the ladder evaluates it thousands of times a request.
 */
function priceB76(F: number, K: number, s: number, isCall: boolean): number {
  const d1 = Math.log(F / K) / s + 0.5 * s;
  const d2 = d1 - s;
  const v = isCall ? F * normCdf(d1) - K * normCdf(d2) : K * normCdf(-d2) - F * normCdf(-d1);
  return Math.max(v, isCall ? F - K : K - F, 0);
}

/** Option figures per unit (quote price and Black-76 Greeks, Haug 2007 ch. 2 with b = r = 0) at (F, T, sigma). */
function optionFigures(F: number, K: number, T: number, sigma: number, isCall: boolean) {
  const s = T > 0 && sigma > 0 ? sigma * Math.sqrt(T) : 0;
  if (s === 0) {
    const g = black76Greeks(F, K, T, sigma, isCall ? 'C' : 'P');
    return { price: g.price, delta: g.delta, gamma: g.gamma, vega: g.vega, volga: g.volga, vanna: g.vanna };
  }
  const d1 = Math.log(F / K) / s + 0.5 * s;
  const d2 = d1 - s;
  const pdf1 = normPdf(d1);
  let price: number;
  let delta: number;
  if (isCall) {
    delta = normCdf(d1);
    price = Math.max(F * delta - K * normCdf(d2), F - K, 0);
  } else {
    const nm1 = normCdf(-d1);
    delta = -nm1;
    price = Math.max(K * normCdf(-d2) - F * nm1, K - F, 0);
  }
  const vega = F * pdf1 * Math.sqrt(T);
  return { price, delta, gamma: pdf1 / (F * s), vega, volga: (vega * d1 * d2) / sigma, vanna: (-pdf1 * d2) / sigma };
}

/**
 * Figures of the position with the price moved by `shift` (fraction) and the option vol at `sigma`
 * (fraction; ignored for FORWARD, PERPETUAL, SPOT). Definitions: module docstring.
 * @throws RangeError on an invalid position or a shift <= -1
 */
export function scenarioFigures(p: ScenarioPosition, shift: number, sigma: number): ScenarioFigures {
  checkPosition(p);
  const { basePl: _b, quotePl: _q, ...f } = cellUnchecked(p, deltaConvention(p.priceMethod, p.inverse) === 'PREMIUM_ADJUSTED', shift, sigma, 0, 0);
  return f;
}

/**
 * Figures at (shift, sigma) and the P&L against reference base and quote values. No position check (the
 * callers check once); one object literal per cell, since the ladder builds thousands a request.
 */
function cellUnchecked(p: ScenarioPosition, premiumAdjusted: boolean, shift: number, sigma: number, base0: number, quote0: number): ScenarioCell {
  if (!(shift > -1 && Number.isFinite(shift))) throw new RangeError(`scenario: shift must be > -1, got ${shift}`);
  const m = 1 + shift;
  const S = p.S * m;
  const n = p.size;
  if (p.type === 'SPOT') {
    const quoteValue = n * S;
    return { price: S, baseValue: n, quoteValue, baseDelta: n, baseNetDelta: n, baseGamma: 0, baseTheta: 0, baseVega: 0, baseVolga: 0, baseVanna: 0, basePl: n - base0, quotePl: quoteValue - quote0 };
  }
  const F = p.F * m;
  if (p.type === 'FORWARD' || p.type === 'PERPETUAL') {
    const K = p.K ?? p.F;
    const value = p.inverse ? 1 - K / F : (F - K) / S;
    const baseValue = n * value;
    const quoteValue = baseValue * S;
    return {
      price: F,
      baseValue,
      quoteValue,
      baseDelta: n,
      baseNetDelta: n * (premiumAdjusted ? K / F : 1),
      baseGamma: 0,
      baseTheta: 0,
      baseVega: 0,
      baseVolga: 0,
      baseVanna: 0,
      basePl: baseValue - base0,
      quotePl: quoteValue - quote0,
    };
  }
  const K = p.K as number;
  const isCall = p.type === 'CALL';
  const g = optionFigures(F, K, p.T, sigma, isCall);
  const toBase = p.inverse ? 1 / F : 1 / S;
  const value = g.price * toBase;
  const Tm = Math.max(p.T - ONE_DAY_YEARS, 0);
  const sm = Tm > 0 && sigma > 0 ? sigma * Math.sqrt(Tm) : 0;
  const dayLater = (sm > 0 ? priceB76(F, K, sm, isCall) : Math.max(isCall ? F - K : K - F, 0)) * toBase;
  const baseValue = n * value;
  const quoteValue = baseValue * S;
  return {
    price: 100 * value,
    baseValue,
    quoteValue,
    baseDelta: n * g.delta,
    baseNetDelta: n * (premiumAdjusted ? g.delta - g.price / F : g.delta),
    baseGamma: n * g.gamma,
    baseTheta: n * (dayLater - value),
    baseVega: n * g.vega * toBase * VOL_POINT,
    baseVolga: n * g.volga * toBase * VOL_POINT * VOL_POINT,
    baseVanna: n * g.vanna * VOL_POINT,
    basePl: baseValue - base0,
    quotePl: quoteValue - quote0,
  };
}

/**
 * The full ladder of a position: for every shift of {@link priceShifts}(priceRange, steps) and every vol
 * of `vols`, the figures and the P&L against the current market (shift 0 at `currentVol`).
 * @param vols scenario vols in output order (e.g. [volUp, current, volDown]); ignored for non-options
 * @param currentVol the current vol at the strike (the P&L reference)
 * @throws RangeError on invalid inputs
 */
export function scenarioLadder(
  p: ScenarioPosition,
  priceRange: number,
  steps: number,
  vols: readonly number[],
  currentVol: number,
): ScenarioRow[] {
  checkPosition(p);
  const pa = deltaConvention(p.priceMethod, p.inverse) === 'PREMIUM_ADJUSTED';
  const now = cellUnchecked(p, pa, 0, currentVol, 0, 0);
  return priceShifts(priceRange, steps).map((shift, i) => {
    const cells = vols.map((v) => cellUnchecked(p, pa, shift, v, now.baseValue, now.quoteValue));
    const m = 1 + shift;
    return {
      scenario: i - steps,
      shift,
      spotPrice: p.S * m,
      forwardPrice: (p.type === 'SPOT' ? p.S : p.F) * m,
      cells,
    };
  });
}
