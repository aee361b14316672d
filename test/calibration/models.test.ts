/**
 * SABR (beta = 1) and Vanna-Volga calibration on the real recorded Deribit BTC chains (data/replay, see
 * adapters/replay/chains.ts and test/calibration/realChains.test.ts): 2026-05-26 19:27:44Z (MaksM05,
 * 878 options, 11 expiries), 2026-05-26 18:30:32Z (pitspa, 878, 11) and 2020-05-14 05:41Z (schepal, 310, 7),
 * and on a sparse real capture (cryptofeed's 2021-07-22 Deribit ticker notifications: 1-2 options per
 * expiry).
 *
 * Inputs as for SVI: out-of-the-money mark IVs, k = ln(K/F) with F the expiry's Deribit
 * `underlying_price`, T = (expiry - observation)/(365 d).
 *
 * Why the bounds are what they are (measured values in brackets, on this machine, 2026-11-21):
 * - The market's own tolerance: per expiry, the model's RMSE near the money must not exceed the MEDIAN
 *   BID-ASK IV SPREAD of the quotes between the market's 10-delta strikes (forward Black call delta of
 *   the mark between 0.10 and 0.90, where the 25- and 10-delta pillars of iVSummary live). Bid/ask IVs
 *   as recorded for the 2020 chain; for the 2026 chains, which record only best bid/ask prices, their
 *   Black-76 implied vols. A model error inside the typical bid-ask width is indistinguishable from the
 *   market's own uncertainty. "Near the money" is, for SABR, those same quotes; for Vanna-Volga, the
 *   quotes between its own 10-delta strikes K10P..K10C (where the Castagna-Mercurio formula is used;
 *   beyond them the documented linear total-variance wing applies, and with 25-delta pillars only, a very
 *   convex short-dated smile is underestimated there: 2020's 29MAY20 expiry marks 104.6 % at 12500 (call
 *   delta 0.104) vs 97.5 % modelled). Worst RMSE / median spread, vol pts: SABR [1.11/2.73 MaksM05
 *   27MAY26; 0.86/1.95 pitspa 29MAY26; 3.32/40.53 and 2.94/9.53 for the 2-hour and 26-hour 2020
 *   expiries], VV [0.30/0.91 MaksM05 26JUN26; 0.32/0.91 pitspa 26JUN26; 2.52/3.41 schepal 29MAY20].
 * - All strikes: Deribit's far-wing marks have flat plateaus and jumps (29MAY26: every put from 54000 to
 *   58000 at 86.40 %, then 90-114 %; calls from 89000 up at 62.53 %; 2020's 15MAY20 capped at
 *   171-175 % in both wings) that no 3-parameter smile follows, and SABR's vega weighting (floor 0.03)
 *   deliberately gives them little weight. SABR's all-strike RMSE is bounded by 10 vol pts on 2026
 *   [max 9.53, pitspa 29MAY26] and 25 on 2020 [21.74, 15MAY20] (SVI's 5-parameter fits of those
 *   expiries: 5.94 and 10.23); expiries of 2 months and more (T >= 0.15 y) within 1 vol pt [0.79].
 *   Vanna-Volga is a 3-pillar interpolator, linear in total variance beyond its 10-delta strikes, so its
 *   far wings miss Deribit's steep ones by design (26JUN26: 102 % marked at k = 1.6 vs 53 % modelled);
 *   only T >= 0.15 y is bounded there, by 6 vol pts [5.25].
 * - Butterfly arbitrage: every fit is asserted arbitrage-free (density check on 4 ATM standard
 *   deviations and the quoted range; all pass without repair).
 * - ATM: the SABR fit's ATM vol is within 1.5 vol pts of the interpolated ATM mark on 2026 [1.21] and
 *   3 on 2020 [2.64, the 2-hour expiry].
 * - Stability: the two 2026 snapshots are 57 minutes apart with the same listing; parameters move by no
 *   more than the market did (measured: |d alpha/alpha| <= 0.038, |d rho| <= 0.034, |d nu/nu| <= 0.017;
 *   VV pillar vols and SABR ATM vol move less than the largest mark change of that expiry).
 * Calibration time is measured in bench/, not asserted here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPLAY_FILES, loadReplayChain, otmQuotesByExpiry, type ChainSourceId, type ExpiryQuotes, type OptionChain } from '../../adapters/replay/chains.js';
import { impliedVolBlack76 } from '../../src/quant/impliedVol.js';
import { normCdf } from '../../src/quant/normal.js';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import { calibrateSabr, type SabrCalibrationResult } from '../../src/quant/sabrCalibration.js';
import { calibrateVannaVolga, vannaVolgaSmile, type VannaVolgaCalibrationResult } from '../../src/quant/vannaVolga.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const IDS: ChainSourceId[] = ['maksm05', 'pitspa', 'schepal'];

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h]! : (s[h - 1]! + s[h]!) / 2;
};
const rmse = (xs: readonly number[]): number => Math.sqrt(xs.reduce((a, x) => a + x * x, 0) / xs.length);

interface ExpiryFit {
  e: ExpiryQuotes;
  sabr: SabrCalibrationResult;
  vv: VannaVolgaCalibrationResult;
  /** Indices of the quotes between the market's 10-delta strikes, and their median bid-ask IV spread. */
  central: number[];
  medianSpreadVolPts: number;
  twoSided: number;
}
const fits = {} as Record<ChainSourceId, ExpiryFit[]>;

/** Bid and ask IV of a quote: recorded, or the Black-76 implied vol of the recorded best bid/ask price (BTC · F). */
function bidAskIv(chain: OptionChain, e: ExpiryQuotes, q: ExpiryQuotes['quotes'][number]): [number | null, number | null] {
  const o = chain.options.find((x) => x.instrument === q.instrument)!;
  const fromPrice = (p: number | null): number | null => {
    if (p === null || !(p > 0)) return null;
    try {
      return impliedVolBlack76(p * e.forward, e.forward, q.strike, e.T, o.optionType);
    } catch {
      return null; // a bid below intrinsic or an ask above the bound has no IV
    }
  };
  return [q.bidIv ?? fromPrice(o.bestBidPrice), q.askIv ?? fromPrice(o.bestAskPrice)];
}

beforeAll(() => {
  for (const id of IDS) {
    const chain = loadReplayChain(ROOT + REPLAY_FILES[id]);
    fits[id] = otmQuotesByExpiry(chain).map((e) => {
      const central: number[] = [];
      const spreads: number[] = [];
      e.quotes.forEach((q, i) => {
        const s = q.iv * Math.sqrt(e.T);
        const delta = normCdf(-q.k / s + 0.5 * s);
        if (delta < 0.1 || delta > 0.9) return;
        central.push(i);
        const [b, a] = bidAskIv(chain, e, q);
        if (b !== null && a !== null && a > b) spreads.push(100 * (a - b));
      });
      return {
        e,
        sabr: calibrateSabr(e.quotes, e.forward, e.T),
        vv: calibrateVannaVolga(e.quotes, e.forward, e.T),
        central,
        medianSpreadVolPts: median(spreads),
        twoSided: spreads.length,
      };
    });
  }
});

describe('SABR and Vanna-Volga on the full recorded Deribit chains', () => {
  it('fit every expiry within the market bid-ask spread between the 10-delta strikes', () => {
    for (const id of IDS) {
      expect(fits[id].length).toBe(id === 'schepal' ? 7 : 11);
      for (const f of fits[id]) {
        const { e } = f;
        expect(f.twoSided).toBeGreaterThanOrEqual(3);
        // Errors recomputed here from the parameters (independent of the result's own diagnostics).
        const smile = vannaVolgaSmile(f.vv.params, e.forward, e.T);
        const sabrErr = f.central.map((i) => 100 * (sabrImpliedVol(f.sabr.params, e.forward, e.quotes[i]!.strike, e.T) - e.quotes[i]!.iv));
        const vvErr = e.quotes
          .filter((q) => q.strike >= f.vv.params.K10P && q.strike <= f.vv.params.K10C)
          .map((q) => 100 * (smile(q.strike) - q.iv));
        expect(vvErr.length).toBeGreaterThanOrEqual(2);
        expect(rmse(sabrErr), `${id} T=${e.T} SABR`).toBeLessThanOrEqual(f.medianSpreadVolPts);
        expect(rmse(vvErr), `${id} T=${e.T} VV`).toBeLessThanOrEqual(f.medianSpreadVolPts);
      }
    }
  });

  it('are butterfly-arbitrage-free on every expiry', () => {
    for (const id of IDS) {
      for (const f of fits[id]) {
        expect(f.sabr.arbitrageFree, `${id} T=${f.e.T} SABR`).toBe(true);
        expect(f.vv.arbitrageFree, `${id} T=${f.e.T} VV`).toBe(true);
        expect(f.sabr.minDensity).toBeGreaterThan(-1e-7);
        expect(f.vv.minDensity).toBeGreaterThan(-1e-7);
      }
    }
  });

  it('all-strike RMSE: bounded for SABR, and for both models on expiries of 2 months and more', () => {
    for (const id of IDS) {
      for (const f of fits[id]) {
        expect(f.sabr.rmseVolPts, `${id} T=${f.e.T}`).toBeLessThan(id === 'schepal' ? 25 : 10);
        expect(f.sabr.quotesUsed + f.sabr.quotesDropped.length).toBe(f.e.quotes.length);
        expect(f.vv.quotesUsed + f.vv.quotesDropped.length).toBe(f.e.quotes.length);
        if (f.e.T >= 0.15) {
          expect(f.sabr.rmseVolPts).toBeLessThan(1);
          expect(f.vv.rmseVolPts).toBeLessThan(6);
        }
        // Diagnostics are consistent with what the tests recompute.
        expect(f.sabr.maxErrorVolPts).toBeGreaterThanOrEqual(f.sabr.rmseVolPts);
        expect(f.vv.maxErrorVolPts).toBeGreaterThanOrEqual(f.vv.rmseVolPts);
      }
    }
  });

  it('beta = 1 SABR parameters look like BTC: negative skew, nu sqrt(T) of order 0.5-1', () => {
    for (const id of IDS) {
      for (const f of fits[id]) {
        expect(f.sabr.params.beta).toBe(1);
        expect(f.sabr.mode).toBe('sabr-3p');
        expect(f.sabr.params.rho).toBeLessThan(0.1);
        const g = f.sabr.params.nu * Math.sqrt(f.e.T);
        expect(g).toBeGreaterThan(0.05);
        expect(g).toBeLessThan(1.5);
        // ATM sanity: the fitted ATM vol is within 1.5 vol pts of the marks' (3 for the 2020 chain, where
        // the 2-hour and 1-day expiries have V-shaped marks).
        expect(Math.abs(f.sabr.atm.errorVolPts ?? 0)).toBeLessThan(id === 'schepal' ? 3 : 1.5);
      }
    }
  });

  it('two snapshots 57 minutes apart give parameters that move no more than the market did', () => {
    fits.maksm05.forEach((a, i) => {
      const b = fits.pitspa[i]!;
      expect(b.e.expirationTimestamp).toBe(a.e.expirationTimestamp);
      expect(Math.abs(a.sabr.params.alpha / b.sabr.params.alpha - 1)).toBeLessThan(0.05);
      expect(Math.abs(a.sabr.params.rho - b.sabr.params.rho)).toBeLessThan(0.05);
      expect(Math.abs(a.sabr.params.nu / b.sabr.params.nu - 1)).toBeLessThan(0.05);
      const marks = new Map(b.e.quotes.map((q) => [q.strike, q.iv]));
      let maxMarkMove = 0;
      for (const q of a.e.quotes) if (marks.has(q.strike)) maxMarkMove = Math.max(maxMarkMove, Math.abs(q.iv - marks.get(q.strike)!));
      expect(Math.abs(a.sabr.atm.modelIv - b.sabr.atm.modelIv)).toBeLessThanOrEqual(maxMarkMove);
      for (const key of ['vol25P', 'volAtm', 'vol25C'] as const) {
        expect(Math.abs(a.vv.params[key] - b.vv.params[key])).toBeLessThanOrEqual(maxMarkMove);
      }
    });
  });
});

describe('SABR and Vanna-Volga on a sparse real capture (Deribit, 2021-07-22, 1-2 options per expiry)', () => {
  interface Tick {
    instrument_name: string;
    mark_iv: number;
    underlying_price: number;
    timestamp: number;
  }
  const last = new Map<string, Tick>();
  const text = readFileSync(ROOT + 'test/fixtures/deribit/quant-cryptofeed__option-ticker-raw-notifications_2021-07-22.jsonl', 'utf8');
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const d = (JSON.parse(line) as { params: { data: Tick } }).params.data;
    last.set(d.instrument_name, d);
  }
  const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
  const groups = new Map<string, { T: number; F: number; quotes: { k: number; iv: number }[] }>();
  for (const t of last.values()) {
    const [cur, code, strike] = t.instrument_name.split('-') as [string, string, string];
    const m = /^(\d{1,2})([A-Z]{3})(\d{2})$/.exec(code)!;
    const expiry = Date.UTC(2000 + Number(m[3]), MONTHS.indexOf(m[2]!), Number(m[1]), 8) / 1000;
    const T = (expiry - t.timestamp / 1000) / (365 * 86400);
    const key = `${cur}-${code}`;
    const g = groups.get(key) ?? { T, F: t.underlying_price, quotes: [] };
    g.quotes.push({ k: Math.log(Number(strike) / g.F), iv: t.mark_iv / 100 });
    groups.set(key, g);
  }

  it('calibrates every expiry without failing; SABR reproduces the 1-2 quotes exactly', () => {
    expect(last.size).toBe(10);
    expect(groups.size).toBe(8);
    let twoQuote = 0;
    for (const [key, g] of groups) {
      const s = calibrateSabr(g.quotes, g.F, g.T);
      expect(s.mode, key).toBe(g.quotes.length === 1 ? 'sabr-1p' : 'sabr-2p');
      expect(s.rmseVolPts, key).toBeLessThan(1e-4);
      expect(typeof s.arbitrageFree).toBe('boolean');
      const v = calibrateVannaVolga(g.quotes, g.F, g.T);
      const smile = vannaVolgaSmile(v.params, g.F, g.T);
      for (const q of g.quotes) expect(Number.isFinite(smile(g.F * Math.exp(q.k)))).toBe(true);
      if (g.quotes.length === 1) expect(v.rmseVolPts).toBeLessThan(1e-8); // flat smile through the quote
      else twoQuote++;
    }
    expect(twoQuote).toBe(2); // BTC-24SEP21 and BTC-31DEC21
  });
});
