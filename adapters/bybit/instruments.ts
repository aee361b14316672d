/**
 * Bybit symbols -> (pair, type, expiry, strike, call/put).
 *
 * Grammar (Bybit V5 instruments-info `symbol`, /v5/market/instrument; real names in
 * test/fixtures/bybit/):
 *
 * - option (USDC-settled)  `{BASE}-{DMMMYY}-{STRIKE}-{C|P}`         `BTC-27MAR26-70000-C`, `SOL-28APR23-24-C`
 *   newer listings add the settle coin: `{BASE}-{DMMMYY}-{STRIKE}-{C|P}-{USDC|USDT}`
 *   (`BTC-27MAR26-70000-P-USDT`, settleCoin USDT: not ours)
 * - USDC perpetual          `{BASE}PERP` (`BTCPERP`, `ETHPERP`) or `{BASE}USDC` (`BTCUSDC`)
 * - USDC future             `{BASE}-{DMMMYY}`                          `BTC-26DEC25`
 * - recognised, not ours:   USDT perpetual `{BASE}USDT`, USDT future `{BASE}USDT-{DMMMYY}`,
 *   inverse perpetual `{BASE}USD`, inverse future `{BASE}USD{H|M|U|Z}{YY}` (`BTCUSDU23`)
 *
 * `{DMMMYY}` is a 1-2 digit day, an English month, a 2-digit year; every option and future expires
 * at 08:00 UTC of that day (instruments-info `deliveryTime`, e.g. 1774598400000 =
 * 2026-03-27T08:00:00Z for `BTC-27MAR26-*`; a listing's deliveryTime wins over the name).
 * Everything ours is linear (USDC-settled, quoted in USDC). Supported pairs: the spec's BYBIT
 * table, BTC/USDC, ETH/USDC, SOL/USDC.
 */
import { SUPPORTED_PAIRS, type BaseCurrency, type Pair } from '../../src/domain/markets.js';
import type { DecodedInstrument, ParsedName } from '../shared/normalizeKit.js';

/** One decoded Bybit instrument, e.g. `BTC-27MAR26-70000-C` (strike in USDC). */
export interface BybitSymbol extends DecodedInstrument {
  /** Always false: every supported Bybit instrument is linear (USDC). */
  readonly inverse: false;
}

/** Result of {@link parseBybitSymbol}. */
export type ParsedBybitSymbol = ParsedName<BybitSymbol>;

/** Hour of day (UTC) at which Bybit options and futures expire. */
export const BYBIT_EXPIRY_HOUR_UTC = 8;

const MONTHS: Readonly<Record<string, number>> = {
  JAN: 0, FEB: 1, MAR: 2, APR: 3, MAY: 4, JUN: 5, JUL: 6, AUG: 7, SEP: 8, OCT: 9, NOV: 10, DEC: 11,
};
const DATE_RE = /^(\d{1,2})([A-Z]{3})(\d{2})$/;
const COIN_RE = /^[A-Z0-9]{2,15}$/;
const STRIKE_RE = /^\d+(?:\.\d+)?$/;

/** Parse a `DMMMYY` token (`27MAR26`, `6JAN23`) to Unix s at 08:00 UTC; null for an impossible date. */
export function parseBybitExpiryToken(token: string): number | null {
  const m = DATE_RE.exec(token);
  if (!m) return null;
  const day = Number(m[1]);
  const month = MONTHS[m[2] as string];
  if (month === undefined || day < 1 || day > 31) return null;
  const ms = Date.UTC(2000 + Number(m[3]), month, day, BYBIT_EXPIRY_HOUR_UTC);
  const d = new Date(ms);
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month) return null;
  return ms / 1000;
}

/** The supported USDC pair of a base coin (`BTC` -> BTC/USDC); null when not in the BYBIT table. */
export function pairOfBaseCoin(coin: string): Pair | null {
  const p = SUPPORTED_PAIRS.BYBIT.find((q) => q.base === coin && q.quote === 'USDC');
  return p ? { base: p.base as BaseCurrency, quote: p.quote } : null;
}

function ok(name: string, pair: Pair, type: BybitSymbol['type'], expiry: number | null, strike: number | null, cp: 'C' | 'P' | null): ParsedBybitSymbol {
  return { ok: true, instrument: { name, pair, type, expirationTimestamp: expiry, strike, optionType: cp, inverse: false } };
}

/**
 * Decode a Bybit symbol (see the module docstring). Never throws.
 *
 * @example parseBybitSymbol('ETH-30JUN23-200-P') // option, ETH/USDC, expiry 2023-06-30T08:00Z, strike 200
 */
export function parseBybitSymbol(symbol: unknown): ParsedBybitSymbol {
  if (typeof symbol !== 'string' || symbol.length === 0 || symbol.length > 64) {
    return { ok: false, reason: 'malformed', detail: `symbol ${JSON.stringify(symbol)?.slice(0, 80)}` };
  }
  const parts = symbol.split('-');
  if (parts.length >= 4) {
    // option
    if (parts.length > 5) return { ok: false, reason: 'malformed', detail: symbol };
    const [base, date, k, cp, settle] = parts as [string, string, string, string, string | undefined];
    const expiry = parseBybitExpiryToken(date);
    if (!COIN_RE.test(base) || expiry === null) return { ok: false, reason: 'malformed', detail: `bad option symbol ${symbol}` };
    if (!STRIKE_RE.test(k) || !(Number(k) > 0)) return { ok: false, reason: 'malformed', detail: `bad strike in ${symbol}` };
    if (cp !== 'C' && cp !== 'P') return { ok: false, reason: 'malformed', detail: `bad option type in ${symbol}` };
    if (settle !== undefined && !/^[A-Z]{3,5}$/.test(settle)) return { ok: false, reason: 'malformed', detail: `bad settle coin in ${symbol}` };
    if (settle !== undefined && settle !== 'USDC') return { ok: false, reason: 'unsupported', detail: `${symbol} (${settle}-settled)` };
    const pair = pairOfBaseCoin(base);
    if (!pair) return { ok: false, reason: 'unsupported', detail: symbol };
    return ok(symbol, pair, 'option', expiry, Number(k), cp);
  }
  if (parts.length === 2) {
    // dated future: `{BASE}-{DMMMYY}` (USDC) or `{BASE}USDT-{DMMMYY}` (USDT)
    const [head, date] = parts as [string, string];
    const expiry = parseBybitExpiryToken(date);
    if (expiry === null || !COIN_RE.test(head)) return { ok: false, reason: 'malformed', detail: `bad future symbol ${symbol}` };
    if (head.endsWith('USDT')) return { ok: false, reason: 'unsupported', detail: `${symbol} (USDT future)` };
    const pair = pairOfBaseCoin(head);
    if (!pair) return { ok: false, reason: 'unsupported', detail: symbol };
    return ok(symbol, pair, 'future', expiry, null, null);
  }
  if (parts.length === 3) return { ok: false, reason: 'malformed', detail: symbol };
  // no dash: perpetuals and inverse futures
  if (!COIN_RE.test(symbol)) return { ok: false, reason: 'malformed', detail: symbol };
  for (const suffix of ['PERP', 'USDC'] as const) {
    if (symbol.endsWith(suffix) && symbol.length > suffix.length) {
      const pair = pairOfBaseCoin(symbol.slice(0, -suffix.length));
      return pair ? ok(symbol, pair, 'perpetual', null, null, null) : { ok: false, reason: 'unsupported', detail: symbol };
    }
  }
  if (/USDT$/.test(symbol) || /USD$/.test(symbol) || /USD[FGHJKMNQUVXZ]\d{2}$/.test(symbol)) {
    return { ok: false, reason: 'unsupported', detail: `${symbol} (USDT or inverse)` };
  }
  return { ok: false, reason: 'malformed', detail: `unknown symbol shape ${symbol}` };
}
