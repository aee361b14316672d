/**
 * European barrier options (barrier observed at expiry only) and European digitals, priced by static
 * replication on the implied-volatility smile of the expiry: vanillas at the strike and at the barrier,
 * plus a cash digital at the barrier whose price carries the smile's skew term.
 *
 * Payoffs at expiry, S_T the underlying at expiry, K the strike, B the barrier (interface-spec.md section 1;
 * issue 5): the vanilla payoff (CALL (S_T - K)+, PUT (K - S_T)+, FORWARD S_T - K) times an indicator:
 *   UP_AND_OUT   alive when S_T < B        DOWN_AND_OUT  alive when S_T > B
 *   UP_AND_IN    alive when S_T >= B       DOWN_AND_IN   alive when S_T <= B
 * (the IN type is the complement of the OUT type of the same direction, so in + out = vanilla), and
 *   DIGITAL_CALL pays 1 when S_T > B,     DIGITAL_PUT pays 1 when S_T < B.
 * With the barrier seen at expiry only, UP_AND_OUT and DOWN_AND_IN have the same payoff (S_T below B), as
 * do DOWN_AND_OUT and UP_AND_IN (S_T above B).
 *
 * Replication (r = 0, discount factor 1, undiscounted quote-currency prices):
 *   E[(S_T - K)+ 1{S_T > B}] = C(max(K, B)) + max(B - K, 0) DC(B)
 *   E[(K - S_T)+ 1{S_T < B}] = P(min(K, B)) + max(K - B, 0) (1 - DC(B))
 * the other region being the vanilla minus that one; a FORWARD is the call minus the put of the same
 * region. C(X), P(X) are Black-76 prices with the smile vol sigma(X).
 * DC(B), the cash digital call, is minus the strike derivative of the call price along the smile
 * (Breeden and Litzenberger 1978):
 *   DC(B) = -dC/dK |_{K=B} = N(d2(B)) - vega(B) * dsigma/dK(B)
 * with vega = F phi(d1) sqrt T the Black-76 vega per 1.0 of vol; a flat smile gives the Black-Scholes
 * cash-or-nothing price N(d2) (Rubinstein and Reiner 1991; Haug 2007 ch. 4, binary options,
 * "Cash-or-Nothing Options"). The smile slope dsigma/dK is the analytic one when the caller gives it
 * (`smileSlope`: the SVI surface's dw/dk / (2 sigma T K)), else a central difference of the smile in log-strike,
 * step {@link SLOPE_LOG_STEP}.
 *
 * Greeks of the replication are analytic (each Black-76 leg's own Greeks, Haug 2007 ch. 2, and the
 * derivatives of N(d2) - c vega written out in {@link digitalCallFigures}), sticky strike: when the forward
 * moves or time passes, the vol of every strike stays where it is; a vol shift moves the whole smile in
 * parallel (the slope c is unchanged). The 1-day theta re-prices at T - 1 day. Units of the percent figures:
 * {@link valueEuBarrier} and docs/conventions.md "European barrier".
 *
 * Sources: D. T. Breeden and R. H. Litzenberger, "Prices of state-contingent claims implicit in option
 * prices", Journal of Business 51(4), 1978, 621-651 (the digital as minus the strike derivative of the call);
 * M. Rubinstein and E. Reiner, "Unscrambling the binary code", Risk 4(9), 1991 (cash-or-nothing);
 * E. G. Haug, "The Complete Guide to Option Pricing Formulas", 2nd ed., McGraw-Hill 2007, ch. 1 (Black-76),
 * ch. 2 (Greeks: vanna, volga, and DvolgaDvol), ch. 4 binary options, cash-or-nothing (example S = 100, X = 80,
 * T = 0.75, r = 0.06, b = 0, sigma = 0.35, cash 10: put 2.6710, reproduced in the test);
 * P. Carr, K. Ellis and V. Gupta, "Static hedging of exotic options", Journal of Finance 53(3), 1998
 * (static replication of barrier payoffs by vanillas and digitals).
 * Tested in test/quant/barrier.test.ts.
 */
import { black76Greeks, black76Price } from './black76.js';
import { normCdf, normPdf } from './normal.js';
import { ONE_DAY_YEARS, VOL_POINT } from './vanilla.js';

/** Option types of the euBarrier endpoint (interface-spec.md "europeanBarrierOptionType"). */
export type EuBarrierOptionType = 'CALL' | 'PUT' | 'FORWARD' | 'DIGITAL_CALL' | 'DIGITAL_PUT';
/** Barrier types (interface-spec.md "barrierType"); observed at expiry only. */
export type BarrierType = 'UP_AND_OUT' | 'DOWN_AND_OUT' | 'UP_AND_IN' | 'DOWN_AND_IN';

export const EU_BARRIER_OPTION_TYPES: readonly EuBarrierOptionType[] = ['CALL', 'PUT', 'FORWARD', 'DIGITAL_CALL', 'DIGITAL_PUT'];
export const BARRIER_TYPES: readonly BarrierType[] = ['UP_AND_OUT', 'DOWN_AND_OUT', 'UP_AND_IN', 'DOWN_AND_IN'];

/** Step in log-strike of the central difference giving the smile slope dsigma/dK (1e-4 = 1 bp of strike). */
export const SLOPE_LOG_STEP = 1e-4;
/** Percent: every percent figure is 100 times the fraction of nominal. */
const PERCENT = 100;
/** Relative forward move of percentGamma: 1 %. */
export const GAMMA_MOVE = 0.01;

/** True for DIGITAL_CALL and DIGITAL_PUT (they ignore strike and barrierType). */
export function isDigital(type: EuBarrierOptionType): boolean {
  return type === 'DIGITAL_CALL' || type === 'DIGITAL_PUT';
}

/**
 * One leg of a static replication: `weight` times a Black-76 call ('C') or put ('P') struck at `strike`,
 * a cash digital call paying 1 when S_T > strike ('DC'), or 1 unit of cash ('CASH', strike unused).
 */
export interface ReplicationLeg {
  readonly kind: 'C' | 'P' | 'DC' | 'CASH';
  readonly strike: number;
  readonly weight: number;
}

/** Inputs of a European barrier or digital. Prices in quote currency per one unit of base currency. */
export interface EuBarrierInput {
  /** Forward of the expiry, quote currency (> 0). */
  readonly F: number;
  /** Years to expiry ACT/365 (>= 0). */
  readonly T: number;
  /** The expiry's smile: implied vol (fraction) at strike K, quote currency. Held fixed in K (sticky strike). */
  readonly smile: (K: number) => number;
  /**
   * Its analytic slope d sigma / dK (optional; null or absent: the central difference {@link smileSlope}). The API
   * passes the SVI one (dw/dk of raw SVI, Gatheral 2004), exact where the finite difference costs up to 1e-4
   * relative on short expiries.
   */
  readonly smileSlope?: (K: number) => number | null;
  readonly type: EuBarrierOptionType;
  /** Strike (> 0); required for CALL, PUT and FORWARD, ignored for digitals. */
  readonly K?: number;
  /** Barrier type; required for CALL, PUT and FORWARD, ignored for digitals. */
  readonly barrierType?: BarrierType;
  /** Barrier level B (> 0), quote currency. */
  readonly B: number;
}

/** Region of S_T in which the payoff is alive. */
type Region = 'below' | 'above';

function aliveRegion(barrierType: BarrierType): Region {
  return barrierType === 'UP_AND_OUT' || barrierType === 'DOWN_AND_IN' ? 'below' : 'above';
}

function checkInput(input: EuBarrierInput): void {
  const { F, T, B, type } = input;
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`euBarrier: forward F must be finite > 0, got ${F}`);
  if (!(T >= 0 && Number.isFinite(T))) throw new RangeError(`euBarrier: T must be finite >= 0 years, got ${T}`);
  if (!(B > 0 && Number.isFinite(B))) throw new RangeError(`euBarrier: barrier B must be finite > 0, got ${B}`);
  if (!isDigital(type)) {
    if (input.K === undefined || !(input.K > 0 && Number.isFinite(input.K))) {
      throw new RangeError(`euBarrier: strike K must be finite > 0 for a ${type}, got ${input.K}`);
    }
    if (input.barrierType === undefined) throw new RangeError(`euBarrier: barrierType is required for a ${type}`);
  }
}

/** E[(S_T - K)+ 1{region}] as legs. */
function callLegs(K: number, B: number, region: Region, sign: number): ReplicationLeg[] {
  const above: ReplicationLeg[] = B <= K ? [{ kind: 'C', strike: K, weight: sign }] : [
    { kind: 'C', strike: B, weight: sign },
    { kind: 'DC', strike: B, weight: sign * (B - K) },
  ];
  if (region === 'above') return above;
  return [{ kind: 'C', strike: K, weight: sign }, ...above.map((l) => ({ ...l, weight: -l.weight }))];
}

/** E[(K - S_T)+ 1{region}] as legs. */
function putLegs(K: number, B: number, region: Region, sign: number): ReplicationLeg[] {
  const below: ReplicationLeg[] = B >= K ? [{ kind: 'P', strike: K, weight: sign }] : [
    { kind: 'P', strike: B, weight: sign },
    { kind: 'CASH', strike: B, weight: sign * (K - B) },
    { kind: 'DC', strike: B, weight: -sign * (K - B) },
  ];
  if (region === 'below') return below;
  return [{ kind: 'P', strike: K, weight: sign }, ...below.map((l) => ({ ...l, weight: -l.weight }))];
}

/**
 * The static replication of a European barrier or digital (module docstring): a list of legs whose
 * weighted sum of prices is the option's price, in quote currency per one unit of base (vanilla types) or
 * per one unit of cash paid (digitals).
 * @throws RangeError when K or barrierType is missing for CALL/PUT/FORWARD, or K, B is not finite > 0
 */
export function replicationLegs(type: EuBarrierOptionType, B: number, K?: number, barrierType?: BarrierType): ReplicationLeg[] {
  if (type === 'DIGITAL_CALL') return [{ kind: 'DC', strike: B, weight: 1 }];
  if (type === 'DIGITAL_PUT') return [{ kind: 'CASH', strike: B, weight: 1 }, { kind: 'DC', strike: B, weight: -1 }];
  if (K === undefined || !(K > 0) || barrierType === undefined) {
    throw new RangeError(`replicationLegs: a ${type} needs a strike > 0 and a barrierType`);
  }
  const region = aliveRegion(barrierType);
  if (type === 'CALL') return callLegs(K, B, region, 1);
  if (type === 'PUT') return putLegs(K, B, region, 1);
  return [...callLegs(K, B, region, 1), ...putLegs(K, B, region, -1)];
}

/**
 * Price and derivatives (quote currency, per unit; natural units: per unit of F, per 1.0 of vol) of one
 * replicated position. dF*: forward; dS*: parallel shift of the smile (every sigma(K) + eps).
 */
export interface ReplicationFigures {
  readonly price: number;
  readonly dF: number;
  readonly dFF: number;
  readonly dS: number;
  readonly dSS: number;
  readonly dFS: number;
}

const ZERO: ReplicationFigures = { price: 0, dF: 0, dFF: 0, dS: 0, dSS: 0, dFS: 0 };

/**
 * Smile slope dsigma/dK at K by a central difference in log-strike:
 * (sigma(K e^h) - sigma(K e^-h)) / (K (e^h - e^-h)), h = {@link SLOPE_LOG_STEP}.
 */
export function smileSlope(smile: (K: number) => number, K: number, h = SLOPE_LOG_STEP): number {
  const up = K * Math.exp(h);
  const dn = K * Math.exp(-h);
  return (smile(up) - smile(dn)) / (up - dn);
}

/**
 * The cash digital call DC = N(d2) - c * vega (Breeden-Litzenberger with the skew term; module docstring),
 * at forward F, barrier B, T years, vol sigma at B and smile slope c = dsigma/dK at B, and its analytic
 * derivatives in F and in a parallel vol shift (c fixed). With s = sigma sqrt T, phi the normal density:
 *   dN(d2)/dF = phi(d2)/(F s),            d2N(d2)/dF2 = -phi(d2) d1/(F s)^2
 *   dN(d2)/dsigma = -phi(d2) d1/sigma,    d2N(d2)/dsigma2 = -phi(d2)(d1^2 d2 - d1 - d2)/sigma^2
 *   d2N(d2)/dF dsigma = phi(d2)(d1 d2 - 1)/(F s sigma)
 *   dvega/dF = vanna = -phi(d1) d2/sigma, d2vega/dF2 = phi(d1)(d1 d2 - 1)/(F s sigma)
 *   dvega/dsigma = volga = vega d1 d2/sigma, d2vega/dsigma2 = vega (d1^2 d2^2 - d1 d2 - d1^2 - d2^2)/sigma^2
 *   d2vega/dF dsigma = -phi(d1)(d1 d2^2 - d1 - d2)/sigma^2
 * (Haug 2007 ch. 2: vanna, volga = DvegaDvol, DvolgaDvol ("ultima"); the N(d2) lines differentiate
 * d1 = ln(F/B)/s + s/2, d2 = d1 - s, with dd1/dsigma = -d2/sigma, dd2/dsigma = -d1/sigma, dd/dF = 1/(F s)).
 * Degenerate s = 0 (T = 0 or sigma <= 0): the payoff at F (1 above B, 0 below, 1/2 at B), no Greeks.
 */
export function digitalCallFigures(F: number, B: number, T: number, sigma: number, c: number): ReplicationFigures {
  const s = T > 0 && sigma > 0 ? sigma * Math.sqrt(T) : 0;
  if (s === 0) return { ...ZERO, price: F > B ? 1 : F < B ? 0 : 0.5 };
  const d1 = Math.log(F / B) / s + 0.5 * s;
  const d2 = d1 - s;
  const p1 = normPdf(d1);
  const p2 = normPdf(d2);
  const vega = F * p1 * Math.sqrt(T);
  const Fs = F * s;
  const sig2 = sigma * sigma;
  const nd2 = { v: normCdf(d2), F: p2 / Fs, FF: (-p2 * d1) / (Fs * Fs), S: (-p2 * d1) / sigma, SS: (-p2 * (d1 * d1 * d2 - d1 - d2)) / sig2, FS: (p2 * (d1 * d2 - 1)) / (Fs * sigma) };
  const vg = {
    v: vega,
    F: (-p1 * d2) / sigma,
    FF: (p1 * (d1 * d2 - 1)) / (Fs * sigma),
    S: (vega * d1 * d2) / sigma,
    SS: (vega * (d1 * d1 * d2 * d2 - d1 * d2 - d1 * d1 - d2 * d2)) / sig2,
    FS: (-p1 * (d1 * d2 * d2 - d1 - d2)) / sig2,
  };
  return {
    price: nd2.v - c * vg.v,
    dF: nd2.F - c * vg.F,
    dFF: nd2.FF - c * vg.FF,
    dS: nd2.S - c * vg.S,
    dSS: nd2.SS - c * vg.SS,
    dFS: nd2.FS - c * vg.FS,
  };
}

/** Figures of one leg at (F, T), with the smile shifted in parallel by volShift. */
function legFigures(leg: ReplicationLeg, F: number, T: number, smile: (K: number) => number, volShift: number, slope?: (K: number) => number | null): ReplicationFigures {
  if (leg.kind === 'CASH') return { ...ZERO, price: 1 };
  const sigma = smile(leg.strike) + volShift;
  if (leg.kind === 'DC') {
    const analytic = slope ? slope(leg.strike) : null;
    return digitalCallFigures(F, leg.strike, T, sigma, analytic !== null && Number.isFinite(analytic) ? analytic : smileSlope(smile, leg.strike));
  }
  const g = black76Greeks(F, leg.strike, T, sigma, leg.kind);
  return { price: g.price, dF: g.delta, dFF: g.gamma, dS: g.vega, dSS: g.volga, dFS: g.vanna };
}

/**
 * Price and analytic Greeks of the replication, quote currency per unit (vanilla types: per one unit of
 * base; digitals: per one unit of cash paid), sticky strike. `volShift` shifts the whole smile in parallel
 * (used by tests for finite differences; 0 for the market).
 * @throws RangeError on invalid inputs (see {@link replicationLegs})
 */
export function euBarrierFigures(input: EuBarrierInput, volShift = 0): ReplicationFigures {
  checkInput(input);
  const legs = replicationLegs(input.type, input.B, input.K, input.barrierType);
  let price = 0, dF = 0, dFF = 0, dS = 0, dSS = 0, dFS = 0;
  for (const leg of legs) {
    const f = legFigures(leg, input.F, input.T, input.smile, volShift, input.smileSlope);
    price += leg.weight * f.price;
    dF += leg.weight * f.dF;
    dFF += leg.weight * f.dFF;
    dS += leg.weight * f.dS;
    dSS += leg.weight * f.dSS;
    dFS += leg.weight * f.dFS;
  }
  return { price, dF, dFF, dS, dSS, dFS };
}

/**
 * Price of a European barrier or digital by replication: quote currency per one unit of base (CALL, PUT,
 * FORWARD) or per one unit of cash paid (digitals), r = 0. Only the price legs are evaluated (no Greeks).
 * @throws RangeError on invalid inputs
 */
export function euBarrierPrice(input: EuBarrierInput, volShift = 0): number {
  checkInput(input);
  let price = 0;
  for (const leg of replicationLegs(input.type, input.B, input.K, input.barrierType)) {
    let p: number;
    if (leg.kind === 'CASH') p = 1;
    else if (leg.kind === 'DC') {
      const sigma = input.smile(leg.strike) + volShift;
      const analytic = input.smileSlope ? input.smileSlope(leg.strike) : null;
      p = digitalCallFigures(input.F, leg.strike, input.T, sigma, analytic !== null && Number.isFinite(analytic) ? analytic : smileSlope(input.smile, leg.strike)).price;
    } else p = black76Price(input.F, leg.strike, input.T, input.smile(leg.strike) + volShift, leg.kind);
    price += leg.weight * p;
  }
  return price;
}

/**
 * Nominal of the percent figures, in quote currency: the forward F (one unit of base valued at today's
 * forward) for CALL, PUT and FORWARD; 1 (the cash paid) for digitals (docs/conventions.md "European barrier").
 */
export function euBarrierNominal(type: EuBarrierOptionType, F: number): number {
  return isDigital(type) ? 1 : F;
}

/** The percent figures of the euBarrier response (interface-spec.md section 1), see {@link valueEuBarrier}. */
export interface EuBarrierResult {
  /** Smile vol at the strike (CALL, PUT, FORWARD) or at the barrier (digitals), fraction. */
  readonly impliedVolatility: number;
  readonly percentPrice: number;
  readonly percentDelta: number;
  readonly percentGamma: number;
  readonly percentVega: number;
  readonly percentTheta: number;
  readonly percentVolga: number;
  readonly percentVanna: number;
}

/**
 * Value and Greeks of a European barrier or digital as percents of the nominal N
 * ({@link euBarrierNominal}; held fixed in every bump), V the replication price in quote currency per unit
 * (sticky strike, module docstring), F today's forward:
 *   percentPrice = 100 V / N                          (CALL/PUT on an inverse pair: 100 x the coin price V/F)
 *   percentDelta = 100 F dV/dF / N                    (base units of forward per 100 units of nominal)
 *   percentGamma = 100 * 0.01 F^2 d2V/dF2 / N         (change of percentDelta for a 1 % move of F)
 *   percentVega  = 100 * 0.01 dV/dsigma / N           (parallel smile shift of one vol point)
 *   percentVolga = 100 * 0.01^2 d2V/dsigma2 / N
 *   percentVanna = 100 * 0.01 F d2V/dF dsigma / N     (change of percentDelta per vol point)
 *   percentTheta = 100 (V(T - 1 day) - V(T)) / N      (F and the smile in strike fixed; T - 1 day floored at 0)
 * @throws RangeError on invalid inputs
 */
export function valueEuBarrier(input: EuBarrierInput): EuBarrierResult {
  const fig = euBarrierFigures(input);
  const { F, T, type } = input;
  const N = euBarrierNominal(type, F);
  const dayLater = euBarrierPrice({ ...input, T: Math.max(T - ONE_DAY_YEARS, 0) });
  const volAt = isDigital(type) ? input.B : (input.K as number);
  return {
    impliedVolatility: input.smile(volAt),
    percentPrice: (PERCENT * fig.price) / N,
    percentDelta: (PERCENT * F * fig.dF) / N,
    percentGamma: (PERCENT * GAMMA_MOVE * F * F * fig.dFF) / N,
    percentVega: (PERCENT * VOL_POINT * fig.dS) / N,
    percentTheta: (PERCENT * (dayLater - fig.price)) / N,
    percentVolga: (PERCENT * VOL_POINT * VOL_POINT * fig.dSS) / N,
    percentVanna: (PERCENT * VOL_POINT * F * fig.dFS) / N,
  };
}
