/**
 * Vanilla valuation of the API (interface-spec.md section 2, "Vanilla valuation"): value and risk figures of
 * a European CALL, PUT or FORWARD, in BASE currency, times the nominal amount.
 *
 * Conventions (decisions.md "Quant conventions"; stated once in docs/conventions.md "Vanilla figures"):
 * - Model: Black-76 on the expiry's forward F, r = 0 (black76.ts). Volatility sigma is the implied vol at
 *   the strike and is held fixed in every bump (sticky strike).
 * - Inverse (coin-settled, `inverse: true`): value in coin = Black-76 quote price / F. Linear: value in
 *   quote currency, and a value-like "Base" figure is the quote figure / S (spot index).
 * - deltaBase: a number of base-currency units (coins) of forward exposure. Which delta, per
 *   {@link deltaConvention}: PREMIUM_ADJUSTED (inverse with DERIBIT or OKX): N(d1) - (value in coin) =
 *   F d(value in coin)/dF, Deribit's account delta for inverse options; FORWARD (everything else): the plain
 *   forward Black delta N(d1) (call) or N(d1) - 1 (put), as the tickers print it.
 * - gammaBase = d(deltaBase)/dF, per one quote-currency unit of the forward (Deribit's greeks.gamma unit).
 * - vegaBase, vannaBase per 0.01 vol (one vol point): vegaBase = d(valueBase)/dsigma * 0.01,
 *   vannaBase = d(deltaBase)/dsigma * 0.01. volgaBase = d2(valueBase)/dsigma2 * 0.01^2.
 * - One-day figures with dt = 1/365 and T' = max(T - dt, 0) (an option with less than a day left is
 *   valued at expiry, i.e. intrinsic):
 *   thetaBase = value(F, T') - value(F, T) (forward, spot, vol fixed);
 *   deltaDecayBase = delta(F, T') - delta(F, T);
 *   carryBase = value(F', T') - value(F, T'), F' = S (F/S)^(T'/T): the forward rolled down the basis at
 *   fixed spot, fixed annualized basis b = ln(F/S)/T and fixed vol;
 *   totalThetaBase = value(F', T') - value(F, T) = thetaBase + carryBase.
 * - rhoBase = value(F e^{0.01 T}, T) - value(F, T): the basis rate b (F = S e^{bT}) bumped by 1 % (0.01)
 *   at fixed spot and vol, one-sided as the spec's "change of valueBase per 1% change".
 * - intrinsicValueBase on the forward: max(F - K, 0) (call) or max(K - F, 0) (put), / F (inverse) or / S
 *   (linear); timeValueBase = valueBase - intrinsicValueBase.
 * - FORWARD: linear value F - K (quote), inverse value 1 - K/F (coin per coin of nominal: an inverse
 *   forward of USD notional amount * K pays amount * K (1/K - 1/F) coin). Without a strike, K = F (struck at
 *   today's forward: value 0, delta 1 (FORWARD convention) or K/F = 1 (PREMIUM_ADJUSTED)). A forward has
 *   no vega, volga, vanna or theta; its carry and rho come from the forward moving.
 *
 * Analytic Greeks (black76Greeks) are used for delta, gamma, vega, volga, vanna; finite differences only
 * where the convention is itself a bump (the one-day figures and rho).
 * Sources: Black (1976); Haug (2007) ch. 2 for the analytic Greeks; decisions.md "Quant conventions" for
 * the premium-adjusted coin delta of Deribit's account (BS delta - mark price in coin) and the units.
 * Tested in test/quant/vanilla.test.ts.
 */
import { black76Greeks, type OptionType } from './black76.js';

/** Instrument kinds of the vanilla endpoint. */
export type VanillaType = 'CALL' | 'PUT' | 'FORWARD';

/** Exchange valuation conventions (wire values; OTC is mapped to DERIBIT at the API edge). */
export type PriceMethod = 'DERIBIT' | 'OKX' | 'BYBIT';

/**
 * Which delta deltaBase reports.
 * - 'PREMIUM_ADJUSTED': N(d1) - value in coin (inverse options priced the Deribit/OKX way).
 * - 'FORWARD': the plain forward Black delta N(d1) (call) / N(d1) - 1 (put); 1 for a forward.
 */
export type DeltaConvention = 'PREMIUM_ADJUSTED' | 'FORWARD';

/** One calendar day in years ACT/365: the step of every "1-day" figure. */
export const ONE_DAY_YEARS = 1 / 365;
/** Volatility unit of vega and vanna: one vol point (0.01); volga uses its square. */
export const VOL_POINT = 0.01;
/** Bump of the annualized basis rate for rho: 1 % (0.01). */
export const RHO_BUMP = 0.01;

/** Inputs of {@link valueVanilla}. All prices in quote currency per one unit of base currency. */
export interface VanillaInput {
  /** Forward of the expiry, quote currency (> 0). */
  readonly F: number;
  /** Spot (index) price, quote currency (> 0). */
  readonly S: number;
  /** Strike, quote currency (> 0). Required for CALL and PUT; optional for FORWARD (default K = F). */
  readonly K?: number;
  /** Time to expiry in years ACT/365 (>= 0). */
  readonly T: number;
  /** Implied volatility at the strike, fraction (>= 0; unused for FORWARD). */
  readonly sigma: number;
  readonly type: VanillaType;
  /** True for coin-settled (inverse) instruments, false for linear (quote-settled). */
  readonly inverse: boolean;
  readonly priceMethod: PriceMethod;
  /** Nominal in base-currency units (negative for a short position). */
  readonly amount: number;
}

/** Figures of the vanilla response, all in BASE currency and multiplied by amount (docs/conventions.md). */
export interface VanillaResult {
  /** Value (coin for inverse; quote value / S for linear). */
  readonly valueBase: number;
  /** Delta in base-currency units, per {@link deltaConvention}. */
  readonly deltaBase: number;
  /** d(deltaBase)/dF per one quote-currency unit of the forward. */
  readonly gammaBase: number;
  /** d(valueBase)/dsigma per 0.01 vol. */
  readonly vegaBase: number;
  /** valueBase(T - 1 day) - valueBase(T), all else fixed. */
  readonly thetaBase: number;
  /** d2(valueBase)/dsigma2 per 0.01^2. */
  readonly volgaBase: number;
  /** d(deltaBase)/dsigma per 0.01 vol. */
  readonly vannaBase: number;
  /** deltaBase(T - 1 day) - deltaBase(T), all else fixed. */
  readonly deltaDecayBase: number;
  /** valueBase - intrinsicValueBase. */
  readonly timeValueBase: number;
  /** Intrinsic value on the forward, base currency. */
  readonly intrinsicValueBase: number;
  /** 1-day change of valueBase from the forward rolling down the basis (spot, basis rate, vol fixed), at T - 1 day. */
  readonly carryBase: number;
  /** valueBase(F e^{0.01 T}) - valueBase(F): the basis rate bumped by 1 %. */
  readonly rhoBase: number;
  /** 1-day change of valueBase with time and the forward rolling: thetaBase + carryBase. */
  readonly totalThetaBase: number;
}

/**
 * The delta convention of deltaBase for a price method (decisions.md: Deribit's account delta of inverse
 * options is premium-adjusted, BS delta minus mark price in coin; OKX's coin-margined option delta is the
 * same construction (OKX opt-summary `delta` vs `deltaBS`); Bybit options are linear and quote N(d1)).
 * Linear instruments always use the plain forward delta. This is the single switch issue 3 refines.
 */
export function deltaConvention(priceMethod: PriceMethod, inverse: boolean): DeltaConvention {
  if (!inverse) return 'FORWARD';
  switch (priceMethod) {
    case 'DERIBIT':
    case 'OKX':
      return 'PREMIUM_ADJUSTED';
    case 'BYBIT':
      return 'FORWARD';
  }
}

/**
 * Forward after `T - Tnew` years at fixed spot and fixed continuously-compounded basis rate
 * b = ln(F/S)/T: F' = S e^{b Tnew} = S (F/S)^(Tnew/T). At Tnew = 0 it is the spot. Returns F when T <= 0.
 */
export function rolledForward(F: number, S: number, T: number, Tnew: number): number {
  if (!(T > 0)) return F;
  return S * Math.pow(F / S, Tnew / T);
}

/** Quote-currency figures per one unit of base, for one instrument at (F, T). */
interface QuoteFigures {
  readonly value: number;
  readonly delta: number;
  readonly gamma: number;
  readonly vega: number;
  readonly volga: number;
  readonly vanna: number;
}

function checkPositive(name: string, v: number): void {
  if (!(v > 0 && Number.isFinite(v))) throw new RangeError(`valueVanilla: ${name} must be a finite number > 0, got ${v}`);
}

/** Quote-currency figures of one unit at forward f and T = t (a FORWARD: f - K, delta 1). Black-76 (black76.ts). */
function quoteFigures(f: number, t: number, K: number, sigma: number, optionType: OptionType | undefined): QuoteFigures {
  if (optionType === undefined) return { value: f - K, delta: 1, gamma: 0, vega: 0, volga: 0, vanna: 0 };
  const g = black76Greeks(f, K, t, sigma, optionType);
  return { value: g.price, delta: g.delta, gamma: g.gamma, vega: g.vega, volga: g.volga, vanna: g.vanna };
}

/** Base-currency units per quote unit at forward f: 1/f for an inverse (coin-settled) option, 1/S for a linear one. */
function baseUnit(f: number, S: number, inverse: boolean): number {
  return inverse ? 1 / f : 1 / S;
}

/** The delta in base currency: premium-adjusted N(d1) - V/F (value in quote units over f), or the plain one. */
function baseDelta(q: QuoteFigures, f: number, premiumAdjusted: boolean): number {
  return premiumAdjusted ? q.delta - q.value / f : q.delta;
}

/**
 * Values a vanilla CALL, PUT or FORWARD: the response numbers of interface-spec.md section 2, in base
 * currency and multiplied by amount. Formulas and units: see the file header and docs/conventions.md.
 *
 * @throws RangeError when F, S are not finite > 0, T or sigma is negative or not finite, amount is not
 *   finite, or K is missing or not finite > 0 for a CALL/PUT (or given and not > 0 for a FORWARD)
 */
export function valueVanilla(input: VanillaInput): VanillaResult {
  const { F, S, T, sigma, type, inverse, priceMethod, amount } = input;
  checkPositive('forward F', F);
  checkPositive('spot S', S);
  if (!(T >= 0 && Number.isFinite(T))) throw new RangeError(`valueVanilla: T must be finite >= 0 years, got ${T}`);
  if (!(sigma >= 0 && Number.isFinite(sigma))) throw new RangeError(`valueVanilla: sigma must be finite >= 0, got ${sigma}`);
  if (!Number.isFinite(amount)) throw new RangeError(`valueVanilla: amount must be finite, got ${amount}`);
  if (type !== 'FORWARD' && input.K === undefined) throw new RangeError(`valueVanilla: strike K is required for a ${type}`);
  const K = input.K ?? F;
  checkPositive('strike K', K);

  const premiumAdjusted = deltaConvention(priceMethod, inverse) === 'PREMIUM_ADJUSTED';
  const optionType: OptionType | undefined = type === 'CALL' ? 'C' : type === 'PUT' ? 'P' : undefined;

  // Module functions rather than closures: this runs once per instrument of every request, and under tsx (keepNames)
  // every closure created costs a defineProperty of its name.
  const Tm = Math.max(T - ONE_DAY_YEARS, 0);
  const Fm = rolledForward(F, S, T, Tm);
  const now = quoteFigures(F, T, K, sigma, optionType);
  const dayLater = quoteFigures(F, Tm, K, sigma, optionType);
  const dayLaterRolled = quoteFigures(Fm, Tm, K, sigma, optionType);
  const bumped = quoteFigures(F * Math.exp(RHO_BUMP * T), T, K, sigma, optionType);
  const Fb = F * Math.exp(RHO_BUMP * T);

  const v0 = now.value * baseUnit(F, S, inverse);
  const delta0 = baseDelta(now, F, premiumAdjusted);
  const intrinsicQuote = optionType === 'C' ? Math.max(F - K, 0) : optionType === 'P' ? Math.max(K - F, 0) : F - K;
  const intrinsic = intrinsicQuote * baseUnit(F, S, inverse);

  // d(deltaBase)/dF and d(deltaBase)/dsigma for the premium-adjusted delta N(d1) - V/F.
  const gamma = premiumAdjusted ? now.gamma - now.delta / F + now.value / (F * F) : now.gamma;
  const vanna = premiumAdjusted ? now.vanna - now.vega / F : now.vanna;

  const theta = dayLater.value * baseUnit(F, S, inverse) - v0;
  const carry = dayLaterRolled.value * baseUnit(Fm, S, inverse) - dayLater.value * baseUnit(F, S, inverse);
  return {
    valueBase: amount * v0,
    deltaBase: amount * delta0,
    gammaBase: amount * gamma,
    vegaBase: amount * now.vega * baseUnit(F, S, inverse) * VOL_POINT,
    thetaBase: amount * theta,
    volgaBase: amount * now.volga * baseUnit(F, S, inverse) * VOL_POINT * VOL_POINT,
    vannaBase: amount * vanna * VOL_POINT,
    deltaDecayBase: amount * (baseDelta(dayLater, F, premiumAdjusted) - delta0),
    timeValueBase: amount * (v0 - intrinsic),
    intrinsicValueBase: amount * intrinsic,
    carryBase: amount * carry,
    rhoBase: amount * (bumped.value * baseUnit(Fb, S, inverse) - v0),
    totalThetaBase: amount * (dayLaterRolled.value * baseUnit(Fm, S, inverse) - v0),
  };
}
