/**
 * Strike grids of the OKX and Bybit simulator listings: denser near the money than Deribit's
 * ({@link strikeGrid} in chains.ts), with a near-the-money step that grows with the time to expiry.
 *
 * Fitted to OKX's real listing of 2025-05-08 (BTC about 97 000 USD: 500 steps for the dailies, 1000
 * for the weeklies, 2000-5000 for the quarterlies; strikes from about -3.5 to +3 standard deviations
 * for the dailies out to 10 000-360 000 for the quarterlies):
 * - unit u = niceRound(unitFraction * spot * (max(Tdays, 1) / 2)^0.35), Tdays the days to expiry;
 * - with s = atmVol * sqrt(T) (one standard deviation of ln(K/S)), x = ln(K / spot): step u for
 *   |x| <= s, 2u up to 2s, 5u up to 3.5s, 10u up to 6s, 20u beyond;
 * - range x in [-min(ln maxDown, max(minSpan, downSd * s)), min(ln maxUp, max(minSpan, upSd * s))];
 * - at least 3 strikes each side of the spot.
 */
import { niceCeil, niceRound } from './chains.js';

/** Shape of {@link exchangeStrikeGrid}. */
export interface ExchangeStrikeShape {
  /** Near-the-money unit as a fraction of spot for a 2-day expiry (default 0.005). */
  readonly unitFraction?: number;
  /** Standard deviations listed below the spot (default 5). */
  readonly downSd?: number;
  /** Standard deviations listed above the spot (default 4.5). */
  readonly upSd?: number;
  /** Least half-width of the range in log-moneyness (default 0.12). */
  readonly minSpan?: number;
  /** Highest strike / spot (default 3.5). */
  readonly maxUp?: number;
  /** Spot / lowest strike (default 10). */
  readonly maxDown?: number;
}

function round10(x: number): number {
  return Number(x.toFixed(10));
}

/**
 * Strikes around `spot` for an expiry `Tdays` away whose ATM vol is `atmVol` (fraction). See the
 * module docstring. @returns ascending positive strikes, each a multiple of its zone's step.
 */
export function exchangeStrikeGrid(spot: number, atmVol: number, Tdays: number, shape: ExchangeStrikeShape = {}): number[] {
  const s = Math.max(atmVol * Math.sqrt(Math.max(Tdays, 0.25) / 365), 1e-4);
  const u = niceRound((shape.unitFraction ?? 0.005) * spot * Math.pow(Math.max(Tdays, 1) / 2, 0.35));
  const minSpan = shape.minSpan ?? 0.12;
  const up = Math.min(Math.log(shape.maxUp ?? 3.5), Math.max(minSpan, (shape.upSd ?? 4.5) * s));
  const down = Math.min(Math.log(shape.maxDown ?? 10), Math.max(minSpan, (shape.downSd ?? 5) * s));
  const zones: Array<[number, number]> = [
    [s, u],
    [2 * s, niceCeil(2 * u)],
    [3.5 * s, niceCeil(5 * u)],
    [6 * s, niceCeil(10 * u)],
    [Infinity, niceCeil(20 * u)],
  ];
  const out = new Set<number>();
  let a = 0;
  for (const [edge, step] of zones) {
    const bUp = Math.min(edge, up);
    if (bUp > a) {
      const hi = spot * Math.exp(bUp);
      for (let k = Math.ceil((spot * Math.exp(a)) / step); k * step <= hi; k++) out.add(round10(k * step));
    }
    const bDown = Math.min(edge, down);
    if (bDown > a) {
      const lo = spot * Math.exp(-bDown);
      for (let k = Math.floor((spot * Math.exp(-a)) / step); k > 0 && k * step >= lo; k--) out.add(round10(k * step));
    }
    a = edge;
    if (a >= up && a >= down) break;
  }
  const below = [...out].filter((k) => k < spot).length;
  const above = [...out].filter((k) => k > spot).length;
  for (let i = 1; i <= 3 - below; i++) {
    const k = round10((Math.floor(spot / u) - i + 1) * u);
    if (k > 0) out.add(k);
  }
  for (let i = 1; i <= 3 - above; i++) out.add(round10((Math.ceil(spot / u) + i - 1) * u));
  return [...out].filter((k) => k > 0).sort((x, y) => x - y);
}
