/**
 * Deribit-shaped instrument chains for the simulator, always ROLLED TO DATES AFTER "now".
 *
 * The listing pattern is taken from real Deribit listings (test/fixtures/deribit/):
 * - crypto-market-raw-data__get_instruments_option_BTC+ETH_2025-05-08.json (1268 options):
 *   dailies listed 3 days ahead, weeklies (Fridays) listed about 3 weeks ahead, monthlies (last
 *   Friday of the month) listed 3 months ahead, quarterlies (last Friday of Mar/Jun/Sep/Dec)
 *   listed a year ahead; every expiry at 08:00 UTC; `settlement_period` day/week/month;
 * - nautilus__rest-get_expirations_any_2026-05-20.json and the 878-option BTC snapshot of
 *   2026-05-26 (MaksM05 ... snapshot_btc_surface_878opts): 11 expiries, strike spacing 500/1000
 *   near the money for short expiries, 2000/5000/10000/20000 further out and for long expiries;
 * - crypto-market-raw-data__get_instruments_future_BTC+ETH_2025-05-02.json: futures on the next
 *   2 weekly Fridays, the monthlies within 2 months and 4 quarterlies, plus the perpetuals;
 * - cryptofeed__rest-get_instruments_USDC_expired-false.json: linear `SOL_USDC-PERPETUAL`,
 *   `XRP_USDC-PERPETUAL` (USDC-settled, `instrument_type` linear). Linear options are named
 *   `SOL_USDC-27JUN25-150-C`, with 'd' as the decimal point in strikes (`XRP_USDC-27JUN25-2d2-C`,
 *   docs.deribit.com "Instrument naming").
 * Strikes are generated relative to the index at listing time with "nice" steps that widen away
 * from the money (see {@link strikeGrid}). When expiries pass they roll off and new ones appear
 * ({@link DeribitChains.refresh}).
 */
import type { Market, Underlying } from './market.js';
import { MS_PER_YEAR } from './market.js';
import { ListingBook } from './listingBook.js';

const DAY_MS = 86_400_000;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
/** Deribit's expiration_timestamp of perpetuals (3000-01-01T08:00Z). */
export const PERPETUAL_EXPIRATION_MS = 32503708800000;

/** Deribit `settlement_period` of a dated instrument. */
export type SettlementPeriod = 'day' | 'week' | 'month' | 'perpetual';

/** How many expiries of each kind are listed. */
export interface ExpirySchedule {
  /** Next N daily expiries (08:00 UTC of the following days). */
  readonly dailies: number;
  /** Fridays up to this many days after the last 08:00 UTC. */
  readonly weeklyWindowDays: number;
  /** Next N month-end Fridays. */
  readonly monthlies: number;
  /** Next N quarter-end (Mar/Jun/Sep/Dec) Fridays. */
  readonly quarterlies: number;
}

/** One listed expiry. */
export interface Expiry {
  /** 08:00 UTC of the expiry day, Unix ms. */
  readonly ms: number;
  readonly period: Exclude<SettlementPeriod, 'perpetual'>;
  /** Deribit date code, e.g. `9MAY25`. */
  readonly code: string;
}

/** 08:00 UTC of the UTC day containing `ms`. */
function at0800(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS + 8 * 3_600_000;
}

/** The last 08:00 UTC at or before `ms` (the last listing/expiry boundary). */
export function lastBoundary(ms: number): number {
  const b = at0800(ms);
  return b <= ms ? b : b - DAY_MS;
}

/** 08:00 UTC of the last Friday of (year, month 0-11). */
export function lastFriday(year: number, month: number): number {
  const lastDay = new Date(Date.UTC(year, month + 1, 0));
  const back = (lastDay.getUTCDay() - 5 + 7) % 7;
  return Date.UTC(year, month, lastDay.getUTCDate() - back, 8);
}

/** Deribit date code of an expiry: day without leading zero, month, 2-digit year (`9MAY25`). */
export function deribitDateCode(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCDate()}${MONTHS[d.getUTCMonth()]}${String(d.getUTCFullYear() % 100).padStart(2, '0')}`;
}

function periodOf(ms: number): Expiry['period'] {
  const d = new Date(ms);
  if (d.getUTCDay() !== 5) return 'day';
  return lastFriday(d.getUTCFullYear(), d.getUTCMonth()) === ms ? 'month' : 'week';
}

/**
 * Expiries listed at time `nowMs` under a schedule, ascending, all strictly after `nowMs`,
 * all at 08:00 UTC.
 */
export function listExpiries(nowMs: number, s: ExpirySchedule): Expiry[] {
  const set = new Set<number>();
  const D = lastBoundary(nowMs);
  for (let i = 1; i <= s.dailies; i++) set.add(D + i * DAY_MS);
  for (let t = D + DAY_MS; t <= D + s.weeklyWindowDays * DAY_MS; t += DAY_MS) {
    if (new Date(t).getUTCDay() === 5) set.add(t);
  }
  const d = new Date(nowMs);
  let y = d.getUTCFullYear();
  let m = d.getUTCMonth();
  let months = 0;
  let quarters = 0;
  while (months < s.monthlies || quarters < s.quarterlies) {
    const f = lastFriday(y, m);
    if (f > nowMs) {
      if (months < s.monthlies) {
        set.add(f);
        months++;
      }
      if (m % 3 === 2 && quarters < s.quarterlies) {
        set.add(f);
        quarters++;
      }
    }
    m++;
    if (m === 12) {
      m = 0;
      y++;
    }
  }
  return [...set]
    .filter((t) => t > nowMs)
    .sort((a, b) => a - b)
    .map((ms) => ({ ms, period: periodOf(ms), code: deribitDateCode(ms) }));
}

/**
 * Nominal listing time of an expiry (Deribit lists dailies 3 days, weeklies 3 weeks, monthlies
 * 3 months and quarterlies a year ahead, at 08:00 UTC; futures weeklies 2 weeks and monthlies
 * 2 months ahead).
 */
function nominalCreation(e: Expiry, kind: 'option' | 'future'): number {
  const d = new Date(e.ms);
  const quarterly = e.period === 'month' && d.getUTCMonth() % 3 === 2;
  if (e.period === 'day') return e.ms - 3 * DAY_MS;
  if (e.period === 'week') return e.ms - (kind === 'option' ? 22 : 14) * DAY_MS;
  if (quarterly) return e.ms - 364 * DAY_MS;
  return e.ms - (kind === 'option' ? 91 : 63) * DAY_MS;
}

/** Smallest "nice" number (1, 2, 2.5, 5 times a power of ten) >= x. */
export function niceCeil(x: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    const v = round(m * p);
    if (v >= x * (1 - 1e-12)) return v;
  }
  return round(10 * p);
}

/** The "nice" number (1, 2, 2.5, 5 times a power of ten) nearest to x in log scale. */
export function niceRound(x: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  let best = p;
  for (const m of [1, 2, 2.5, 5, 10]) {
    const v = round(m * p);
    if (Math.abs(Math.log(v / x)) < Math.abs(Math.log(best / x))) best = v;
  }
  return best;
}

function round(x: number, dp = 10): number {
  return Number(x.toFixed(dp));
}

/** Shape of a strike grid: see {@link strikeGrid}. */
export interface StrikeGridShape {
  /** Zone widths are divided by this (> 0; larger = fewer strikes away from the money). Default 1. */
  readonly density?: number;
  /** Highest strike / spot (default 4.5). */
  readonly maxUp?: number;
  /** Spot / lowest strike (default 5). */
  readonly maxDown?: number;
}

/**
 * Strike grid around `spot` for an expiry whose strikes were listed with a width
 * w = atmVol * sqrt(Tlisting) in log-moneyness x = ln(K / spot).
 * Steps: u = niceCeil(spot (0.004 + 0.025 w)) for |x| <= 0.4 w / density, niceCeil(2u) up to
 * w / density, niceCeil(5u) up to 2 w / density, niceCeil(10u) beyond; range x in
 * [-min(2.2 w, ln maxDown), min(2.8 w, ln maxUp)], with at least 3 strikes on each side of the
 * spot. Reproduces the spacing of the recorded BTC chains (500 for dailies, 1000 for weeklies
 * and monthlies, 2000 near the money for quarterlies at ~90k; 20k to 400k for quarterlies).
 * @returns ascending strikes (rounded to 10 decimals, multiples of their zone step).
 */
export function strikeGrid(spot: number, w: number, shape: StrikeGridShape = {}): number[] {
  const density = shape.density ?? 1;
  const u = niceCeil(spot * (0.004 + 0.025 * w));
  const zones: Array<[number, number]> = [
    [(0.4 * w) / density, u],
    [(1.0 * w) / density, niceCeil(2 * u)],
    [(2.0 * w) / density, niceCeil(5 * u)],
    [Infinity, niceCeil(10 * u)],
  ];
  const upMax = Math.min(2.8 * w, Math.log(shape.maxUp ?? 4.5));
  const downMax = Math.min(2.2 * w, Math.log(shape.maxDown ?? 5));
  const out = new Set<number>();
  let a = 0;
  for (const [edge, step] of zones) {
    const bUp = Math.min(edge, upMax);
    if (bUp > a) {
      const hi = spot * Math.exp(bUp);
      for (let k = Math.ceil((spot * Math.exp(a)) / step); k * step <= hi; k++) out.add(round(k * step));
    }
    const bDown = Math.min(edge, downMax);
    if (bDown > a) {
      const lo = spot * Math.exp(-bDown);
      for (let k = Math.floor((spot * Math.exp(-a)) / step); k > 0 && k * step >= lo; k--) out.add(round(k * step));
    }
    a = edge;
    if (a >= upMax && a >= downMax) break;
  }
  // At least 3 strikes each side of the spot at the finest step.
  const below = [...out].filter((k) => k < spot).length;
  const above = [...out].filter((k) => k > spot).length;
  for (let i = 1; i <= 3 - below; i++) {
    const k = round((Math.floor(spot / u) - i + 1) * u);
    if (k > 0) out.add(k);
  }
  for (let i = 1; i <= 3 - above; i++) out.add(round((Math.ceil(spot / u) + i - 1) * u));
  return [...out].filter((k) => k > 0).sort((a, b) => a - b);
}

/** Deribit strike text: integer as is; decimals with 'd' as the point (`2d2`, `0d625`). */
export function strikeText(strike: number): string {
  return String(round(strike)).replace('.', 'd');
}

/** Contract specification fields of one instrument family (Deribit get_instruments values). */
export interface ContractSpec {
  readonly contract_size: number;
  readonly min_trade_amount: number;
  readonly tick_size: number;
  readonly tick_size_steps: ReadonlyArray<{ readonly above_price: number; readonly tick_size: number }>;
  readonly taker_commission: number;
  readonly maker_commission: number;
  readonly block_trade_commission: number;
  readonly block_trade_min_trade_amount: number;
  readonly block_trade_tick_size: number;
  readonly max_leverage?: number;
  readonly max_liquidation_commission?: number;
}

/** A Deribit product family on one underlying. */
export interface ProductSpec {
  readonly underlying: Underlying;
  /** Instrument name prefix: BTC, ETH, SOL_USDC, XRP_USDC. */
  readonly prefix: string;
  /** Linear (USDC-settled) or inverse ("reversed", coin-settled). */
  readonly linear: boolean;
  readonly baseCurrency: string;
  /** `currency` of get_instruments that lists it (BTC, ETH or USDC). */
  readonly currency: string;
  /** Quote currency of options (BTC/ETH for inverse, USDC for linear). */
  readonly optionQuoteCurrency: string;
  /** Quote currency of futures (USD for inverse, USDC for linear). */
  readonly futureQuoteCurrency: string;
  readonly settlementCurrency: string;
  readonly counterCurrency: string;
  /** Deribit index name, e.g. btc_usd, sol_usdc. */
  readonly priceIndex: string;
  /** Decimals of index/forward/futures prices. */
  readonly priceDecimals: number;
  /** Decimals of option prices (mark). */
  readonly optionPriceDecimals: number;
  readonly optionSchedule: ExpirySchedule;
  /** Dated futures schedule; null when Deribit lists none (SOL_USDC, XRP_USDC). */
  readonly futureSchedule: ExpirySchedule | null;
  /** Strike grid shape for {@link strikeGrid}. */
  readonly strikes: StrikeGridShape;
  readonly option: ContractSpec;
  readonly future: ContractSpec | null;
  readonly perpetual: ContractSpec & { readonly instrument_id: number; readonly creation_timestamp: number };
}

const INVERSE_OPTION_TICKS = [{ above_price: 0.005, tick_size: 0.0005 }] as const;

/**
 * The four Deribit product families the simulator lists. Contract fields are copied from the
 * recorded listings (BTC/ETH options and futures 2025-05; USDC perpetuals 2022-05); the linear
 * option fields (contract_size 10 for SOL per public notes; XRP values) are best guesses.
 */
export const PRODUCTS: readonly ProductSpec[] = [
  {
    underlying: 'BTC',
    prefix: 'BTC',
    linear: false,
    baseCurrency: 'BTC',
    currency: 'BTC',
    optionQuoteCurrency: 'BTC',
    futureQuoteCurrency: 'USD',
    settlementCurrency: 'BTC',
    counterCurrency: 'USD',
    priceIndex: 'btc_usd',
    priceDecimals: 2,
    optionPriceDecimals: 8,
    optionSchedule: { dailies: 4, weeklyWindowDays: 21, monthlies: 3, quarterlies: 4 },
    futureSchedule: { dailies: 0, weeklyWindowDays: 14, monthlies: 2, quarterlies: 4 },
    strikes: { density: 1 },
    option: {
      contract_size: 1,
      min_trade_amount: 0.1,
      tick_size: 0.0001,
      tick_size_steps: INVERSE_OPTION_TICKS,
      taker_commission: 0.0003,
      maker_commission: 0.0003,
      block_trade_commission: 0.0003,
      block_trade_min_trade_amount: 25,
      block_trade_tick_size: 0.0001,
    },
    future: {
      contract_size: 10,
      min_trade_amount: 10,
      tick_size: 2.5,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0,
      block_trade_commission: 0.00025,
      block_trade_min_trade_amount: 200000,
      block_trade_tick_size: 0.01,
      max_leverage: 25,
      max_liquidation_commission: 0.0075,
    },
    perpetual: {
      instrument_id: 210838,
      creation_timestamp: 1534242287000,
      contract_size: 10,
      min_trade_amount: 10,
      tick_size: 0.5,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0,
      block_trade_commission: 0.00025,
      block_trade_min_trade_amount: 200000,
      block_trade_tick_size: 0.01,
      max_leverage: 50,
      max_liquidation_commission: 0.0075,
    },
  },
  {
    underlying: 'ETH',
    prefix: 'ETH',
    linear: false,
    baseCurrency: 'ETH',
    currency: 'ETH',
    optionQuoteCurrency: 'ETH',
    futureQuoteCurrency: 'USD',
    settlementCurrency: 'ETH',
    counterCurrency: 'USD',
    priceIndex: 'eth_usd',
    priceDecimals: 2,
    optionPriceDecimals: 8,
    optionSchedule: { dailies: 4, weeklyWindowDays: 21, monthlies: 3, quarterlies: 4 },
    futureSchedule: { dailies: 0, weeklyWindowDays: 14, monthlies: 2, quarterlies: 4 },
    strikes: { density: 1.6 },
    option: {
      contract_size: 1,
      min_trade_amount: 1,
      tick_size: 0.0001,
      tick_size_steps: INVERSE_OPTION_TICKS,
      taker_commission: 0.0003,
      maker_commission: 0.0003,
      block_trade_commission: 0.0003,
      block_trade_min_trade_amount: 250,
      block_trade_tick_size: 0.0001,
    },
    future: {
      contract_size: 1,
      min_trade_amount: 1,
      tick_size: 0.25,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0,
      block_trade_commission: 0.00025,
      block_trade_min_trade_amount: 100000,
      block_trade_tick_size: 0.01,
      max_leverage: 25,
      max_liquidation_commission: 0.009,
    },
    perpetual: {
      instrument_id: 210760,
      creation_timestamp: 1552568454000,
      contract_size: 1,
      min_trade_amount: 1,
      tick_size: 0.05,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0,
      block_trade_commission: 0.00025,
      block_trade_min_trade_amount: 100000,
      block_trade_tick_size: 0.01,
      max_leverage: 50,
      max_liquidation_commission: 0.009,
    },
  },
  {
    underlying: 'SOL',
    prefix: 'SOL_USDC',
    linear: true,
    baseCurrency: 'SOL',
    currency: 'USDC',
    optionQuoteCurrency: 'USDC',
    futureQuoteCurrency: 'USDC',
    settlementCurrency: 'USDC',
    counterCurrency: 'USDC',
    priceIndex: 'sol_usdc',
    priceDecimals: 4,
    optionPriceDecimals: 4,
    optionSchedule: { dailies: 2, weeklyWindowDays: 14, monthlies: 2, quarterlies: 1 },
    futureSchedule: null,
    strikes: { density: 2, maxUp: 3, maxDown: 3 },
    option: {
      contract_size: 10,
      min_trade_amount: 1,
      tick_size: 0.01,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0.0005,
      block_trade_commission: 0.0003,
      block_trade_min_trade_amount: 100,
      block_trade_tick_size: 0.01,
    },
    future: null,
    perpetual: {
      instrument_id: 213039,
      creation_timestamp: 1647349200000,
      contract_size: 0.1,
      min_trade_amount: 0.1,
      tick_size: 0.01,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0,
      block_trade_commission: 0.0001,
      block_trade_min_trade_amount: 1000,
      block_trade_tick_size: 0.01,
      max_leverage: 25,
      max_liquidation_commission: 0.0075,
    },
  },
  {
    underlying: 'XRP',
    prefix: 'XRP_USDC',
    linear: true,
    baseCurrency: 'XRP',
    currency: 'USDC',
    optionQuoteCurrency: 'USDC',
    futureQuoteCurrency: 'USDC',
    settlementCurrency: 'USDC',
    counterCurrency: 'USDC',
    priceIndex: 'xrp_usdc',
    priceDecimals: 4,
    optionPriceDecimals: 6,
    optionSchedule: { dailies: 1, weeklyWindowDays: 14, monthlies: 2, quarterlies: 1 },
    futureSchedule: null,
    strikes: { density: 2, maxUp: 3, maxDown: 3 },
    option: {
      contract_size: 1000,
      min_trade_amount: 1,
      tick_size: 0.0001,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0.0005,
      block_trade_commission: 0.0003,
      block_trade_min_trade_amount: 100,
      block_trade_tick_size: 0.0001,
    },
    future: null,
    perpetual: {
      instrument_id: 212737,
      creation_timestamp: 1647435599000,
      contract_size: 10,
      min_trade_amount: 10,
      tick_size: 0.0001,
      tick_size_steps: [],
      taker_commission: 0.0005,
      maker_commission: 0,
      block_trade_commission: 0.0001,
      block_trade_min_trade_amount: 100000,
      block_trade_tick_size: 0.0001,
      max_leverage: 25,
      max_liquidation_commission: 0.0075,
    },
  },
];

/** One simulated instrument with its Deribit get_instruments object. */
export interface SimInstrument {
  readonly name: string;
  readonly kind: 'option' | 'future';
  readonly product: ProductSpec;
  readonly underlying: Underlying;
  /** Unix ms; {@link PERPETUAL_EXPIRATION_MS} for perpetuals. */
  readonly expiryMs: number;
  readonly perpetual: boolean;
  readonly strike?: number;
  readonly optionType?: 'call' | 'put';
  /** For options: the dated future of the same expiry, when listed (Deribit `underlying_index`). */
  readonly futureName?: string;
  /** Exact Deribit instrument object (keys in the API's order). */
  readonly json: Readonly<Record<string, unknown>>;
}

/** Key order of Deribit's get_instruments objects (docs.deribit.com OpenAPI example). */
const KEY_ORDER = [
  'tick_size', 'tick_size_steps', 'taker_commission', 'strike', 'settlement_period', 'settlement_currency', 'rfq',
  'quote_currency', 'price_index', 'option_type', 'min_trade_amount', 'max_liquidation_commission', 'max_leverage',
  'maker_commission', 'kind', 'is_active', 'instrument_name', 'instrument_id', 'instrument_type', 'future_type',
  'expiration_timestamp', 'creation_timestamp', 'counter_currency', 'contract_size', 'block_trade_tick_size',
  'block_trade_min_trade_amount', 'block_trade_commission', 'base_currency', 'state',
];

/** Object with keys in Deribit's order (unknown keys last). */
function reverseKeys(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of KEY_ORDER) if (k in o) out[k] = o[k];
  for (const k of Object.keys(o)) if (!(k in out)) out[k] = o[k];
  return out;
}

function contractFields(c: ContractSpec, future: boolean): Record<string, unknown> {
  const o: Record<string, unknown> = {
    contract_size: c.contract_size,
    min_trade_amount: c.min_trade_amount,
    tick_size: c.tick_size,
    tick_size_steps: c.tick_size_steps.map((s) => ({ ...s })),
    taker_commission: c.taker_commission,
    maker_commission: c.maker_commission,
    block_trade_commission: c.block_trade_commission,
    block_trade_min_trade_amount: c.block_trade_min_trade_amount,
    block_trade_tick_size: c.block_trade_tick_size,
  };
  if (future) {
    o.max_leverage = c.max_leverage;
    o.max_liquidation_commission = c.max_liquidation_commission;
  }
  return o;
}

function compareInstruments(a: SimInstrument, b: SimInstrument): number {
  if (a.perpetual !== b.perpetual) return a.perpetual ? -1 : 1;
  if (a.product.prefix !== b.product.prefix) return a.product.prefix < b.product.prefix ? -1 : 1;
  if (a.kind !== b.kind) return a.kind === 'future' ? -1 : 1;
  if (a.expiryMs !== b.expiryMs) return a.expiryMs - b.expiryMs;
  if ((a.strike ?? 0) !== (b.strike ?? 0)) return (a.strike ?? 0) - (b.strike ?? 0);
  return a.optionType === b.optionType ? 0 : a.optionType === 'call' ? -1 : 1;
}

/** Options of {@link DeribitChains}. */
export interface ChainOptions {
  /** First instrument_id given to dated instruments (default 470000). */
  readonly firstInstrumentId?: number;
  /** Products to list (default {@link PRODUCTS}). */
  readonly products?: readonly ProductSpec[];
}

/** What one refresh changed. */
export interface ChainChanges {
  readonly added: readonly SimInstrument[];
  readonly expired: readonly SimInstrument[];
}

/**
 * The live Deribit listing of the simulator, kept rolled: instruments whose expiry has passed
 * leave (they stay queryable with `expired: true` for 3 days), expiries that enter the listing
 * windows appear, with strikes around the index at that time.
 */
export class DeribitChains {
  private readonly market: Market;
  private readonly products: readonly ProductSpec[];
  private nextId: number;
  private readonly book = new ListingBook<SimInstrument>();
  private readonly active = this.book.active;
  private nextRefreshMs = 0;

  constructor(market: Market, opts: ChainOptions = {}) {
    this.market = market;
    this.products = opts.products ?? PRODUCTS;
    this.nextId = opts.firstInstrumentId ?? 470000;
    const nowMs = market.now;
    for (const p of this.products) this.active.set(this.perpName(p), this.buildPerpetual(p));
    this.refresh(nowMs);
  }

  /** All active instruments: perpetuals, then futures and options by expiry, strike, call before put. */
  all(): SimInstrument[] {
    return [...this.active.values()].sort(compareInstruments);
  }

  /** An active instrument by name. */
  get(name: string): SimInstrument | undefined {
    return this.active.get(name);
  }

  /** Instruments expired within the last 3 days (for `expired: true`). */
  expired(): SimInstrument[] {
    return this.book.expired();
  }

  /** Active options of one product prefix (e.g. 'BTC', 'SOL_USDC'). */
  options(prefix?: string): SimInstrument[] {
    return this.all().filter((i) => i.kind === 'option' && (prefix === undefined || i.product.prefix === prefix));
  }

  /**
   * Roll the listing to `nowMs`: expire instruments with expiry <= nowMs, add expiries that the
   * schedules list at nowMs. Cheap when nothing is due (checks at each 08:00 UTC boundary).
   */
  refresh(nowMs: number): ChainChanges {
    if (nowMs < this.nextRefreshMs) return { added: [], expired: [] };
    const expired = this.book.expire(nowMs, (inst) => !inst.perpetual && inst.expiryMs <= nowMs);
    const added: SimInstrument[] = [];
    for (const p of this.products) {
      const futureExp = p.futureSchedule ? listExpiries(nowMs, p.futureSchedule) : [];
      const futureCodes = new Set(futureExp.map((e) => e.code));
      const pending: SimInstrument[] = [];
      for (const e of futureExp) {
        const name = `${p.prefix}-${e.code}`;
        if (!this.active.has(name)) pending.push(this.buildFuture(p, e, nowMs));
      }
      for (const e of listExpiries(nowMs, p.optionSchedule)) {
        if (this.hasExpiry(p, e.code)) continue;
        pending.push(...this.buildOptions(p, e, nowMs, futureCodes.has(e.code)));
      }
      pending.sort((a, b) => (a.json.creation_timestamp as number) - (b.json.creation_timestamp as number) || (a.name < b.name ? -1 : 1));
      for (const inst of pending) {
        const withId = { ...inst, json: reverseKeys({ ...inst.json, instrument_id: this.nextId++ }) };
        this.active.set(withId.name, withId);
        added.push(withId);
      }
    }
    this.nextRefreshMs = lastBoundary(nowMs) + DAY_MS;
    return { added, expired };
  }

  private hasExpiry(p: ProductSpec, code: string): boolean {
    const prefix = `${p.prefix}-${code}-`;
    for (const name of this.active.keys()) if (name.startsWith(prefix)) return true;
    return false;
  }

  private perpName(p: ProductSpec): string {
    return `${p.prefix}-PERPETUAL`;
  }

  private buildPerpetual(p: ProductSpec): SimInstrument {
    const c = p.perpetual;
    const json = reverseKeys({
      ...contractFields(c, true),
      base_currency: p.baseCurrency,
      counter_currency: p.counterCurrency,
      creation_timestamp: c.creation_timestamp,
      expiration_timestamp: PERPETUAL_EXPIRATION_MS,
      future_type: p.linear ? 'linear' : 'reversed',
      instrument_id: c.instrument_id,
      instrument_name: this.perpName(p),
      instrument_type: p.linear ? 'linear' : 'reversed',
      is_active: true,
      kind: 'future',
      price_index: p.priceIndex,
      quote_currency: p.futureQuoteCurrency,
      rfq: false,
      settlement_currency: p.settlementCurrency,
      settlement_period: 'perpetual',
      state: 'open',
    });
    return {
      name: this.perpName(p),
      kind: 'future',
      product: p,
      underlying: p.underlying,
      expiryMs: PERPETUAL_EXPIRATION_MS,
      perpetual: true,
      json,
    };
  }

  private buildFuture(p: ProductSpec, e: Expiry, nowMs: number): SimInstrument {
    const c = p.future!;
    const name = `${p.prefix}-${e.code}`;
    const json = {
      ...contractFields(c, true),
      base_currency: p.baseCurrency,
      counter_currency: p.counterCurrency,
      creation_timestamp: Math.min(nowMs, nominalCreation(e, 'future')) + 11_000,
      expiration_timestamp: e.ms,
      future_type: p.linear ? 'linear' : 'reversed',
      instrument_name: name,
      instrument_type: p.linear ? 'linear' : 'reversed',
      is_active: true,
      kind: 'future',
      price_index: p.priceIndex,
      quote_currency: p.futureQuoteCurrency,
      rfq: false,
      settlement_currency: p.settlementCurrency,
      settlement_period: e.period,
      state: 'open',
    };
    return { name, kind: 'future', product: p, underlying: p.underlying, expiryMs: e.ms, perpetual: false, json };
  }

  private buildOptions(p: ProductSpec, e: Expiry, nowMs: number, hasFuture: boolean): SimInstrument[] {
    const created = Math.min(nowMs, nominalCreation(e, 'option'));
    const tList = Math.max((e.ms - created) / MS_PER_YEAR, (e.ms - nowMs) / MS_PER_YEAR);
    const spot = this.market.spot(p.underlying);
    const w = this.market.atmVol(p.underlying, tList) * Math.sqrt(tList);
    const strikes = strikeGrid(spot, w, p.strikes);
    const out: SimInstrument[] = [];
    for (const K of strikes) {
      for (const type of ['call', 'put'] as const) {
        const name = `${p.prefix}-${e.code}-${strikeText(K)}-${type === 'call' ? 'C' : 'P'}`;
        const json = {
          ...contractFields(p.option, false),
          base_currency: p.baseCurrency,
          counter_currency: p.counterCurrency,
          creation_timestamp: created + 9_000,
          expiration_timestamp: e.ms,
          instrument_name: name,
          instrument_type: p.linear ? 'linear' : 'reversed',
          is_active: true,
          kind: 'option',
          option_type: type,
          price_index: p.priceIndex,
          quote_currency: p.optionQuoteCurrency,
          rfq: false,
          settlement_currency: p.settlementCurrency,
          settlement_period: e.period,
          state: 'open',
          strike: K,
        };
        out.push({
          name,
          kind: 'option',
          product: p,
          underlying: p.underlying,
          expiryMs: e.ms,
          perpetual: false,
          strike: K,
          optionType: type,
          ...(hasFuture ? { futureName: `${p.prefix}-${e.code}` } : {}),
          json,
        });
      }
    }
    return out;
  }
}
