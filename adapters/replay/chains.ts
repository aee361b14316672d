/**
 * The three recorded full BTC option chains of Deribit, as typed chains and as replayable Deribit
 * WebSocket ticker notifications (JSON Lines).
 *
 * Sources (../shared/exchange-samples/README.md, section "deribit/", describes each file):
 * - MaksM05/crypto-vol-surface `tests/fixtures/snapshot_btc_surface.json`: a normalised DB dump of
 *   `public/get_book_summary_by_currency` + `public/get_instruments`, 878 options, snapshot
 *   2026-05-26 19:27:44 UTC; `deribit_mark_iv` in PERCENT; `best_bid`/`best_ask` in BTC (null = no
 *   order); one `forward_price` (= `underlying_price`) and `index_price` per expiry; a BTC-PERPETUAL
 *   `funding_rate_8h`. No bid/ask IVs and no greeks.
 * - pitspa/btc-vol-surface `surfaces/2026-05-26.csv`: one `public/get_order_book` call per option,
 *   878 options, 2026-05-26 18:30:32 UTC; `implied_vol` is DECIMAL (= mark_iv / 100); `bid`/`ask`
 *   in BTC; `forward_price` = `underlying_price`; delta/gamma/vega only (no theta/rho).
 * - schepal/deribit_data_collector `sample_data/btc_options_data.csv`: a pandas dump of one
 *   `public/ticker` result per option, 310 options, 2020-05-14 05:41:36 to 05:44:06 UTC; `stats`
 *   and `greeks` are Python-repr dicts; `mark_iv`, `bid_iv`, `ask_iv` in PERCENT (0 = none);
 *   `timestamp` and `expiration_timestamp` in ms.
 *
 * Wire form (Deribit API v2 docs, subscriptions/market-data `ticker.{instrument_name}.{interval}`
 * and `deribit_price_index.{index_name}`; example:
 * ../shared/exchange-samples/deribit/crypto-msg-parser__ticker-notifications_2022-06.jsonl):
 * `{"jsonrpc":"2.0","method":"subscription","params":{"channel":"ticker.<name>.100ms","data":{...}}}`
 * with `timestamp` in ms, IVs in percent, prices in BTC.
 *
 * What the conversion does, and does not, do (numbers are never changed):
 * - pitspa's decimal `implied_vol` is multiplied back by 100 and rounded to 1e-6 vol point, which
 *   undoes the binary noise of the collector's division (0.7204999999999999 -> 72.05);
 * - `bid_iv`/`ask_iv` are 0 (Deribit's "none") where the source has no IV for that side; MaksM05
 *   and pitspa carry no bid/ask IV at all, so theirs are all 0 while `best_bid_price`/
 *   `best_ask_price` carry the source's prices (a null MaksM05 price is printed 0, "no order",
 *   as Deribit's ticker does);
 * - `underlying_index` is printed only where the source has it (schepal): for the 2026 snapshots
 *   it is unknown and omitted rather than guessed;
 * - `greeks` are printed only where the source has a complete Deribit set (schepal); pitspa's
 *   partial greeks (no theta/rho) stay in the typed chain only;
 * - no future tickers: none of the three sources records a future's ticker; MaksM05's perpetual
 *   funding figure has no mark price, so it is kept in the typed chain (`funding`) but not emitted.
 */
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { SECONDS_PER_YEAR } from '../../src/domain/time.js';

/** Folder of the recorded exchange samples (override with env EXCHANGE_SAMPLES_DIR). */
export const EXCHANGE_SAMPLES_DIR =
  process.env.EXCHANGE_SAMPLES_DIR ?? fileURLToPath(new URL('../../../shared/exchange-samples', import.meta.url));

/** File names of the three full chains inside `${EXCHANGE_SAMPLES_DIR}/deribit`. */
export const CHAIN_SOURCE_FILES = {
  maksm05: 'MaksM05-crypto-vol-surface__snapshot_btc_surface_878opts_2026-05-26T192744Z.json',
  pitspa: 'pitspa-btc-vol-surface__surfaces_BTC_878opts_2026-05-26T183032Z.csv',
  schepal: 'schepal-deribit_data_collector__btc_options_data_ticker-chain_310opts_2020-05-14T0541Z.csv',
} as const;

/** Replay files written by scripts/convert-chains.ts (relative to the repository root). */
export const REPLAY_FILES = {
  maksm05: 'data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl',
  pitspa: 'data/replay/deribit-btc-chain-2026-05-26T1830Z.jsonl',
  schepal: 'data/replay/deribit-btc-chain-2020-05-14T0541Z.jsonl',
} as const;

export type ChainSourceId = keyof typeof CHAIN_SOURCE_FILES;

/** Deribit option greeks as printed on a ticker (delta N(d1)-style; vega per 1 vol point, USD). */
export interface DeribitGreeks {
  readonly delta: number;
  readonly gamma: number;
  readonly vega: number;
  readonly theta?: number;
  readonly rho?: number;
}

/**
 * The `data` of one Deribit option `ticker.*` notification, in Deribit's units: `timestamp` ms,
 * IVs percent (0 = none), prices in BTC, `underlying_price` = the expiry's forward (USD).
 * Optional members are omitted when the source does not have them.
 */
export interface DeribitOptionTickerData {
  readonly underlying_price: number;
  readonly underlying_index?: string;
  readonly timestamp: number;
  readonly stats?: Record<string, number | null>;
  readonly state: 'open';
  readonly settlement_price?: number | null;
  readonly open_interest?: number;
  readonly min_price?: number;
  readonly max_price?: number;
  readonly mark_price: number;
  readonly mark_iv: number;
  readonly last_price?: number | null;
  readonly interest_rate: number;
  readonly instrument_name: string;
  readonly index_price: number;
  readonly greeks?: DeribitGreeks;
  readonly estimated_delivery_price?: number;
  readonly bid_iv: number;
  readonly best_bid_price: number;
  readonly best_bid_amount?: number;
  readonly best_ask_price: number;
  readonly best_ask_amount?: number;
  readonly ask_iv: number;
}

/** A recorded chain in Deribit wire units, the common form between sources, JSONL and typed chains. */
export interface RecordedChain {
  /** Index notification (`deribit_price_index.btc_usd`): price USD, timestamp ms. */
  readonly index: { readonly price: number; readonly timestamp: number };
  /** Option tickers, sorted by (timestamp, expiry, strike, call first). */
  readonly tickers: readonly DeribitOptionTickerData[];
  /** Perpetual funding figure from the source, when it has one (not emitted on the wire). */
  readonly funding: ChainFunding | null;
  /** Greeks the source has but the wire form omits (pitspa: delta, gamma, vega), by instrument. */
  readonly partialGreeks: ReadonlyMap<string, DeribitGreeks>;
}

/** A perpetual funding figure attached to a chain. */
export interface ChainFunding {
  readonly instrument: string;
  /** 8-hour funding rate, fraction. */
  readonly funding8h: number;
  /** Index price at that funding print, USD. */
  readonly indexPrice: number;
}

/** One option of a typed chain. Service units: seconds, IV fractions. */
export interface ChainOption {
  /** Deribit instrument name, e.g. `BTC-26JUN26-100000-C`. */
  readonly instrument: string;
  /** Expiry, Unix seconds (08:00 UTC). */
  readonly expirationTimestamp: number;
  /** Strike, USD. */
  readonly strike: number;
  readonly optionType: 'C' | 'P';
  /** Mark IV, fraction. */
  readonly markIv: number;
  /** Bid/ask IV, fraction; null where the exchange prints 0 or the source has none. */
  readonly bidIv: number | null;
  readonly askIv: number | null;
  /** Mark price, BTC (inverse option). */
  readonly markPrice: number;
  /** Best bid/ask price, BTC; null when there is no order (0 on the wire). */
  readonly bestBidPrice: number | null;
  readonly bestAskPrice: number | null;
  /** The expiry's forward (Deribit `underlying_price`), USD. */
  readonly forward: number;
  /** Spot index, USD. */
  readonly indexPrice: number;
  /** Exchange timestamp, Unix seconds. */
  readonly timestamp: number;
  /** Greeks as the source printed them (possibly partial), or null. */
  readonly greeks: DeribitGreeks | null;
}

/** A typed full option chain of one snapshot. */
export interface OptionChain {
  /** The time the whole chain is known: the latest option timestamp, Unix seconds. */
  readonly observationTimestamp: number;
  /** Spot index at the snapshot (the index notification), USD. */
  readonly indexPrice: number;
  /** Options sorted by (expiry, strike, call first). */
  readonly options: readonly ChainOption[];
  /** No source records future tickers; always empty, kept for shape. */
  readonly futures: readonly never[];
  readonly funding: ChainFunding | null;
}

// ---------------------------------------------------------------------------------------------
// Instrument names and dates

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;

/** Deribit expiry code of a UTC date: day without leading zero + month + 2-digit year (`5JUN26`). */
export function deribitExpiryCode(expirationTimestampS: number): string {
  const d = new Date(expirationTimestampS * 1000);
  return `${d.getUTCDate()}${MONTHS[d.getUTCMonth()]}${String(d.getUTCFullYear() % 100).padStart(2, '0')}`;
}

/** Deribit option name `BTC-<expiry code>-<strike>-<C|P>`; throws on a non-integer strike (BTC strikes are whole USD). */
export function deribitOptionName(expirationTimestampS: number, strike: number, optionType: 'C' | 'P'): string {
  if (!Number.isInteger(strike)) throw new Error(`non-integer BTC strike ${strike}`);
  return `BTC-${deribitExpiryCode(expirationTimestampS)}-${strike}-${optionType}`;
}

/** Parses `BTC-26JUN26-100000-C` into expiry (Unix s, 08:00 UTC), strike and type; throws if malformed. */
export function parseDeribitOptionName(name: string): { expirationTimestamp: number; strike: number; optionType: 'C' | 'P' } {
  const m = /^([A-Z]+)-(\d{1,2})([A-Z]{3})(\d{2})-(\d+(?:d\d+)?)-([CP])$/.exec(name);
  if (!m) throw new Error(`not a Deribit option name: ${name}`);
  const month = MONTHS.indexOf(m[3] as (typeof MONTHS)[number]);
  if (month < 0) throw new Error(`bad month in ${name}`);
  const expirationTimestamp = Date.UTC(2000 + Number(m[4]), month, Number(m[2]), 8) / 1000;
  return { expirationTimestamp, strike: Number((m[5] as string).replace('d', '.')), optionType: m[6] as 'C' | 'P' };
}

/** ISO date or date-time text -> Unix ms; a bare date `YYYY-MM-DD` means 08:00 UTC (Deribit expiry time). */
function isoToMs(s: string): number {
  const t = /^\d{4}-\d{2}-\d{2}$/.test(s) ? Date.parse(`${s}T08:00:00Z`) : Date.parse(s);
  if (!Number.isFinite(t)) throw new Error(`bad date ${s}`);
  return t;
}

// ---------------------------------------------------------------------------------------------
// CSV and Python-repr parsing

/** Minimal RFC 4180 CSV parser (quoted fields, doubled quotes, CRLF/LF). Returns rows of strings. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let inQ = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (inQ) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else inQ = false;
      } else field += ch;
    } else if (ch === '"') inQ = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => !(r.length === 1 && r[0] === ''));
}

function csvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
}

/** Python-repr dict of numbers/None (pandas dump of a JSON object) -> JSON value. */
export function parsePythonReprDict(s: string): Record<string, number | null> {
  const json = s.replace(/'/g, '"').replace(/\bNone\b/g, 'null').replace(/\bTrue\b/g, 'true').replace(/\bFalse\b/g, 'false');
  const v: unknown = JSON.parse(json);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`not a dict: ${s}`);
  return v as Record<string, number | null>;
}

function num(s: string | undefined, what: string): number {
  const v = Number(s);
  if (s === undefined || s.trim() === '' || !Number.isFinite(v)) throw new Error(`bad number for ${what}: ${s}`);
  return v;
}

function numOrNull(s: string | undefined): number | null {
  if (s === undefined || s.trim() === '' || s === 'nan') return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

// ---------------------------------------------------------------------------------------------
// Readers (source file -> RecordedChain)

function sortTickers(ts: DeribitOptionTickerData[]): DeribitOptionTickerData[] {
  const key = (t: DeribitOptionTickerData) => parseDeribitOptionName(t.instrument_name);
  return ts
    .map((t) => ({ t, n: key(t) }))
    .sort(
      (x, y) =>
        x.t.timestamp - y.t.timestamp ||
        x.n.expirationTimestamp - y.n.expirationTimestamp ||
        x.n.strike - y.n.strike ||
        (x.n.optionType === y.n.optionType ? 0 : x.n.optionType === 'C' ? -1 : 1),
    )
    .map((x) => x.t);
}

/** A source file's text; a path ending in `.gz` is decompressed (the test copies are stored gzip-compressed). */
const readText = (path: string): string => (path.endsWith('.gz') ? gunzipSync(readFileSync(path)).toString('utf8') : readFileSync(path, 'utf8'));
const samplePath = (id: ChainSourceId): string => `${EXCHANGE_SAMPLES_DIR}/deribit/${CHAIN_SOURCE_FILES[id]}`;

/**
 * Reads the MaksM05 snapshot (JSON: `snapshot_time`, `instruments[]`, `option_quotes[]`,
 * `forwards[]`, `funding_rates[]`). Every ticker gets the snapshot time; `underlying_price` and
 * `index_price` come from the expiry's `forwards[]` entry.
 * @throws Error on a missing instrument/forward or malformed number.
 */
export function readMaksM05Snapshot(path: string = samplePath('maksm05')): RecordedChain {
  const j = JSON.parse(readText(path)) as {
    snapshot_time: string;
    instruments: { instrument_name: string; expiry: string; strike: number; option_type: 'C' | 'P' }[];
    option_quotes: { instrument_name: string; deribit_mark_iv: number; mark_price: number; best_bid: number | null; best_ask: number | null; open_interest: number | null }[];
    forwards: { expiry: string; forward_price: number; index_price: number }[];
    funding_rates: { funding_rate_8h: number; index_price: number; instrument_name: string }[];
  };
  const ts = isoToMs(j.snapshot_time);
  const inst = new Map(j.instruments.map((i) => [i.instrument_name, i]));
  const fwd = new Map(j.forwards.map((f) => [isoToMs(f.expiry), f]));
  const tickers: DeribitOptionTickerData[] = j.option_quotes.map((q) => {
    const i = inst.get(q.instrument_name);
    if (!i) throw new Error(`MaksM05: no instrument ${q.instrument_name}`);
    const f = fwd.get(isoToMs(i.expiry));
    if (!f) throw new Error(`MaksM05: no forward for ${i.expiry}`);
    const t: DeribitOptionTickerData = {
      underlying_price: f.forward_price,
      timestamp: ts,
      state: 'open',
      ...(q.open_interest !== null ? { open_interest: q.open_interest } : {}),
      mark_price: q.mark_price,
      mark_iv: q.deribit_mark_iv,
      interest_rate: 0,
      instrument_name: q.instrument_name,
      index_price: f.index_price,
      bid_iv: 0,
      best_bid_price: q.best_bid ?? 0,
      best_ask_price: q.best_ask ?? 0,
      ask_iv: 0,
    };
    return t;
  });
  const idx = j.forwards[0];
  if (!idx) throw new Error('MaksM05: no forwards');
  const fr = j.funding_rates[0];
  return {
    index: { price: idx.index_price, timestamp: ts },
    tickers: sortTickers(tickers),
    funding: fr ? { instrument: fr.instrument_name, funding8h: fr.funding_rate_8h, indexPrice: fr.index_price } : null,
    partialGreeks: new Map(),
  };
}

/**
 * Reads the pitspa CSV (`snapshot_ts, expiry, days_to_expiry, strike, option_type, bid, ask,
 * mark_price, forward_price, index_price, implied_vol, delta, gamma, vega, open_interest,
 * volume_24h`). `implied_vol` is decimal: mark_iv = round(implied_vol · 100, 1e-6).
 */
export function readPitspaCsv(path: string = samplePath('pitspa')): RecordedChain {
  const rows = csvObjects(readText(path));
  if (rows.length === 0) throw new Error('pitspa: empty file');
  const greeks = new Map<string, DeribitGreeks>();
  const tickers = rows.map((r) => {
    const ts = isoToMs(r.snapshot_ts as string);
    const exp = isoToMs(r.expiry as string) / 1000;
    const type = r.option_type === 'C' ? 'C' : r.option_type === 'P' ? 'P' : null;
    if (!type) throw new Error(`pitspa: bad option_type ${r.option_type}`);
    const name = deribitOptionName(exp, num(r.strike, 'strike'), type);
    const delta = numOrNull(r.delta);
    const gamma = numOrNull(r.gamma);
    const vega = numOrNull(r.vega);
    if (delta !== null && gamma !== null && vega !== null) greeks.set(name, { delta, gamma, vega });
    const oi = numOrNull(r.open_interest);
    const t: DeribitOptionTickerData = {
      underlying_price: num(r.forward_price, 'forward_price'),
      timestamp: ts,
      state: 'open',
      ...(oi !== null ? { open_interest: oi } : {}),
      mark_price: num(r.mark_price, 'mark_price'),
      mark_iv: Math.round(num(r.implied_vol, 'implied_vol') * 100 * 1e6) / 1e6,
      interest_rate: 0,
      instrument_name: name,
      index_price: num(r.index_price, 'index_price'),
      bid_iv: 0,
      best_bid_price: num(r.bid, 'bid'),
      best_ask_price: num(r.ask, 'ask'),
      ask_iv: 0,
    };
    return t;
  });
  const sorted = sortTickers(tickers);
  const first = sorted[0] as DeribitOptionTickerData;
  return { index: { price: first.index_price, timestamp: first.timestamp }, tickers: sorted, funding: null, partialGreeks: greeks };
}

/**
 * Reads the schepal CSV (pandas dump of `public/ticker` results; `stats` and `greeks` as Python
 * repr). Ticker fields are kept as printed; `bids`/`asks`/`change_id` (order-book fields) and the
 * collector's `expiration_timestamp`/`option_type`/`strike` columns are not part of a ticker
 * notification and are left out. Empty `last_price`/`settlement_price` (pandas NaN for Deribit's
 * null) become null.
 */
export function readSchepalCsv(path: string = samplePath('schepal')): RecordedChain {
  const rows = csvObjects(readText(path));
  if (rows.length === 0) throw new Error('schepal: empty file');
  const tickers = rows.map((r) => {
    const g = parsePythonReprDict(r.greeks as string);
    const greeks: DeribitGreeks = {
      vega: g.vega as number,
      theta: g.theta as number,
      rho: g.rho as number,
      gamma: g.gamma as number,
      delta: g.delta as number,
    };
    const t: DeribitOptionTickerData = {
      underlying_price: num(r.underlying_price, 'underlying_price'),
      underlying_index: r.underlying_index as string,
      timestamp: num(r.timestamp, 'timestamp'),
      stats: parsePythonReprDict(r.stats as string),
      state: 'open',
      settlement_price: numOrNull(r.settlement_price),
      open_interest: num(r.open_interest, 'open_interest'),
      min_price: num(r.min_price, 'min_price'),
      max_price: num(r.max_price, 'max_price'),
      mark_price: num(r.mark_price, 'mark_price'),
      mark_iv: num(r.mark_iv, 'mark_iv'),
      last_price: numOrNull(r.last_price),
      interest_rate: num(r.interest_rate, 'interest_rate'),
      instrument_name: r.instrument_name as string,
      index_price: num(r.index_price, 'index_price'),
      greeks,
      estimated_delivery_price: num(r.estimated_delivery_price, 'estimated_delivery_price'),
      bid_iv: num(r.bid_iv, 'bid_iv'),
      best_bid_price: num(r.best_bid_price, 'best_bid_price'),
      best_bid_amount: num(r.best_bid_amount, 'best_bid_amount'),
      best_ask_price: num(r.best_ask_price, 'best_ask_price'),
      best_ask_amount: num(r.best_ask_amount, 'best_ask_amount'),
      ask_iv: num(r.ask_iv, 'ask_iv'),
    };
    if (r.state !== 'open') throw new Error(`schepal: state ${r.state}`);
    const p = parseDeribitOptionName(t.instrument_name);
    if (p.expirationTimestamp * 1000 !== num(r.expiration_timestamp, 'expiration_timestamp')) throw new Error(`schepal: expiry mismatch ${t.instrument_name}`);
    return t;
  });
  const sorted = sortTickers(tickers);
  const first = sorted[0] as DeribitOptionTickerData;
  return { index: { price: first.index_price, timestamp: first.timestamp }, tickers: sorted, funding: null, partialGreeks: new Map() };
}

/**
 * Reads one of the three source files by id (default paths under {@link EXCHANGE_SAMPLES_DIR}); `path` may
 * name a gzip-compressed copy (`.gz`).
 */
export function readRecordedChain(id: ChainSourceId, path?: string): RecordedChain {
  switch (id) {
    case 'maksm05':
      return readMaksM05Snapshot(path);
    case 'pitspa':
      return readPitspaCsv(path);
    default:
      return readSchepalCsv(path);
  }
}

// ---------------------------------------------------------------------------------------------
// Wire form (JSON Lines of Deribit subscription notifications)

/**
 * JSON Lines of Deribit notifications for a recorded chain: one `deribit_price_index.btc_usd`
 * notification, then one `ticker.<name>.100ms` notification per option, sorted by timestamp
 * (stable; ties by expiry, strike, call first). Deterministic: the same chain gives the same bytes.
 */
export function toReplayLines(rc: RecordedChain): string[] {
  const lines: { ts: number; line: string }[] = [];
  lines.push({
    ts: rc.index.timestamp,
    line: JSON.stringify({
      jsonrpc: '2.0',
      method: 'subscription',
      params: { channel: 'deribit_price_index.btc_usd', data: { index_name: 'btc_usd', price: rc.index.price, timestamp: rc.index.timestamp } },
    }),
  });
  for (const t of rc.tickers) {
    lines.push({
      ts: t.timestamp,
      line: JSON.stringify({ jsonrpc: '2.0', method: 'subscription', params: { channel: `ticker.${t.instrument_name}.100ms`, data: t } }),
    });
  }
  // Array.prototype.sort is stable (ES2019): the index line stays first among equal timestamps.
  return lines.sort((x, y) => x.ts - y.ts).map((x) => x.line);
}

/**
 * Parses JSON Lines written by {@link toReplayLines} back into a recorded chain (option tickers and
 * the index; other channels are ignored). Throws on malformed JSON or a missing index notification.
 */
export function parseReplayJsonl(text: string): RecordedChain {
  let index: { price: number; timestamp: number } | null = null;
  const tickers: DeribitOptionTickerData[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const msg = JSON.parse(line) as { method?: string; params?: { channel?: string; data?: unknown } };
    const ch = msg.params?.channel ?? '';
    if (ch === 'deribit_price_index.btc_usd' && index === null) {
      const d = msg.params?.data as { price: number; timestamp: number };
      index = { price: d.price, timestamp: d.timestamp };
    } else if (/^ticker\.BTC-\d{1,2}[A-Z]{3}\d{2}-\d+-[CP]\./.test(ch)) {
      tickers.push(msg.params?.data as DeribitOptionTickerData);
    }
  }
  if (index === null) throw new Error('replay file has no deribit_price_index.btc_usd notification');
  return { index, tickers, funding: null, partialGreeks: new Map() };
}

// ---------------------------------------------------------------------------------------------
// Typed chain

/**
 * Typed chain of a recorded chain: ms -> s, percent -> fraction, 0 IV / 0 price -> null.
 * Options sorted by (expiry, strike, call first). observationTimestamp = latest option timestamp.
 */
export function chainFromRecorded(rc: RecordedChain): OptionChain {
  const options: ChainOption[] = rc.tickers.map((t) => {
    const p = parseDeribitOptionName(t.instrument_name);
    return {
      instrument: t.instrument_name,
      expirationTimestamp: p.expirationTimestamp,
      strike: p.strike,
      optionType: p.optionType,
      markIv: t.mark_iv / 100,
      bidIv: t.bid_iv > 0 && t.best_bid_price !== 0 ? t.bid_iv / 100 : null,
      askIv: t.ask_iv > 0 && t.best_ask_price !== 0 ? t.ask_iv / 100 : null,
      markPrice: t.mark_price,
      bestBidPrice: t.best_bid_price > 0 ? t.best_bid_price : null,
      bestAskPrice: t.best_ask_price > 0 ? t.best_ask_price : null,
      forward: t.underlying_price,
      indexPrice: t.index_price,
      timestamp: t.timestamp / 1000,
      greeks: t.greeks ?? rc.partialGreeks.get(t.instrument_name) ?? null,
    };
  });
  options.sort(
    (x, y) => x.expirationTimestamp - y.expirationTimestamp || x.strike - y.strike || (x.optionType === y.optionType ? 0 : x.optionType === 'C' ? -1 : 1),
  );
  const observationTimestamp = options.reduce((s, o) => Math.max(s, o.timestamp), rc.index.timestamp / 1000);
  return { observationTimestamp, indexPrice: rc.index.price, options, futures: [], funding: rc.funding };
}

/** Loads the typed chain of one source file (MaksM05 2026-05-26 19:27Z, pitspa 18:30Z, schepal 2020-05-14). */
export function loadChain(id: ChainSourceId, path?: string): OptionChain {
  return chainFromRecorded(readRecordedChain(id, path));
}

/** Loads a typed chain from a replay JSON Lines file (data/replay/*.jsonl). */
export function loadReplayChain(path: string): OptionChain {
  return chainFromRecorded(parseReplayJsonl(readText(path)));
}

// ---------------------------------------------------------------------------------------------
// Per-expiry OTM quotes (calibration input)

/** One expiry of a chain, ready for SVI calibration. */
export interface ExpiryQuotes {
  readonly expirationTimestamp: number;
  /** Years ACT/365 from the chain's observation time. */
  readonly T: number;
  /** The expiry's forward: median of its options' `underlying_price`, USD. */
  readonly forward: number;
  /** OTM quotes (puts with K < F, calls with K >= F), one per strike, sorted by strike. */
  readonly quotes: readonly { readonly strike: number; readonly k: number; readonly iv: number; readonly bidIv: number | null; readonly askIv: number | null; readonly instrument: string }[];
}

/**
 * Groups a chain by expiry and keeps the out-of-the-money side of each strike: puts below the
 * forward, calls at or above it (Deribit prints one mark IV per strike for both anyway).
 * k = ln(K/F) with F the median `underlying_price` of the expiry (calls and puts of one strike can
 * carry forwards a few dollars apart when their tickers were taken seconds apart).
 * T = (expiry - observationTimestamp) / (365·86400); expiries with T <= 0 are skipped.
 */
export function otmQuotesByExpiry(chain: OptionChain): ExpiryQuotes[] {
  const byExp = new Map<number, ChainOption[]>();
  for (const o of chain.options) {
    const l = byExp.get(o.expirationTimestamp);
    if (l) l.push(o);
    else byExp.set(o.expirationTimestamp, [o]);
  }
  const out: ExpiryQuotes[] = [];
  for (const [exp, opts] of [...byExp.entries()].sort((a, b) => a[0] - b[0])) {
    const T = (exp - chain.observationTimestamp) / SECONDS_PER_YEAR;
    if (!(T > 0)) continue;
    const fs = opts.map((o) => o.forward).sort((a, b) => a - b);
    const h = fs.length >> 1;
    const F = fs.length % 2 ? (fs[h] as number) : ((fs[h - 1] as number) + (fs[h] as number)) / 2;
    const quotes = opts
      .filter((o) => (o.strike < F ? o.optionType === 'P' : o.optionType === 'C'))
      .map((o) => ({ strike: o.strike, k: Math.log(o.strike / F), iv: o.markIv, bidIv: o.bidIv, askIv: o.askIv, instrument: o.instrument }))
      .sort((a, b) => a.strike - b.strike);
    out.push({ expirationTimestamp: exp, T, forward: F, quotes });
  }
  return out;
}
