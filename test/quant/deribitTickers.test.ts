/**
 * Our Black-76 against Deribit's own printed numbers (recorded ticker notifications).
 *
 * For each option ticker: F = underlying_price, sigma = mark_iv / 100, T = (expiry 08:00 UTC - timestamp) /
 * (365 * 86400) with the ticker timestamp in ms. Checked:
 *   mark_price (coin)        = Black-76(F, K, T, sigma) / F
 *   greeks.delta             = N(d1) (call), N(d1) - 1 (put)           (plain forward Black delta)
 *   greeks.gamma (1/USD)     = phi(d1) / (F sigma sqrt T)               (d delta / dF)
 *   greeks.vega (USD)        = F phi(d1) sqrt T * 0.01                  (per one vol point)
 *   greeks.theta (USD/day)   = -F phi(d1) sigma / (2 sqrt T) / 365      (calendar day), except with less than
 *                              one day to expiry, where Deribit prints minus the time value in USD (the
 *                              one-day decay cannot exceed what is left): = V(T - 1 day) - V(T) of vanilla.ts
 * Tolerance of each figure X: half a unit of the printed precision (mark: 8 dp BTC / 6 dp ETH on the raw
 * channel in 2021, 4 dp on the 100ms channel in 2022; Greeks: 5 dp) plus the change of X under the input
 * noise of the message: the forward moved by 1.5 bp (underlying_price in the same message was measured to
 * differ by up to 1.05 bp from the forward Deribit's mark implies: the fields are computed at slightly
 * different instants) and mark_iv by its print rounding, 0.005 vol points. Negative controls show the
 * tolerance still rejects the usual mistakes (index price as forward, dividing by spot, vega per 1.0).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { black76Greeks, black76Price, type OptionType } from '../../src/quant/black76.js';
import { impliedVolBlack76 } from '../../src/quant/impliedVol.js';

interface Ticker {
  instrument_name: string;
  timestamp: number;
  underlying_price: number;
  index_price: number;
  mark_price: number;
  mark_iv: number;
  greeks: { delta: number; gamma: number; vega: number; theta: number; rho: number };
}

interface Row {
  t: Ticker;
  channel: string;
  K: number;
  type: OptionType;
  T: number;
  markDecimals: number;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/** Expiry of a Deribit option name (e.g. ETH-30JUL21-2800-C) in Unix seconds: that date, 08:00 UTC. */
function expirySeconds(code: string): number {
  const m = /^(\d{1,2})([A-Z]{3})(\d{2})$/.exec(code);
  if (!m) throw new Error(`bad expiry code ${code}`);
  return Date.UTC(2000 + Number(m[3]), MONTHS.indexOf(m[2]!), Number(m[1]), 8) / 1000;
}

function load(file: string, markDecimals: (currency: string, channel: string) => number): Row[] {
  const rows: Row[] = [];
  for (const line of readFileSync(new URL(`../fixtures/deribit/${file}`, import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const msg = JSON.parse(line) as { params: { channel: string; data: Ticker } };
    const t = msg.params.data;
    const parts = t.instrument_name.split('-');
    if (parts.length !== 4 || !t.greeks) continue; // options only
    const T = (expirySeconds(parts[1]!) - t.timestamp / 1000) / (365 * 86400);
    rows.push({ t, channel: msg.params.channel, K: Number(parts[2]), type: parts[3] === 'C' ? 'C' : 'P', T, markDecimals: markDecimals(parts[0]!, msg.params.channel) });
  }
  return rows;
}

const rows: Row[] = [
  ...load('quant-cryptofeed__option-ticker-raw-notifications_2021-07-22.jsonl', (ccy) => (ccy === 'BTC' ? 8 : 6)),
  ...load('quant-crypto-msg-parser__ticker-notifications_2022-06.jsonl', () => 4),
];

const ONE_DAY = 1 / 365;
const F_NOISE = 1.5e-4; // relative
const IV_NOISE = 0.00005; // 0.005 vol points, the print rounding of mark_iv
const GREEK_HALF_UNIT = 0.5e-5;

interface Figures {
  mark: number;
  delta: number;
  gamma: number;
  vega: number;
  theta: number;
}

/** Our figures in Deribit's units for one ticker (F, sigma given). */
function figures(F: number, K: number, T: number, sigma: number, type: OptionType): Figures {
  const g = black76Greeks(F, K, T, sigma, type);
  const theta = T >= ONE_DAY ? g.theta / 365 : -(g.price - (type === 'C' ? Math.max(F - K, 0) : Math.max(K - F, 0)));
  return { mark: g.price / F, delta: g.delta, gamma: g.gamma, vega: g.vega * 0.01, theta };
}

/** Tolerance per figure: half print unit + sensitivity to the forward (+-1.5 bp) and to mark_iv rounding. */
function tolerances(r: Row): Figures {
  const F = r.t.underlying_price;
  const s = r.t.mark_iv / 100;
  const mid = figures(F, r.K, r.T, s, r.type);
  const bumps = [
    figures(F * (1 + F_NOISE), r.K, r.T, s, r.type),
    figures(F * (1 - F_NOISE), r.K, r.T, s, r.type),
    figures(F, r.K, r.T, s + IV_NOISE, r.type),
    figures(F, r.K, r.T, s - IV_NOISE, r.type),
  ];
  const sens = (k: keyof Figures): number => {
    const dF = Math.max(Math.abs(bumps[0]![k] - mid[k]), Math.abs(bumps[1]![k] - mid[k]));
    const dS = Math.max(Math.abs(bumps[2]![k] - mid[k]), Math.abs(bumps[3]![k] - mid[k]));
    return dF + dS;
  };
  return {
    mark: 0.5 * 10 ** -r.markDecimals + sens('mark'),
    delta: GREEK_HALF_UNIT + sens('delta'),
    gamma: GREEK_HALF_UNIT + sens('gamma'),
    vega: GREEK_HALF_UNIT + sens('vega'),
    theta: GREEK_HALF_UNIT + sens('theta'),
  };
}

const KEYS: Array<keyof Figures> = ['mark', 'delta', 'gamma', 'vega', 'theta'];
const printed = (r: Row): Figures => ({
  mark: r.t.mark_price,
  delta: r.t.greeks.delta,
  gamma: r.t.greeks.gamma,
  vega: r.t.greeks.vega,
  theta: r.t.greeks.theta,
});

describe('Black-76 reproduces Deribit ticker marks and Greeks', () => {
  it('loads the recorded option tickers (89 raw 2021-07-22, 1 of 2022-06)', () => {
    expect(rows.length).toBe(90);
    expect(new Set(rows.map((r) => r.t.instrument_name)).size).toBe(11);
    expect(rows.some((r) => r.T < ONE_DAY)).toBe(true); // ETH-23JUL21-2300-C, the capped-theta case
  });

  for (const key of KEYS) {
    it(`${key}: every ticker within tolerance`, () => {
      for (const r of rows) {
        const ours = figures(r.t.underlying_price, r.K, r.T, r.t.mark_iv / 100, r.type)[key];
        const tol = tolerances(r)[key];
        const err = Math.abs(ours - printed(r)[key]);
        if (err > tol) throw new Error(`${r.t.instrument_name} @${r.t.timestamp} ${key}: ours ${ours}, Deribit ${printed(r)[key]}, |err| ${err} > tol ${tol}`);
      }
    });
  }

  it('the tolerance discriminates: index price as forward, dividing by spot, per-1.0 vega, per-year theta all fail', () => {
    const fails = (f: (r: Row) => number, key: keyof Figures): number =>
      rows.filter((r) => Math.abs(f(r) - printed(r)[key]) > tolerances(r)[key]).length;
    // Index price used as the forward (BTC expiries carry a 0.5 %-6 % basis).
    expect(fails((r) => figures(r.t.index_price, r.K, r.T, r.t.mark_iv / 100, r.type).mark, 'mark')).toBeGreaterThan(60);
    // Coin value as Black / spot instead of Black / F.
    expect(fails((r) => black76Price(r.t.underlying_price, r.K, r.T, r.t.mark_iv / 100, r.type) / r.t.index_price, 'mark')).toBeGreaterThan(60);
    expect(fails((r) => figures(r.t.underlying_price, r.K, r.T, r.t.mark_iv / 100, r.type).vega * 100, 'vega')).toBe(rows.length);
    expect(fails((r) => figures(r.t.underlying_price, r.K, r.T, r.t.mark_iv / 100, r.type).theta * 365, 'theta')).toBe(rows.length);
    // Analytic theta also where less than a day is left: Deribit's capped figure differs.
    const short = rows.filter((r) => r.T < ONE_DAY);
    for (const r of short) {
      const analytic = black76Greeks(r.t.underlying_price, r.K, r.T, r.t.mark_iv / 100, r.type).theta / 365;
      expect(Math.abs(analytic - r.t.greeks.theta)).toBeGreaterThan(tolerances(r).theta);
    }
  });

  it('implied vol of the mark price gives back mark_iv within the mark tolerance mapped through vega', () => {
    for (const r of rows) {
      const F = r.t.underlying_price;
      const iv = impliedVolBlack76(r.t.mark_price * F, F, r.K, r.T, r.type);
      const vegaCoin = black76Greeks(F, r.K, r.T, r.t.mark_iv / 100, r.type).vega / F;
      const tol = tolerances(r).mark / vegaCoin + IV_NOISE;
      expect(Math.abs(iv - r.t.mark_iv / 100)).toBeLessThanOrEqual(tol);
    }
  });
});
