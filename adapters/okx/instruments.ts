/**
 * OKX instrument ids -> (pair, type, expiry, strike, call/put).
 *
 * Grammar (OKX API v5, GET /api/v5/public/instruments `instId`, #public-data-rest-api-get-instruments;
 * real listings in test/fixtures/samples/okx/*rest-instruments*):
 *
 * - option    `{BASE}-{QUOTE}-{YYMMDD}-{STRIKE}-{C|P}`  `BTC-USD-250509-70000-C`
 * - future    `{BASE}-{QUOTE}-{YYMMDD}`                 `BTC-USD-250509`
 * - perpetual `{BASE}-{QUOTE}-SWAP`                     `BTC-USD-SWAP`
 * - index     `{BASE}-{QUOTE}` (the instrument family)  `BTC-USD`
 *
 * `{BASE}-{QUOTE}` is the instrument family (`instFamily`). `-USD` families are coin-margined
 * (inverse: premium, margin and settlement in the base coin; `ctType: inverse`); `-USDT`/`-USDC`
 * ones are linear. Options and futures expire at 08:00 UTC of the named day (the listings' `expTime`,
 * e.g. 1746777600000 = 2025-05-09T08:00:00Z for `BTC-USD-250509-*`); when a listing gives `expTime`
 * it wins over the name (see normalize.ts).
 *
 * Only the spec's OKX pairs are supported: BTC/USD and ETH/USD (families `BTC-USD`, `ETH-USD`).
 * Anything else that follows the grammar (`BTC-USDT-SWAP`, `SOL-USD-SWAP`, X-Perps
 * `BTC-USD_UM_XPERP-310404`, spot `BTC-USDT`) is `unsupported`; a string that follows no pattern,
 * or an impossible date or strike, is `malformed`.
 */
import { SUPPORTED_PAIRS, type Pair } from '../../src/domain/markets.js';
import type { DecodedInstrument, ParsedName } from '../shared/normalizeKit.js';

/** One decoded OKX derivative, e.g. `BTC-USD-250509-70000-C` (strike in USD; inverse: every `-USD` family). */
export interface OkxInstrument extends DecodedInstrument {
  /** Instrument family, e.g. `BTC-USD`. */
  readonly family: string;
}

/** Result of {@link parseOkxInstId}. */
export type ParsedOkxInstrument = ParsedName<OkxInstrument>;

/** Hour of day (UTC) at which OKX options and futures expire. */
export const OKX_EXPIRY_HOUR_UTC = 8;

const COIN_RE = /^[A-Z0-9]+$/;
const DATE_RE = /^(\d{2})(\d{2})(\d{2})$/;
const STRIKE_RE = /^\d+(?:\.\d+)?$/;

/**
 * Parse an OKX expiry token `YYMMDD` (e.g. `250509`) to Unix seconds at 08:00 UTC; null for an
 * impossible date (`250231`). Years are 20YY.
 */
export function parseOkxExpiryToken(token: string): number | null {
  const m = DATE_RE.exec(token);
  if (!m) return null;
  const year = 2000 + Number(m[1]);
  const month = Number(m[2]) - 1;
  const day = Number(m[3]);
  if (month < 0 || month > 11 || day < 1 || day > 31) return null;
  const ms = Date.UTC(year, month, day, OKX_EXPIRY_HOUR_UTC);
  const d = new Date(ms);
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month) return null;
  return ms / 1000;
}

/** The instrument family of a pair: BTC/USD -> `BTC-USD`. Also the index id of `index-tickers`. */
export function familyOf(pair: Pair): string {
  return `${pair.base}-${pair.quote}`;
}

/** The supported pair of a family (`BTC-USD` -> BTC/USD); null for any other family. */
export function pairOfFamily(family: string): Pair | null {
  const p = SUPPORTED_PAIRS.OKX.find((q) => familyOf(q) === family);
  return p ? { base: p.base, quote: p.quote } : null;
}

/** The perpetual swap of a pair: BTC/USD -> `BTC-USD-SWAP`. */
export function swapOf(pair: Pair): string {
  return `${familyOf(pair)}-SWAP`;
}

/**
 * Decode an OKX instrument id (see the module docstring). Never throws.
 *
 * @example parseOkxInstId('BTC-USD-250509-70000-C') // option, BTC/USD inverse, expiry 1746777600 s, strike 70000
 */
export function parseOkxInstId(instId: unknown): ParsedOkxInstrument {
  if (typeof instId !== 'string' || instId.length === 0 || instId.length > 64) {
    return { ok: false, reason: 'malformed', detail: `instId ${JSON.stringify(instId)?.slice(0, 80)}` };
  }
  const parts = instId.split('-');
  const base = parts[0] as string;
  const quoteTok = parts[1];
  if (quoteTok === undefined) return { ok: false, reason: 'malformed', detail: `not an instrument id: ${instId}` };
  // Spot pairs and indices (`BTC-USDT`, `BTC-USD`) are well-formed but are not derivatives.
  if (parts.length === 2) {
    return COIN_RE.test(base) && COIN_RE.test(quoteTok)
      ? { ok: false, reason: 'unsupported', detail: `${instId} (spot or index)` }
      : { ok: false, reason: 'malformed', detail: `not an instrument id: ${instId}` };
  }
  if (!COIN_RE.test(base)) return { ok: false, reason: 'malformed', detail: `bad base in ${instId}` };
  // X-Perps and other families with a qualifier (`USD_UM_XPERP`) follow the grammar but are not ours.
  if (!COIN_RE.test(quoteTok)) {
    return /^[A-Z0-9_]+$/.test(quoteTok)
      ? { ok: false, reason: 'unsupported', detail: instId }
      : { ok: false, reason: 'malformed', detail: `bad quote in ${instId}` };
  }
  const family = `${base}-${quoteTok}`;
  const kind = parts[2] as string;
  let type: OkxInstrument['type'];
  let expiry: number | null = null;
  let strike: number | null = null;
  let optionType: 'C' | 'P' | null = null;
  if (kind === 'SWAP') {
    if (parts.length !== 3) return { ok: false, reason: 'malformed', detail: instId };
    type = 'perpetual';
  } else {
    expiry = parseOkxExpiryToken(kind);
    if (expiry === null) return { ok: false, reason: 'malformed', detail: `bad expiry in ${instId}` };
    if (parts.length === 3) {
      type = 'future';
    } else if (parts.length === 5) {
      const k = parts[3] as string;
      const cp = parts[4] as string;
      if (!STRIKE_RE.test(k) || !(Number(k) > 0)) return { ok: false, reason: 'malformed', detail: `bad strike in ${instId}` };
      if (cp !== 'C' && cp !== 'P') return { ok: false, reason: 'malformed', detail: `bad option type in ${instId}` };
      type = 'option';
      strike = Number(k);
      optionType = cp;
    } else {
      return { ok: false, reason: 'malformed', detail: instId };
    }
  }
  const pair = pairOfFamily(family);
  if (!pair) return { ok: false, reason: 'unsupported', detail: instId };
  return {
    ok: true,
    instrument: { name: instId, family, pair, type, expirationTimestamp: expiry, strike, optionType, inverse: pair.quote === 'USD' },
  };
}
