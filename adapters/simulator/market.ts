/**
 * Exchange-neutral stochastic crypto market: the engine behind every simulated exchange
 * (Deribit now; OKX and Bybit protocols will be added on top of the same engine).
 *
 * Per underlying (BTC, ETH, SOL, XRP) it evolves, deterministically given a seed:
 * - the index (spot) S: lognormal with stochastic volatility, dS/S = sigma0 dW1;
 * - the short-end ATM volatility sigma0 and the long-end ATM volatility sigmaInf: each a
 *   mean-reverting Ornstein-Uhlenbeck process in log (lognormal vol-of-vol, a Scott/Stein-Stein
 *   style model in log vol), sigma0 correlated with spot (negatively for BTC/ETH);
 * - an SSVI smile per expiry (Gatheral and Jacquier, "Arbitrage-free SVI volatility surfaces",
 *   Quantitative Finance 14 (2014) 59-71, eq. (4.1)): total variance in forward log-moneyness
 *   k = ln(K / F(T)),
 *     w(k, theta) = theta / 2 * (1 + rho phi k + sqrt((phi k + rho)^2 + 1 - rho^2)),
 *   with the power-law phi(theta) = eta / (theta^gamma (1 + theta)^(1 - gamma)) (their eq. (4.5)).
 *   theta(T) = sigmaAtm(T)^2 T is the ATM total variance, sigmaAtm(T) = sigmaInf +
 *   (sigma0 - sigmaInf) exp(-T / tau). rho and eta move slowly (OU, rho shocks correlated with
 *   spot) and are clamped so that eta (1 + |rho|) <= 2 - margin and 0 < gamma <= 1/2: no butterfly
 *   arbitrage at any time (their Theorem 4.2 and Remark 4.4), and sigma0 <= 3 sigmaInf keeps
 *   theta(T) increasing in T (d/dT[sigma^2 T] >= 0 needs sigma0 <= 3.24 sigmaInf for this
 *   exponential term structure), so no calendar arbitrage (their Theorem 4.1). Because the
 *   smile is in forward log-moneyness it moves with spot (sticky-moneyness, close to
 *   sticky-delta);
 * - a futures basis term structure: annualized simple basis y(T) = yInf + (y0 - yInf) exp(-T / tauB)
 *   with y0, yInf slow OU processes, forward F(T) = S (1 + y(T) T) (the convention of
 *   docs/spec/decisions.md: value = (F / S - 1) / T);
 * - a perpetual premium p (8-hour rate, OU, reverting within hours) with a funding rate
 *   f = sign(p) max(|p| - damper, 0) (Deribit's damped funding formula, docs.deribit.com
 *   "Perpetual" article), accrued hourly into interest_1h = integral f dt / 8h and
 *   interest_8h = sum of the last 8 interest_1h (docs: public/get_funding_rate_history). The
 *   perpetual's mark is S (1 + p).
 *
 * Time: `now` is the simulator clock in Unix MILLISECONDS (wall clock by default, injectable).
 * step(dtS) evolves the stochastic state by dtS seconds (years = seconds / (365 * 86400)) and
 * records an hourly funding point whenever `now` passes a whole UTC hour.
 */
import { black76ImpliedVol, black76Price } from './black76.js';
import { Rng, hash01 } from './rng.js';

/**
 * Jump component of the simulated market (Merton 1976): Poisson jumps of intensity `lambda` per year in the
 * underlying, log-jump sizes normal with mean `mu` and standard deviation `delta`. The marks are Merton's
 * jump-diffusion prices on top of the SSVI diffusive smile, so the smiles are OUTSIDE the SVI family (steeper,
 * jump-driven short-dated wings), as real crypto smiles are. R. C. Merton, "Option pricing when underlying stock
 * returns are discontinuous", Journal of Financial Economics 3 (1976) 125-144, eq. (16); E. G. Haug, "The Complete
 * Guide to Option Pricing Formulas", 2nd ed. 2007, sec. 6.3 (Merton jump-diffusion).
 */
export const JUMPS = { lambda: 1.5, mu: -0.05, delta: 0.08 } as const;

/**
 * Mark noise and Deribit-like plateaus of the simulated MARKS (not of the model smile): each strike's mark IV is
 * the model IV plus a noise of standard deviation `noiseVolPts` (1 + |z|/2) vol points, z the standardized
 * moneyness, redrawn every `noiseRefreshMs` (stable in between, as exchange marks are); on expiries closer than
 * `plateauDays` (the shortest, hours-to-expiry one) the marks beyond |z| = `plateauZ` are flat at the boundary's IV (Deribit marks the far wings of its
 * shortest expiries at one flat IV; the recorded 2026-05-26 chain, 29MAY26 calls from 89k to 105k at 62.53 %).
 */
export const MARK_NOISE = { noiseVolPts: 0.15, noiseRefreshMs: 60_000, plateauDays: 1, plateauZ: 2 } as const;

/** A standard normal draw from a string key (Box-Muller on two FNV-1a hashes; deterministic). */
function hashNormal(key: string): number {
  const u1 = Math.max(hash01(`${key}:a`), 1e-12);
  const u2 = hash01(`${key}:b`);
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** Underlyings the engine simulates. */
export const UNDERLYINGS = ['BTC', 'ETH', 'SOL', 'XRP'] as const;
export type Underlying = (typeof UNDERLYINGS)[number];

/** Seconds per year, ACT/365. */
export const SECONDS_PER_YEAR = 365 * 86400;
/** Milliseconds per year, ACT/365. */
export const MS_PER_YEAR = SECONDS_PER_YEAR * 1000;
const HOUR_MS = 3_600_000;

/** A mean-reverting process: OU in `log` of the level for vols, in the level otherwise. */
export interface OuParams {
  /** Long-run mean (a vol as a FRACTION, a basis as a fraction per year, a premium as an 8h rate). */
  readonly mean: number;
  /** Mean-reversion speed per year. */
  readonly kappa: number;
  /** Diffusion per sqrt(year) (of log level for vols). */
  readonly vol: number;
}

/** Parameters of one underlying. All vols are fractions per sqrt(year); times in years. */
export interface UnderlyingParams {
  /** Starting index price, quote currency (USD for BTC/ETH, USDC for SOL/XRP). */
  readonly spot0: number;
  /** Short-end ATM vol sigma0 (log-OU). */
  readonly shortVol: OuParams;
  /** Long-end ATM vol sigmaInf (log-OU). */
  readonly longVol: OuParams;
  /** Decay time of the ATM term structure, years. */
  readonly termTau: number;
  /** Correlation of spot and short-vol shocks (negative: vol rises when spot falls). */
  readonly spotVolCorr: number;
  /** SSVI rho (skew), OU in level, clamped to [rhoMin, rhoMax]. */
  readonly ssviRho: OuParams;
  readonly rhoMin: number;
  readonly rhoMax: number;
  /** Correlation of rho shocks with spot shocks (positive: skew steepens when spot falls). */
  readonly rhoSpotCorr: number;
  /** SSVI eta (curvature level), OU in level, clamped to (etaMin, (2 - 0.05) / (1 + |rho|)]. */
  readonly ssviEta: OuParams;
  readonly etaMin: number;
  /** SSVI gamma in (0, 0.5]. */
  readonly ssviGamma: number;
  /** Short-end annualized basis y0 (OU in level). */
  readonly basisShort: OuParams;
  /** Long-end annualized basis yInf (OU in level). */
  readonly basisLong: OuParams;
  /** Basis term-structure decay time, years. */
  readonly basisTau: number;
  /** Perpetual premium p as an 8-hour rate (OU in level; kappa per year). */
  readonly premium: OuParams;
  /** Funding damper: f = sign(p) max(|p| - damper, 0), 8-hour rate. */
  readonly fundingDamper: number;
}

const HOURLY_KAPPA = 8760; // 1 per hour, in per-year units

/** Default parameters (levels from the brief and from recorded Deribit chains). */
export const DEFAULT_PARAMS: Readonly<Record<Underlying, UnderlyingParams>> = {
  BTC: {
    spot0: 90_000,
    shortVol: { mean: 0.48, kappa: 6, vol: 1.3 },
    longVol: { mean: 0.52, kappa: 2, vol: 0.45 },
    termTau: 0.25,
    spotVolCorr: -0.5,
    ssviRho: { mean: -0.25, kappa: 4, vol: 0.25 },
    rhoMin: -0.7,
    rhoMax: 0.4,
    rhoSpotCorr: 0.3,
    ssviEta: { mean: 1.0, kappa: 4, vol: 0.3 },
    etaMin: 0.3,
    ssviGamma: 0.5,
    basisShort: { mean: 0.045, kappa: 3, vol: 0.03 },
    basisLong: { mean: 0.035, kappa: 2, vol: 0.015 },
    basisTau: 0.3,
    premium: { mean: 1.5e-4, kappa: HOURLY_KAPPA, vol: 2e-4 * Math.sqrt(2 * HOURLY_KAPPA) },
    fundingDamper: 1e-4,
  },
  ETH: {
    spot0: 3_000,
    shortVol: { mean: 0.63, kappa: 6, vol: 1.3 },
    longVol: { mean: 0.68, kappa: 2, vol: 0.45 },
    termTau: 0.25,
    spotVolCorr: -0.4,
    ssviRho: { mean: -0.18, kappa: 4, vol: 0.25 },
    rhoMin: -0.7,
    rhoMax: 0.4,
    rhoSpotCorr: 0.3,
    ssviEta: { mean: 1.05, kappa: 4, vol: 0.3 },
    etaMin: 0.3,
    ssviGamma: 0.5,
    basisShort: { mean: 0.05, kappa: 3, vol: 0.035 },
    basisLong: { mean: 0.04, kappa: 2, vol: 0.02 },
    basisTau: 0.3,
    premium: { mean: 1.5e-4, kappa: HOURLY_KAPPA, vol: 2.5e-4 * Math.sqrt(2 * HOURLY_KAPPA) },
    fundingDamper: 1e-4,
  },
  SOL: {
    spot0: 150,
    shortVol: { mean: 0.78, kappa: 6, vol: 1.3 },
    longVol: { mean: 0.8, kappa: 2, vol: 0.45 },
    termTau: 0.25,
    spotVolCorr: -0.3,
    ssviRho: { mean: -0.08, kappa: 4, vol: 0.25 },
    rhoMin: -0.7,
    rhoMax: 0.5,
    rhoSpotCorr: 0.2,
    ssviEta: { mean: 1.1, kappa: 4, vol: 0.3 },
    etaMin: 0.3,
    ssviGamma: 0.5,
    basisShort: { mean: 0.06, kappa: 3, vol: 0.04 },
    basisLong: { mean: 0.05, kappa: 2, vol: 0.02 },
    basisTau: 0.3,
    premium: { mean: 1e-4, kappa: HOURLY_KAPPA, vol: 3e-4 * Math.sqrt(2 * HOURLY_KAPPA) },
    fundingDamper: 1e-4,
  },
  XRP: {
    spot0: 2.2,
    shortVol: { mean: 0.88, kappa: 6, vol: 1.3 },
    longVol: { mean: 0.9, kappa: 2, vol: 0.45 },
    termTau: 0.25,
    spotVolCorr: 0.0,
    ssviRho: { mean: 0.05, kappa: 4, vol: 0.25 },
    rhoMin: -0.6,
    rhoMax: 0.6,
    rhoSpotCorr: 0.1,
    ssviEta: { mean: 1.2, kappa: 4, vol: 0.3 },
    etaMin: 0.3,
    ssviGamma: 0.5,
    basisShort: { mean: 0.06, kappa: 3, vol: 0.04 },
    basisLong: { mean: 0.05, kappa: 2, vol: 0.02 },
    basisTau: 0.3,
    premium: { mean: 1e-4, kappa: HOURLY_KAPPA, vol: 3e-4 * Math.sqrt(2 * HOURLY_KAPPA) },
    fundingDamper: 1e-4,
  },
};

/** One hourly funding point, in Deribit's get_funding_rate_history units. */
export interface FundingPoint {
  /** End of the hour, Unix ms (a whole UTC hour). */
  readonly timestamp: number;
  /** Index at the end of the hour. */
  readonly index_price: number;
  /** Index at the start of the hour. */
  readonly prev_index_price: number;
  /** Funding accrued over the hour (fraction of notional). */
  readonly interest_1h: number;
  /** Sum of the last 8 interest_1h (fraction of notional over the trailing 8 hours). */
  readonly interest_8h: number;
}

/** SSVI smile parameters of an underlying at the current time. */
export interface SsviParams {
  readonly rho: number;
  readonly eta: number;
  readonly gamma: number;
}

/** Perpetual funding state of an underlying at the current time. */
export interface FundingState {
  /** Perpetual premium over the index, 8-hour rate (mark = S (1 + premium)). */
  readonly premium: number;
  /** Instantaneous damped funding rate, 8-hour rate (Deribit ticker `current_funding`). */
  readonly currentFunding: number;
  /** Funding accrued over the trailing 8 hours (Deribit ticker `funding_8h`). */
  readonly funding8h: number;
  /** Cumulative funding index (Deribit ticker `interest_value`). */
  readonly interestValue: number;
}

/** Options of {@link Market}. */
export interface MarketOptions {
  /** PRNG seed (integer). Default 42. */
  readonly seed?: number;
  /** Simulator clock, Unix ms. Default `Date.now`. */
  readonly clock?: () => number;
  /** Per-underlying parameter overrides. */
  readonly params?: Partial<Record<Underlying, Partial<UnderlyingParams>>>;
  /** Hours of funding history generated before the start (default 30 days = 720). */
  readonly historyHours?: number;
}

interface State {
  readonly p: UnderlyingParams;
  readonly rng: Rng;
  lnS: number;
  lnShort: number;
  lnLong: number;
  rho: number;
  eta: number;
  yShort: number;
  yLong: number;
  premium: number;
  /** Funding accrued since the last whole hour. */
  acc: number;
  /** Cumulative funding index (sum of all interest_1h) up to the last whole hour. */
  cumulative: number;
  lastHourMs: number;
  lastHourIndex: number;
  readonly history: FundingPoint[];
}

/** Keep at most this many hourly points in memory (90 days). */
const MAX_HISTORY = 24 * 90;

/** Exact OU update over dt (years) with a standard normal z. */
function ou(x: number, mean: number, kappa: number, vol: number, dt: number, z: number): number {
  if (dt <= 0) return x;
  const e = Math.exp(-kappa * dt);
  const sd = kappa > 0 ? vol * Math.sqrt((1 - e * e) / (2 * kappa)) : vol * Math.sqrt(dt);
  return mean + (x - mean) * e + sd * z;
}

function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

/** Damped funding rate f(p) = sign(p) max(|p| - d, 0). */
function dampedFunding(p: number, damper: number): number {
  return Math.sign(p) * Math.max(Math.abs(p) - damper, 0);
}

/**
 * SSVI power-law phi(theta) = eta / (theta^gamma (1 + theta)^(1 - gamma)).
 * Source: Gatheral and Jacquier (2014) eq. (4.5).
 */
export function ssviPhi(theta: number, eta: number, gamma: number): number {
  return eta / (Math.pow(theta, gamma) * Math.pow(1 + theta, 1 - gamma));
}

/**
 * SSVI total implied variance w(k) for ATM total variance theta.
 * Source: Gatheral and Jacquier (2014) eq. (4.1).
 * @param k forward log-moneyness ln(K / F).
 */
export function ssviTotalVariance(k: number, theta: number, s: SsviParams): number {
  if (!(theta > 0)) return 0;
  const phi = ssviPhi(theta, s.eta, s.gamma);
  const pk = phi * k;
  return (theta / 2) * (1 + s.rho * pk + Math.sqrt((pk + s.rho) * (pk + s.rho) + 1 - s.rho * s.rho));
}

/**
 * The stochastic market. Deterministic: the same seed, start time and sequence of step() calls
 * give the same numbers.
 */
export class Market {
  /** Underlyings simulated, in a fixed order. */
  readonly underlyings: readonly Underlying[] = UNDERLYINGS;
  /** Seed the market was built with. */
  readonly seed: number;
  private readonly clock: () => number;
  private readonly states: Record<Underlying, State>;
  /** Mark IV shifts (fraction) by strike-key prefix ({@link shiftMarks}). */
  private readonly markShifts = new Map<string, number>();

  /** @throws Error when a parameter override is invalid (gamma outside (0, 0.5], spot0 <= 0). */
  constructor(opts: MarketOptions = {}) {
    this.seed = opts.seed ?? 42;
    this.clock = opts.clock ?? Date.now;
    const startMs = this.clock();
    const historyHours = opts.historyHours ?? 720;
    const states = {} as Record<Underlying, State>;
    for (const u of UNDERLYINGS) {
      const p: UnderlyingParams = { ...DEFAULT_PARAMS[u], ...(opts.params?.[u] ?? {}) };
      if (!(p.spot0 > 0)) throw new Error(`simulator market: ${u} spot0 must be > 0`);
      if (!(p.ssviGamma > 0 && p.ssviGamma <= 0.5)) throw new Error(`simulator market: ${u} ssviGamma must be in (0, 0.5]`);
      const rng = Rng.derive(this.seed, `market:${u}`);
      const st: State = {
        p,
        rng,
        lnS: Math.log(p.spot0),
        lnShort: Math.log(p.shortVol.mean),
        lnLong: Math.log(p.longVol.mean),
        rho: p.ssviRho.mean,
        eta: p.ssviEta.mean,
        yShort: p.basisShort.mean,
        yLong: p.basisLong.mean,
        premium: p.premium.mean,
        acc: 0,
        cumulative: 0,
        lastHourMs: Math.floor(startMs / HOUR_MS) * HOUR_MS,
        lastHourIndex: p.spot0,
        history: [],
      };
      this.buildHistory(st, historyHours, Rng.derive(this.seed, `history:${u}`));
      // Funding accrued from the last whole hour to the start.
      st.acc = (dampedFunding(st.premium, p.fundingDamper) * (startMs - st.lastHourMs)) / (8 * HOUR_MS);
      states[u] = st;
    }
    this.states = states;
  }

  /** Simulator time, Unix ms. */
  get now(): number {
    return this.clock();
  }

  /**
   * Advance the stochastic state by dtS seconds (>= 0; 0 is a no-op for the diffusions) and
   * record hourly funding points for every whole UTC hour `now` has passed.
   */
  step(dtS: number): void {
    const dt = Math.max(0, dtS) / SECONDS_PER_YEAR;
    const nowMs = this.clock();
    for (const u of UNDERLYINGS) {
      const st = this.states[u];
      if (dt > 0) this.evolve(st, dt);
      this.rollHours(st, nowMs);
      if (dt > 0) st.acc += (dampedFunding(st.premium, st.p.fundingDamper) * dtS) / (8 * 3600);
    }
  }

  /** Index (spot) price, quote currency. */
  spot(u: Underlying): number {
    return Math.exp(this.states[u].lnS);
  }

  /** Annualized simple basis y(T) = (F / S - 1) / T, fraction per year; T in years. */
  annualizedBasis(u: Underlying, T: number): number {
    const st = this.states[u];
    return st.yLong + (st.yShort - st.yLong) * Math.exp(-Math.max(T, 0) / st.p.basisTau);
  }

  /** Forward price F(T) = S (1 + y(T) T) for T years ahead (S for T <= 0). */
  forward(u: Underlying, T: number): number {
    const t = Math.max(T, 0);
    return this.spot(u) * Math.max(0.5, 1 + this.annualizedBasis(u, t) * t);
  }

  /** Short-end and long-end ATM vols (fractions): sigma0, sigmaInf. */
  vols(u: Underlying): { readonly short: number; readonly long: number } {
    const st = this.states[u];
    return { short: Math.exp(st.lnShort), long: Math.exp(st.lnLong) };
  }

  /** ATM implied vol (fraction) at T years: sigmaInf + (sigma0 - sigmaInf) exp(-T / tau). */
  atmVol(u: Underlying, T: number): number {
    const st = this.states[u];
    const s0 = Math.exp(st.lnShort);
    const sInf = Math.exp(st.lnLong);
    return sInf + (s0 - sInf) * Math.exp(-Math.max(T, 0) / st.p.termTau);
  }

  /** ATM total implied variance theta(T) = atmVol(T)^2 T. */
  atmTotalVariance(u: Underlying, T: number): number {
    const v = this.atmVol(u, T);
    return v * v * Math.max(T, 0);
  }

  /** Current SSVI parameters of the underlying's smile. */
  smile(u: Underlying): SsviParams {
    const st = this.states[u];
    return { rho: st.rho, eta: st.eta, gamma: st.p.ssviGamma };
  }

  /** Total implied variance w(k, T) of the model (SSVI) smile at forward log-moneyness k = ln(K / F(T)). */
  totalVariance(u: Underlying, T: number, k: number): number {
    return ssviTotalVariance(k, this.atmTotalVariance(u, T), this.smile(u));
  }

  /**
   * Implied vol (fraction) of the model (SSVI) smile at T years and forward log-moneyness k; ATM vol for T <= 0. This
   * is the arbitrage-free surface the market evolves; the exchanges' MARKS ({@link markIv}) deviate from it.
   */
  impliedVol(u: Underlying, T: number, k: number): number {
    if (!(T > 0)) return this.atmVol(u, 0);
    return Math.sqrt(this.totalVariance(u, T, k) / T);
  }

  /**
   * Implied vol (fraction) of the Merton (1976) jump-diffusion price with the SSVI diffusive vol sigma(k) of the
   * strike ({@link JUMPS}): outside the SVI family (jump-driven short-dated wings),
   *   C(K) = sum_n e^{-lambda T} (lambda T)^n / n! Black76(F e^{-lambda kappa T} (1 + kappa)^n, K, sqrt(sigma^2 + n delta^2 / T)),
   *   kappa = e^{mu + delta^2/2} - 1 (the mixture's mean is F), inverted to a Black-76 vol on the out-of-the-money
   * side. Where the price underflows (beyond about 8 standard deviations) the diffusive vol is returned.
   */
  jumpImpliedVol(u: Underlying, T: number, k: number): number {
    if (!(T > 0)) return this.atmVol(u, 0);
    const sig2 = this.totalVariance(u, T, k) / T;
    const { lambda, mu, delta } = JUMPS;
    const kappa = Math.exp(mu + 0.5 * delta * delta) - 1;
    const K = Math.exp(k);
    const type = k >= 0 ? 'call' : 'put';
    let price = 0;
    let weight = Math.exp(-lambda * T);
    for (let n = 0; n < 12; n++) {
      if (n > 0) weight *= (lambda * T) / n;
      const Fn = Math.exp(-lambda * kappa * T) * Math.pow(1 + kappa, n);
      price += weight * black76Price(type, Fn, K, T, Math.sqrt(sig2 + (n * delta * delta) / T));
      if (n > lambda * T && weight < 1e-14) break;
    }
    if (!(price > 1e-12 * Math.min(K, 1))) return Math.sqrt(sig2);
    const iv = black76ImpliedVol(type, price, 1, K, T, Math.sqrt(sig2));
    return Number.isFinite(iv) && iv > 0 ? iv : Math.sqrt(sig2);
  }

  /**
   * The simulated exchange MARK IV of a strike (fraction): the jump-diffusion IV ({@link jumpImpliedVol}) with the
   * mark noise and the shortest-expiry plateaus of {@link MARK_NOISE}. `key` names the strike (the instrument name
   * without its C/P suffix: one mark IV per strike for the call and the put, as Deribit prints) so that its noise is
   * stable between refreshes.
   */
  markIv(u: Underlying, T: number, k: number, key: string): number {
    if (!(T > 0)) return this.atmVol(u, 0);
    let shift = 0;
    for (const [prefix, dv] of this.markShifts) if (key.startsWith(prefix)) shift += dv;
    const atm = this.atmVol(u, T) * Math.sqrt(T);
    let kk = k;
    if (T * 365 < MARK_NOISE.plateauDays) kk = Math.max(-MARK_NOISE.plateauZ * atm, Math.min(MARK_NOISE.plateauZ * atm, k));
    const iv = this.jumpImpliedVol(u, T, kk);
    const z = Math.abs(k) / Math.max(atm, 1e-9);
    const bucket = Math.floor(this.clock() / MARK_NOISE.noiseRefreshMs);
    const noise = (MARK_NOISE.noiseVolPts / 100) * (1 + 0.5 * Math.min(z, 6)) * hashNormal(`${this.seed}:${key}:${bucket}`);
    return Math.max(iv + noise + shift, 0.01);
  }

  /**
   * A scenario move of the marks (benchmarks, tests): from now on every mark IV whose strike key starts with
   * `keyPrefix` (e.g. `BTC-27NOV26-`: one Deribit expiry) is shifted by `dVol` (fraction, added to any earlier shift
   * of that prefix); the model smile underneath is unchanged. Settlement prices do not see it.
   * @throws RangeError when dVol is not finite or the prefix is empty
   */
  shiftMarks(keyPrefix: string, dVol: number): void {
    if (!keyPrefix || !Number.isFinite(dVol)) throw new RangeError(`shiftMarks: a non-empty prefix and a finite shift are required`);
    this.markShifts.set(keyPrefix, (this.markShifts.get(keyPrefix) ?? 0) + dVol);
  }

  /** Perpetual mark price S (1 + premium). */
  perpetualMark(u: Underlying): number {
    return this.spot(u) * (1 + this.states[u].premium);
  }

  /** Perpetual funding state now. */
  funding(u: Underlying): FundingState {
    const st = this.states[u];
    const h = st.history;
    const frac = clamp((this.clock() - st.lastHourMs) / HOUR_MS, 0, 1);
    let sum7 = 0;
    for (let i = Math.max(0, h.length - 7); i < h.length; i++) sum7 += h[i]!.interest_1h;
    const eighth = h.length >= 8 ? h[h.length - 8]!.interest_1h : 0;
    return {
      premium: st.premium,
      currentFunding: dampedFunding(st.premium, st.p.fundingDamper),
      funding8h: sum7 + st.acc + (1 - frac) * eighth,
      interestValue: st.cumulative + st.acc,
    };
  }

  /**
   * Hourly funding points with start <= timestamp <= end, ascending (Unix ms bounds).
   * Covers the generated history before the start and every hour passed since.
   */
  fundingHistory(u: Underlying, startMs: number, endMs: number): FundingPoint[] {
    return this.states[u].history.filter((x) => x.timestamp >= startMs && x.timestamp <= endMs);
  }

  /** A plain copy of the state numbers (for determinism checks and debugging). */
  snapshot(u: Underlying): Record<string, number> {
    const st = this.states[u];
    return {
      spot: this.spot(u),
      shortVol: Math.exp(st.lnShort),
      longVol: Math.exp(st.lnLong),
      rho: st.rho,
      eta: st.eta,
      basisShort: st.yShort,
      basisLong: st.yLong,
      premium: st.premium,
      fundingAccrued: st.acc,
    };
  }

  private evolve(st: State, dt: number): void {
    const p = st.p;
    const r = st.rng;
    const z1 = r.normal();
    const zv = p.spotVolCorr * z1 + Math.sqrt(1 - p.spotVolCorr * p.spotVolCorr) * r.normal();
    const zr = p.rhoSpotCorr * z1 + Math.sqrt(1 - p.rhoSpotCorr * p.rhoSpotCorr) * r.normal();
    const s0 = Math.exp(st.lnShort);
    st.lnS += -0.5 * s0 * s0 * dt + s0 * Math.sqrt(dt) * z1;
    st.lnShort = ou(st.lnShort, Math.log(p.shortVol.mean), p.shortVol.kappa, p.shortVol.vol, dt, zv);
    st.lnLong = ou(st.lnLong, Math.log(p.longVol.mean), p.longVol.kappa, p.longVol.vol, dt, r.normal());
    // Calendar-arbitrage guard on the term structure (see the file header), and sane bounds.
    st.lnLong = clamp(st.lnLong, Math.log(0.05), Math.log(5));
    st.lnShort = clamp(st.lnShort, st.lnLong - Math.log(4), st.lnLong + Math.log(3));
    st.rho = clamp(ou(st.rho, p.ssviRho.mean, p.ssviRho.kappa, p.ssviRho.vol, dt, zr), p.rhoMin, p.rhoMax);
    const etaMax = (2 - 0.05) / (1 + Math.abs(st.rho));
    st.eta = clamp(ou(st.eta, p.ssviEta.mean, p.ssviEta.kappa, p.ssviEta.vol, dt, r.normal()), p.etaMin, etaMax);
    st.yShort = clamp(ou(st.yShort, p.basisShort.mean, p.basisShort.kappa, p.basisShort.vol, dt, r.normal()), -0.3, 0.5);
    st.yLong = clamp(ou(st.yLong, p.basisLong.mean, p.basisLong.kappa, p.basisLong.vol, dt, r.normal()), -0.3, 0.5);
    st.premium = clamp(ou(st.premium, p.premium.mean, p.premium.kappa, p.premium.vol, dt, r.normal()), -0.01, 0.01);
  }

  /** Record one point per whole UTC hour passed since the last one. */
  private rollHours(st: State, nowMs: number): void {
    while (nowMs >= st.lastHourMs + HOUR_MS) {
      const ts = st.lastHourMs + HOUR_MS;
      this.pushPoint(st, ts, Math.exp(st.lnS), st.acc);
      st.acc = 0;
    }
  }

  private pushPoint(st: State, ts: number, index: number, interest1h: number): void {
    const h = st.history;
    let sum = interest1h;
    for (let i = Math.max(0, h.length - 7); i < h.length; i++) sum += h[i]!.interest_1h;
    h.push({
      timestamp: ts,
      index_price: index,
      prev_index_price: st.lastHourIndex,
      interest_1h: interest1h,
      interest_8h: sum,
    });
    if (h.length > MAX_HISTORY) h.splice(0, h.length - MAX_HISTORY);
    st.cumulative += interest1h;
    st.lastHourMs = ts;
    st.lastHourIndex = index;
  }

  /**
   * Hourly history before the start: premium simulated forward from its mean over `hours`
   * hours (ending at the current premium), index as a lognormal path ending at spot0.
   */
  private buildHistory(st: State, hours: number, rng: Rng): void {
    if (hours <= 0) return;
    const p = st.p;
    const dtH = 1 / 8760;
    const sigma = p.shortVol.mean;
    const lnPath: number[] = [0];
    for (let i = 0; i < hours; i++) lnPath.push(lnPath[i]! - 0.5 * sigma * sigma * dtH + sigma * Math.sqrt(dtH) * rng.normal());
    const shift = st.lnS - lnPath[hours]!;
    const endHour = st.lastHourMs;
    st.lastHourMs = endHour - hours * HOUR_MS;
    st.lastHourIndex = Math.exp(lnPath[0]! + shift);
    st.cumulative = 0.002 + 0.002 * rng.uniform();
    let prem = p.premium.mean;
    for (let i = 1; i <= hours; i++) {
      // Accrue over the hour in 4 sub-steps of 15 minutes.
      let acc = 0;
      for (let j = 0; j < 4; j++) {
        prem = ou(prem, p.premium.mean, p.premium.kappa, p.premium.vol, dtH / 4, rng.normal());
        acc += dampedFunding(prem, p.fundingDamper) / 32;
      }
      this.pushPoint(st, st.lastHourMs + HOUR_MS, Math.exp(lnPath[i]! + shift), acc);
    }
    st.premium = prem;
  }
}
