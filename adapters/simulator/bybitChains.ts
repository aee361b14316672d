/**
 * Bybit-shaped instrument listings for the simulator (GET /v5/market/instruments-info items), always
 * ROLLED TO DATES AFTER "now": USDC-settled options on BTC, ETH and SOL, USDC perpetuals and futures,
 * and (so that the adapter's filtering is exercised) the USDT perpetuals of the same coins.
 *
 * Evidence and choices (no real Bybit option listing is among the stored samples,
 * the recorded exchange samples, test/fixtures/<venue>/README.md "Gaps"):
 * - symbols: options `BTC-27MAR26-70000-C` (day without leading zero, English month, 2-digit year:
 *   recorded `SOL-28APR23-24-C`, `ETH-30JUN23-200-P`, docs `BTC-6JAN23-17500-C`, `ETH-3JAN23-1250-P`;
 *   Bybit's newer USDT-settled options add `-USDT`, the USDC ones here carry no suffix); USDC
 *   perpetuals `BTCPERP`, `ETHPERP`, `SOLPERP` (the docs' funding-history example is `ETHPERP`; Bybit has
 *   since also used `BTCUSDC`-style names, which the adapter accepts too); USDC futures `BTC-26DEC25`
 *   (docs example, contractType LinearFutures, deliveryTime 08:00 UTC); USDT perpetuals `BTCUSDT` etc.;
 * - item fields: the docs' USDC option item (ETH-3JAN23-1250-P: quoteCoin USD, settleCoin USDC,
 *   deliveryFeeRate 0.00015, price and lot filters) and linear item (BIOUSDT: leverage/price/lot
 *   filters, fundingInterval in minutes, upper/lowerFundingRate), with values chosen per coin;
 * - expiries (every one at 08:00 UTC; chosen, documented in README.md): BTC and ETH options 3 dailies,
 *   the Fridays within 3 weeks, 3 month-ends and 3 quarter-ends; SOL options 2 dailies, the Fridays within
 *   2 weeks, 2 month-ends and 1 quarter-end; BTC and ETH USDC futures the Fridays within 2 weeks, 2
 *   month-ends and 2 quarter-ends; no SOL future;
 * - funding: BTCPERP and ETHPERP every 8 h, SOLPERP every 4 h (fundingInterval 240: Bybit runs 1, 2, 4
 *   and 8-hour intervals on different symbols), settlements at multiples of the interval from 00:00 UTC;
 * - strikes: {@link exchangeStrikeGrid} around the Bybit index when the expiry is listed.
 */
import { deribitDateCode, lastBoundary, listExpiries, type ExpirySchedule } from './chains.js';
import type { MarketView } from './exchangeView.js';
import { MS_PER_YEAR, type Underlying } from './market.js';
import { exchangeStrikeGrid, type ExchangeStrikeShape } from './strikes.js';
import { ListingBook } from './listingBook.js';

const DAY_MS = 86_400_000;

/** Categories of instruments-info served. */
export type BybitCategory = 'option' | 'linear';

/** One base coin of the simulator's Bybit listing. */
export interface BybitCoinSpec {
  readonly coin: 'BTC' | 'ETH' | 'SOL';
  readonly underlying: Underlying;
  readonly optionSchedule: ExpirySchedule;
  /** USDC futures schedule; null when none are listed. */
  readonly futureSchedule: ExpirySchedule | null;
  readonly strikes: ExchangeStrikeShape;
  /** Decimals of index, forward and linear prices. */
  readonly priceDecimals: number;
  /** Option price filter (USDC) and lot filter. */
  readonly optionTick: string;
  readonly optionMinPrice: string;
  readonly optionMaxPrice: string;
  readonly optionLot: { readonly maxOrderQty: string; readonly minOrderQty: string; readonly qtyStep: string };
  /** Perpetual/futures tick and lot. */
  readonly linearTick: string;
  readonly linearLot: { readonly maxOrderQty: string; readonly minOrderQty: string; readonly qtyStep: string };
  /** Funding interval of the USDC perpetual, hours. */
  readonly fundingIntervalHours: number;
  readonly perpLaunchTime: string;
}

/** The simulator's Bybit coins. */
export const BYBIT_COINS: readonly BybitCoinSpec[] = [
  {
    coin: 'BTC',
    underlying: 'BTC',
    optionSchedule: { dailies: 3, weeklyWindowDays: 21, monthlies: 3, quarterlies: 3 },
    futureSchedule: { dailies: 0, weeklyWindowDays: 14, monthlies: 2, quarterlies: 2 },
    strikes: { unitFraction: 0.006 },
    priceDecimals: 2,
    optionTick: '5',
    optionMinPrice: '5',
    optionMaxPrice: '1110000',
    optionLot: { maxOrderQty: '500', minOrderQty: '0.01', qtyStep: '0.01' },
    linearTick: '0.5',
    linearLot: { maxOrderQty: '100', minOrderQty: '0.001', qtyStep: '0.001' },
    fundingIntervalHours: 8,
    perpLaunchTime: '1652256000000',
  },
  {
    coin: 'ETH',
    underlying: 'ETH',
    optionSchedule: { dailies: 3, weeklyWindowDays: 21, monthlies: 3, quarterlies: 3 },
    futureSchedule: { dailies: 0, weeklyWindowDays: 14, monthlies: 2, quarterlies: 2 },
    strikes: { unitFraction: 0.008, maxUp: 6 },
    priceDecimals: 2,
    optionTick: '0.1',
    optionMinPrice: '0.1',
    optionMaxPrice: '10000000',
    optionLot: { maxOrderQty: '1500', minOrderQty: '0.1', qtyStep: '0.1' },
    linearTick: '0.05',
    linearLot: { maxOrderQty: '1000', minOrderQty: '0.01', qtyStep: '0.01' },
    fundingIntervalHours: 8,
    perpLaunchTime: '1652256000000',
  },
  {
    coin: 'SOL',
    underlying: 'SOL',
    optionSchedule: { dailies: 2, weeklyWindowDays: 14, monthlies: 2, quarterlies: 1 },
    futureSchedule: null,
    strikes: { unitFraction: 0.01, maxUp: 4, maxDown: 5 },
    priceDecimals: 3,
    optionTick: '0.01',
    optionMinPrice: '0.01',
    optionMaxPrice: '100000',
    optionLot: { maxOrderQty: '10000', minOrderQty: '1', qtyStep: '1' },
    linearTick: '0.01',
    linearLot: { maxOrderQty: '20000', minOrderQty: '0.1', qtyStep: '0.1' },
    fundingIntervalHours: 4,
    perpLaunchTime: '1675728000000',
  },
];

/** One simulated Bybit instrument with its instruments-info item. */
export interface BybitSimInstrument {
  readonly symbol: string;
  readonly category: BybitCategory;
  readonly kind: 'option' | 'perpetual' | 'future';
  readonly spec: BybitCoinSpec;
  readonly underlying: Underlying;
  /** USDC or USDT (USDT perpetuals are listed but are not the service's). */
  readonly settleCoin: 'USDC' | 'USDT';
  /** Unix ms; null for perpetuals. */
  readonly expiryMs: number | null;
  readonly strike?: number;
  readonly optionType?: 'call' | 'put';
  /** Funding interval, hours (perpetuals). */
  readonly fundingIntervalHours?: number;
  readonly json: Readonly<Record<string, unknown>>;
}

/** What one refresh changed. */
export interface BybitChainChanges {
  readonly added: readonly BybitSimInstrument[];
  readonly expired: readonly BybitSimInstrument[];
}

/** Plain decimal text of a strike. */
export function bybitStrikeText(k: number): string {
  return String(Number(k.toFixed(10)));
}

function linearItem(spec: BybitCoinSpec, symbol: string, contractType: 'LinearPerpetual' | 'LinearFutures', settle: 'USDC' | 'USDT', launchTime: string, deliveryTime: string, fundingMinutes: number): Record<string, unknown> {
  const perp = contractType === 'LinearPerpetual';
  return {
    symbol,
    contractType,
    status: 'Trading',
    baseCoin: spec.coin,
    quoteCoin: settle,
    launchTime,
    deliveryTime,
    deliveryFeeRate: perp ? '' : '0',
    priceScale: String(spec.priceDecimals),
    leverageFilter: { minLeverage: '1', maxLeverage: perp ? '100.00' : '50.00', leverageStep: '0.01' },
    priceFilter: { minPrice: spec.linearTick, maxPrice: '1999999.00', tickSize: spec.linearTick },
    lotSizeFilter: { ...spec.linearLot, postOnlyMaxOrderQty: spec.linearLot.maxOrderQty, maxMktOrderQty: spec.linearLot.maxOrderQty, minNotionalValue: '5' },
    unifiedMarginTrade: true,
    fundingInterval: fundingMinutes,
    settleCoin: settle,
    copyTrading: perp && settle === 'USDT' ? 'both' : 'none',
    upperFundingRate: perp ? '0.005' : '',
    lowerFundingRate: perp ? '-0.005' : '',
    isPreListing: false,
    preListingInfo: null,
    riskParameters: { priceLimitRatioX: '0.01', priceLimitRatioY: '0.02' },
    symbolType: '',
  };
}

/** Options of {@link BybitChains}. */
export interface BybitChainOptions {
  /** Coins to list (default {@link BYBIT_COINS}). */
  readonly coins?: readonly BybitCoinSpec[];
  /** Also list the USDT perpetuals (default true). */
  readonly usdtPerpetuals?: boolean;
}

/** The live Bybit listing of the simulator, kept rolled (see the module docstring). */
export class BybitChains {
  private readonly view: MarketView;
  private readonly coins: readonly BybitCoinSpec[];
  private readonly book = new ListingBook<BybitSimInstrument>();
  private readonly active = this.book.active;
  private nextRefreshMs = 0;

  constructor(view: MarketView, opts: BybitChainOptions = {}) {
    this.view = view;
    this.coins = opts.coins ?? BYBIT_COINS;
    for (const spec of this.coins) {
      const perp = `${spec.coin}PERP`;
      const minutes = spec.fundingIntervalHours * 60;
      this.active.set(perp, {
        symbol: perp,
        category: 'linear',
        kind: 'perpetual',
        spec,
        underlying: spec.underlying,
        settleCoin: 'USDC',
        expiryMs: null,
        fundingIntervalHours: spec.fundingIntervalHours,
        json: linearItem(spec, perp, 'LinearPerpetual', 'USDC', spec.perpLaunchTime, '0', minutes),
      });
      if (opts.usdtPerpetuals ?? true) {
        const usdt = `${spec.coin}USDT`;
        this.active.set(usdt, {
          symbol: usdt,
          category: 'linear',
          kind: 'perpetual',
          spec,
          underlying: spec.underlying,
          settleCoin: 'USDT',
          expiryMs: null,
          fundingIntervalHours: 8,
          json: linearItem(spec, usdt, 'LinearPerpetual', 'USDT', '1584230400000', '0', 480),
        });
      }
    }
    this.refresh(view.now);
  }

  /** Every live instrument, sorted by symbol. */
  all(): BybitSimInstrument[] {
    return [...this.active.values()].sort((a, b) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0));
  }

  /** A live instrument by symbol. */
  get(symbol: string): BybitSimInstrument | undefined {
    return this.active.get(symbol);
  }

  /** Live instruments of a category, optionally of one base coin; options by expiry, strike, call first. */
  list(category: BybitCategory, baseCoin?: string): BybitSimInstrument[] {
    return [...this.active.values()]
      .filter((i) => i.category === category && (baseCoin === undefined || i.spec.coin === baseCoin))
      .sort(
        (a, b) =>
          a.spec.coin.localeCompare(b.spec.coin) ||
          (a.expiryMs ?? 0) - (b.expiryMs ?? 0) ||
          (a.strike ?? 0) - (b.strike ?? 0) ||
          (a.optionType === b.optionType ? 0 : a.optionType === 'call' ? -1 : 1) ||
          (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0),
      );
  }

  /** Coin spec by name. */
  coin(name: string): BybitCoinSpec | undefined {
    return this.coins.find((c) => c.coin === name);
  }

  /** Instruments expired within the last 3 days. */
  expired(): BybitSimInstrument[] {
    return this.book.expired();
  }

  /** Roll to `nowMs` (expire passed instruments, list the expiries due); cheap when nothing is due. */
  refresh(nowMs: number): BybitChainChanges {
    if (nowMs < this.nextRefreshMs) return { added: [], expired: [] };
    const expired = this.book.expire(nowMs, (inst) => inst.expiryMs !== null && inst.expiryMs <= nowMs);
    const added: BybitSimInstrument[] = [];
    const boundary = lastBoundary(nowMs);
    for (const spec of this.coins) {
      for (const e of spec.futureSchedule ? listExpiries(nowMs, spec.futureSchedule) : []) {
        const symbol = `${spec.coin}-${deribitDateCode(e.ms)}`;
        if (this.active.has(symbol)) continue;
        const launch = String(Math.min(boundary, e.ms - (e.period === 'week' ? 14 : 90) * DAY_MS));
        const inst: BybitSimInstrument = {
          symbol,
          category: 'linear',
          kind: 'future',
          spec,
          underlying: spec.underlying,
          settleCoin: 'USDC',
          expiryMs: e.ms,
          json: linearItem(spec, symbol, 'LinearFutures', 'USDC', launch, String(e.ms), 0),
        };
        this.active.set(symbol, inst);
        added.push(inst);
      }
      for (const e of listExpiries(nowMs, spec.optionSchedule)) {
        const code = deribitDateCode(e.ms);
        const prefix = `${spec.coin}-${code}-`;
        if ([...this.active.keys()].some((k) => k.startsWith(prefix) && k.split('-').length >= 4)) continue;
        const T = (e.ms - nowMs) / MS_PER_YEAR;
        const launch = String(Math.min(boundary, e.ms - (e.period === 'day' ? 3 : e.period === 'week' ? 21 : 90) * DAY_MS));
        for (const K of exchangeStrikeGrid(this.view.spot(spec.underlying), this.view.atmVol(spec.underlying, T), T * 365, spec.strikes)) {
          for (const optionType of ['call', 'put'] as const) {
            const symbol = `${prefix}${bybitStrikeText(K)}-${optionType === 'call' ? 'C' : 'P'}`;
            const json = {
              symbol,
              status: 'Trading',
              baseCoin: spec.coin,
              quoteCoin: 'USD',
              settleCoin: 'USDC',
              optionsType: optionType === 'call' ? 'Call' : 'Put',
              launchTime: launch,
              deliveryTime: String(e.ms),
              deliveryFeeRate: '0.00015',
              priceFilter: { minPrice: spec.optionMinPrice, maxPrice: spec.optionMaxPrice, tickSize: spec.optionTick },
              lotSizeFilter: { ...spec.optionLot },
            };
            const inst: BybitSimInstrument = { symbol, category: 'option', kind: 'option', spec, underlying: spec.underlying, settleCoin: 'USDC', expiryMs: e.ms, strike: K, optionType, json };
            this.active.set(symbol, inst);
            added.push(inst);
          }
        }
      }
    }
    this.nextRefreshMs = boundary + DAY_MS;
    return { added, expired };
  }
}
