/**
 * Deribit instrument names -> (pair, type, expiry, strike, call/put).
 *
 * Grammar (Deribit API v2 "Instrument naming", https://docs.deribit.com/ and the names returned by
 * public/get_instruments, e.g. test/fixtures/samples/deribit/crypto-market-raw-data__get_instruments_*):
 *
 * - option    `{CUR}-{DMMMYY}-{STRIKE}-{C|P}`   `BTC-26JUN26-100000-C`, `SOL_USDC-27JUN25-150-C`,
 *             `XRP_USDC-27JUN25-2d2-C` (a `d` in the strike is the decimal point: `2d2` = 2.2)
 * - future    `{CUR}-{DMMMYY}`                  `BTC-26JUN26`
 * - perpetual `{CUR}-PERPETUAL`                 `BTC-PERPETUAL`, `SOL_USDC-PERPETUAL`
 * - combos and spreads carry a strategy token or `_`-joined legs: `BTC-FS-30SEP22_PERP` (future
 *   spread), `BTC-CS-...`, `BTC-CSR12-16SEP22-21000_23000`, `BTC-STRD-30SEP22-20000`: recognised and
 *   reported as `combo`, never parsed as a plain instrument.
 *
 * `{CUR}` is either a coin (`BTC`, `ETH`: inverse, coin-settled, quoted against USD) or
 * `{COIN}_USDC` (linear, USDC-settled and quoted). Every expiry is at 08:00 UTC on the named day
 * (Deribit "Contract specifications": options and futures expire at 08:00 UTC).
 *
 * Only the pairs of the spec's DERIBIT table are supported (BTC/USD, ETH/USD, SOL/USDC, XRP/USDC);
 * any other currency (MATIC_USDC, inverse SOL, BTC_USDC, ...) is `unsupported`.
 */
import { type BaseCurrency, type Pair, SUPPORTED_PAIRS } from '../../src/domain/markets.js';
import type { DecodedInstrument, ParsedName } from '../shared/normalizeKit.js';

/** One plain Deribit instrument, decoded from its name (inverse: BTC/USD and ETH/USD). */
export type DeribitInstrument = DecodedInstrument;

/**
 * Result of {@link parseInstrumentName}. `combo` (spreads, strategies) and `unsupported` (a
 * currency/pair outside the spec's table) are recognised names that are deliberately ignored;
 * `malformed` is a name that follows no Deribit pattern (or an impossible date/strike).
 */
export type ParsedInstrument = ParsedName<DeribitInstrument, 'combo' | 'unsupported' | 'malformed'>;

const MONTHS: Readonly<Record<string, number>> = {
  JAN: 0, FEB: 1, MAR: 2, APR: 3, MAY: 4, JUN: 5, JUL: 6, AUG: 7, SEP: 8, OCT: 9, NOV: 10, DEC: 11,
};

/** Hour of day (UTC) at which Deribit options and futures expire. */
export const DERIBIT_EXPIRY_HOUR_UTC = 8;

const DATE_RE = /^(\d{1,2})([A-Z]{3})(\d{2})$/;
const CUR_RE = /^([A-Z0-9]+)(?:_([A-Z]+))?$/;
const STRIKE_RE = /^(\d+)(?:d(\d+))?$/;

/**
 * Parse a Deribit expiry token `DMMMYY` (e.g. `26JUN26`) to Unix seconds at 08:00 UTC.
 * Returns null for an impossible date (`31FEB26`, `1ABC26`). Years are 20YY.
 */
export function parseExpiryToken(token: string): number | null {
  const m = DATE_RE.exec(token);
  if (!m) return null;
  const day = Number(m[1]);
  const month = MONTHS[m[2] as string];
  const year = 2000 + Number(m[3]);
  if (month === undefined || day < 1 || day > 31) return null;
  const ms = Date.UTC(year, month, day, DERIBIT_EXPIRY_HOUR_UTC);
  const d = new Date(ms);
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month) return null;
  return ms / 1000;
}

/**
 * Parse a Deribit strike token: digits with an optional `d` as decimal point (`1d02` = 1.02).
 * Returns null unless the value is a finite number > 0.
 */
export function parseStrikeToken(token: string): number | null {
  const m = STRIKE_RE.exec(token);
  if (!m) return null;
  const v = Number(m[2] === undefined ? m[1] : `${m[1]}.${m[2]}`);
  return Number.isFinite(v) && v > 0 ? v : null;
}

/**
 * Map a Deribit currency token to a supported pair: `BTC` -> BTC/USD inverse,
 * `SOL_USDC` -> SOL/USDC linear. Null when the pair is not in the spec's DERIBIT table.
 */
export function pairOfCurrencyToken(token: string): { pair: Pair; inverse: boolean } | null {
  const m = CUR_RE.exec(token);
  if (!m) return null;
  const coin = m[1] as string;
  const suffix = m[2];
  const quote = suffix === undefined ? 'USD' : suffix;
  const supported = SUPPORTED_PAIRS.DERIBIT.find((p) => p.base === coin && p.quote === quote);
  if (!supported) return null;
  return { pair: { base: supported.base as BaseCurrency, quote: supported.quote }, inverse: suffix === undefined };
}

/** The perpetual of a supported pair: BTC/USD -> `BTC-PERPETUAL`, SOL/USDC -> `SOL_USDC-PERPETUAL`. */
export function perpetualOf(pair: Pair): string {
  return pair.quote === 'USD' ? `${pair.base}-PERPETUAL` : `${pair.base}_${pair.quote}-PERPETUAL`;
}

/** Deribit index name of a supported pair: BTC/USD -> `btc_usd`, XRP/USDC -> `xrp_usdc`. */
export function indexNameOf(pair: Pair): string {
  return `${pair.base}_${pair.quote}`.toLowerCase();
}

/** Inverse of {@link indexNameOf} restricted to supported pairs; null for any other index. */
export function pairOfIndexName(indexName: string): Pair | null {
  const p = SUPPORTED_PAIRS.DERIBIT.find((q) => indexNameOf(q) === indexName);
  return p ? { base: p.base, quote: p.quote } : null;
}

/**
 * Decode a Deribit instrument name (see the module docstring for the grammar). Never throws.
 *
 * @example parseInstrumentName('BTC-26JUN26-100000-C') // option, BTC/USD inverse, expiry 1782460800 s
 */
export function parseInstrumentName(name: unknown): ParsedInstrument {
  if (typeof name !== 'string' || name.length === 0 || name.length > 64) {
    return { ok: false, reason: 'malformed', detail: `instrument name ${JSON.stringify(name)?.slice(0, 80)}` };
  }
  const parts = name.split('-');
  const cur = parts[0] as string;
  if (!CUR_RE.test(cur)) return { ok: false, reason: 'malformed', detail: `bad currency in ${name}` };

  const second = parts[1];
  if (second === undefined) return { ok: false, reason: 'malformed', detail: `no expiry in ${name}` };
  // Combos/spreads: a strategy token (FS, CS, CSR12, STRD, PS, RR, ...) where the expiry belongs,
  // or legs joined with '_' after the currency.
  const isDate = DATE_RE.test(second);
  if (second !== 'PERPETUAL' && !isDate) {
    if (/^[A-Z][A-Z0-9]*$/.test(second) && parts.length >= 3) return { ok: false, reason: 'combo', detail: name };
    return { ok: false, reason: 'malformed', detail: `bad expiry token in ${name}` };
  }
  if (parts.slice(1).some((p) => p.includes('_'))) return { ok: false, reason: 'combo', detail: name };

  const pairInfo = pairOfCurrencyToken(cur);

  if (second === 'PERPETUAL') {
    if (parts.length !== 2) return { ok: false, reason: 'malformed', detail: `extra tokens after PERPETUAL in ${name}` };
    if (!pairInfo) return { ok: false, reason: 'unsupported', detail: name };
    return {
      ok: true,
      instrument: { name, pair: pairInfo.pair, type: 'perpetual', expirationTimestamp: null, strike: null, optionType: null, inverse: pairInfo.inverse },
    };
  }

  const expiry = parseExpiryToken(second);
  if (expiry === null) return { ok: false, reason: 'malformed', detail: `impossible expiry date in ${name}` };

  if (parts.length === 2) {
    if (!pairInfo) return { ok: false, reason: 'unsupported', detail: name };
    return {
      ok: true,
      instrument: { name, pair: pairInfo.pair, type: 'future', expirationTimestamp: expiry, strike: null, optionType: null, inverse: pairInfo.inverse },
    };
  }
  if (parts.length === 4) {
    const strike = parseStrikeToken(parts[2] as string);
    const cp = parts[3];
    if (strike === null) return { ok: false, reason: 'malformed', detail: `bad strike in ${name}` };
    if (cp !== 'C' && cp !== 'P') return { ok: false, reason: 'malformed', detail: `bad option type in ${name}` };
    if (!pairInfo) return { ok: false, reason: 'unsupported', detail: name };
    return {
      ok: true,
      instrument: { name, pair: pairInfo.pair, type: 'option', expirationTimestamp: expiry, strike, optionType: cp, inverse: pairInfo.inverse },
    };
  }
  // Three tokens with a date (e.g. `BTC-30SEP22-20000`) or more than four: not a plain instrument.
  return { ok: false, reason: 'malformed', detail: `unexpected token count in ${name}` };
}
