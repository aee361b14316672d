/**
 * OKX-shaped instrument listings for the simulator (GET /api/v5/public/instruments items), always
 * ROLLED TO DATES AFTER "now", for the coin-margined families BTC-USD and ETH-USD.
 *
 * The pattern is taken from OKX's real listing of 2025-05-08
 * (test/fixtures/samples/okx/crypto-market-raw-data__rest-instruments_{OPTION,FUTURES,SWAP}_2025-05-08.json):
 * - options (instType OPTION, `BTC-USD-250509-70000-C`): the next 4 days (dailies; 05-09 ... 05-12),
 *   the Fridays within 15 days (05-09, 05-16, 05-23), the next 3 month-end Fridays (05-30, 06-27,
 *   07-25) and the quarter-end Fridays (06-27, 09-26, 12-26, and 03-27 for BTC only): 12 BTC and 11 ETH
 *   expiries, every one at 08:00 UTC (`expTime`), listed at 08:30 UTC (`listTime`: dailies 4 days,
 *   weeklies 21 days, monthlies about 105 days, quarterlies about 378 days ahead). Strike steps near
 *   the money 500 (BTC dailies) to 5000 (BTC quarterlies), 10 to 200 for ETH, widening away from it;
 *   the real chains had 720 BTC and 640 ETH options.
 * - futures (instType FUTURES, `BTC-USD-250509`, `ctType` inverse, `ctVal` 100 USD BTC / 10 USD ETH,
 *   `alias` this_week, next_week, this_month, next_month, quarter, next_quarter, third_quarter): the
 *   Fridays within 14 days, the next 2 month-ends and the quarter-ends (4 for BTC, 3 for ETH).
 * - swaps: `BTC-USD-SWAP`, `ETH-USD-SWAP` (inverse, settled in coin, funding every 8 hours).
 * Every item carries the real listing's fields and values (strings), only the ids, times and strikes
 * are the simulator's. Strikes are set around the exchange's index when the simulator lists an expiry,
 * by {@link exchangeStrikeGrid}; expired instruments leave the listing at 08:00 UTC ({@link OkxChains.refresh}).
 */
import { lastBoundary, listExpiries, type ExpirySchedule } from './chains.js';
import type { MarketView } from './exchangeView.js';
import { MS_PER_YEAR, type Underlying } from './market.js';
import { exchangeStrikeGrid, type ExchangeStrikeShape } from './strikes.js';
import { ListingBook } from './listingBook.js';

const DAY_MS = 86_400_000;

/** OKX instrument types served. */
export type OkxInstType = 'OPTION' | 'FUTURES' | 'SWAP';

/** One OKX instrument family (`BTC-USD`) of the simulator. */
export interface OkxFamilySpec {
  readonly family: 'BTC-USD' | 'ETH-USD';
  readonly underlying: Underlying;
  readonly optionSchedule: ExpirySchedule;
  readonly futureSchedule: ExpirySchedule;
  readonly strikes: ExchangeStrikeShape;
  /** Decimals of index, forward and futures prices. */
  readonly priceDecimals: number;
  /** Futures and swap price tick (`tickSz`). */
  readonly futureTick: number;
  /** Option `ctMult` (BTC 0.01, ETH 0.1). */
  readonly optionCtMult: string;
  /** Futures/swap `ctVal` in USD (BTC 100, ETH 10). */
  readonly futureCtVal: string;
  readonly futureMaxMktSz: string;
  readonly swapMaxMktSz: string;
  readonly swapListTime: string;
}

/** The simulator's OKX families (values from the 2025-05-08 listing). */
export const OKX_FAMILIES: readonly OkxFamilySpec[] = [
  {
    family: 'BTC-USD',
    underlying: 'BTC',
    optionSchedule: { dailies: 4, weeklyWindowDays: 15, monthlies: 3, quarterlies: 4 },
    futureSchedule: { dailies: 0, weeklyWindowDays: 14, monthlies: 2, quarterlies: 4 },
    strikes: { unitFraction: 0.006 },
    priceDecimals: 1,
    futureTick: 0.1,
    optionCtMult: '0.01',
    futureCtVal: '100',
    futureMaxMktSz: '10000',
    swapMaxMktSz: '30000',
    swapListTime: '1535424203000',
  },
  {
    family: 'ETH-USD',
    underlying: 'ETH',
    optionSchedule: { dailies: 4, weeklyWindowDays: 15, monthlies: 3, quarterlies: 3 },
    futureSchedule: { dailies: 0, weeklyWindowDays: 14, monthlies: 2, quarterlies: 3 },
    strikes: { unitFraction: 0.008, maxUp: 9 },
    priceDecimals: 2,
    futureTick: 0.01,
    optionCtMult: '0.1',
    futureCtVal: '10',
    futureMaxMktSz: '100000',
    swapMaxMktSz: '300000',
    swapListTime: '1545378827000',
  },
];

/** One simulated OKX instrument with its REST item. */
export interface OkxSimInstrument {
  readonly instId: string;
  readonly instType: OkxInstType;
  readonly spec: OkxFamilySpec;
  readonly underlying: Underlying;
  /** Unix ms; null for swaps. */
  readonly expiryMs: number | null;
  readonly strike?: number;
  readonly optType?: 'C' | 'P';
  /** The GET /api/v5/public/instruments item (every value a string, as OKX prints them). */
  readonly json: Readonly<Record<string, unknown>>;
}

/** What one refresh changed. */
export interface OkxChainChanges {
  readonly added: readonly OkxSimInstrument[];
  readonly expired: readonly OkxSimInstrument[];
}

/** OKX date token of an expiry: `YYMMDD` (250509). */
export function okxDateToken(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}`;
}

/** Expiries further than this many days are listed with only {@link FAR_EXPIRY_STRIKES} strikes nearest the index. */
export const FAR_EXPIRY_DAYS = 200;
/** Strikes of a far OKX expiry. */
export const FAR_EXPIRY_STRIKES = 3;

/** Plain decimal text of a strike (`70000`, `2512.5`). */
export function okxStrikeText(k: number): string {
  return String(Number(k.toFixed(10)));
}

/** Listing time of an option expiry at 08:30 UTC, OKX's horizons (see the module docstring); never after `nowMs`. */
function optionListTime(expMs: number, period: 'day' | 'week' | 'month', quarterly: boolean, nowMs: number): number {
  const days = quarterly ? 378 : period === 'month' ? 105 : period === 'week' ? 21 : 4;
  return Math.min(expMs - days * DAY_MS + 30 * 60_000, lastBoundary(nowMs) + 30 * 60_000);
}

function futureListTime(expMs: number, period: 'day' | 'week' | 'month', quarterly: boolean, nowMs: number): number {
  const days = quarterly ? 350 : period === 'month' ? 77 : 14;
  return Math.min(expMs - days * DAY_MS + 30 * 60_000 + 466, nowMs);
}

const FUTURE_ALIASES = ['this_week', 'next_week', 'this_month', 'next_month', 'quarter', 'next_quarter', 'third_quarter'];

function isQuarterly(ms: number, period: string): boolean {
  return period === 'month' && new Date(ms).getUTCMonth() % 3 === 2;
}

/** The common fields of every OKX derivative item, in the API's key order (2025-05-08 listing). */
function baseItem(spec: OkxFamilySpec, instType: OkxInstType): Record<string, unknown> {
  const option = instType === 'OPTION';
  const swap = instType === 'SWAP';
  const coin = spec.underlying;
  return {
    alias: '',
    auctionEndTime: '',
    baseCcy: '',
    category: '1',
    contTdSwTime: '',
    ctMult: option ? spec.optionCtMult : '1',
    ctType: option ? '' : 'inverse',
    ctVal: option ? '1' : spec.futureCtVal,
    ctValCcy: option ? coin : 'USD',
    expTime: '',
    futureSettlement: false,
    instFamily: spec.family,
    instId: '',
    instType,
    lever: option ? '' : swap ? '100' : '20',
    listTime: '',
    lotSz: '1',
    maxIcebergSz: swap ? '100000000.0000000000000000' : '1000000.0000000000000000',
    maxLmtAmt: '20000000',
    maxLmtSz: swap ? '100000000' : '1000000',
    maxMktAmt: '',
    maxMktSz: option ? '5000' : swap ? spec.swapMaxMktSz : spec.futureMaxMktSz,
    maxStopSz: option ? '5000' : swap ? spec.swapMaxMktSz : spec.futureMaxMktSz,
    maxTriggerSz: swap ? '100000000.0000000000000000' : '1000000.0000000000000000',
    maxTwapSz: swap ? '100000000.0000000000000000' : '1000000.0000000000000000',
    minSz: '1',
    openType: '',
    optType: '',
    quoteCcy: '',
    ruleType: 'normal',
    settleCcy: coin,
    state: 'live',
    stk: '',
    tickSz: option ? '0.0001' : String(spec.futureTick),
    uly: spec.family,
  };
}

/** Options of {@link OkxChains}. */
export interface OkxChainOptions {
  /** Families to list (default {@link OKX_FAMILIES}). */
  readonly families?: readonly OkxFamilySpec[];
}

/**
 * The live OKX listing of the simulator, kept rolled (see the module docstring). Strikes are placed
 * around the view's index when an expiry is listed ({@link exchangeStrikeGrid} with the expiry's ATM vol).
 */
export class OkxChains {
  private readonly view: MarketView;
  private readonly families: readonly OkxFamilySpec[];
  private readonly book = new ListingBook<OkxSimInstrument>();
  private readonly active = this.book.active;
  private nextRefreshMs = 0;

  constructor(view: MarketView, opts: OkxChainOptions = {}) {
    this.view = view;
    this.families = opts.families ?? OKX_FAMILIES;
    for (const spec of this.families) {
      const instId = `${spec.family}-SWAP`;
      const json = { ...baseItem(spec, 'SWAP'), instId, listTime: spec.swapListTime };
      this.active.set(instId, { instId, instType: 'SWAP', spec, underlying: spec.underlying, expiryMs: null, json });
    }
    this.refresh(view.now);
  }

  /** Every live instrument: swaps, futures, then options by expiry, strike, call before put. */
  all(): OkxSimInstrument[] {
    const rank = { SWAP: 0, FUTURES: 1, OPTION: 2 } as const;
    return [...this.active.values()].sort(
      (a, b) =>
        a.spec.family.localeCompare(b.spec.family) ||
        rank[a.instType] - rank[b.instType] ||
        (a.expiryMs ?? 0) - (b.expiryMs ?? 0) ||
        (a.strike ?? 0) - (b.strike ?? 0) ||
        (a.optType === b.optType ? 0 : a.optType === 'C' ? -1 : 1),
    );
  }

  /** A live instrument by instId. */
  get(instId: string): OkxSimInstrument | undefined {
    return this.active.get(instId);
  }

  /** Live instruments of a type, optionally of one family. */
  list(instType: OkxInstType, family?: string): OkxSimInstrument[] {
    return this.all().filter((i) => i.instType === instType && (family === undefined || i.spec.family === family));
  }

  /** The simulator's families (`BTC-USD`, `ETH-USD`). */
  familyNames(): string[] {
    return this.families.map((f) => f.family);
  }

  /** Family spec by name. */
  family(name: string): OkxFamilySpec | undefined {
    return this.families.find((f) => f.family === name);
  }

  /** Instruments expired within the last 3 days. */
  expired(): OkxSimInstrument[] {
    return this.book.expired();
  }

  /**
   * Roll to `nowMs`: expire instruments with expiry <= nowMs, list the expiries the schedules list at
   * nowMs. Cheap when nothing is due (checks at each 08:00 UTC boundary).
   */
  refresh(nowMs: number): OkxChainChanges {
    if (nowMs < this.nextRefreshMs) return { added: [], expired: [] };
    const expired = this.book.expire(nowMs, (inst) => inst.expiryMs !== null && inst.expiryMs <= nowMs);
    const added: OkxSimInstrument[] = [];
    for (const spec of this.families) {
      const futures = listExpiries(nowMs, spec.futureSchedule);
      futures.forEach((e, i) => {
        const instId = `${spec.family}-${okxDateToken(e.ms)}`;
        const alias = FUTURE_ALIASES[i] ?? '';
        const old = this.active.get(instId);
        if (old && old.json.alias === alias) return;
        const listTime = old ? (old.json.listTime as string) : String(futureListTime(e.ms, e.period, isQuarterly(e.ms, e.period), nowMs));
        const json = { ...baseItem(spec, 'FUTURES'), alias, expTime: String(e.ms), instId, listTime };
        const inst: OkxSimInstrument = { instId, instType: 'FUTURES', spec, underlying: spec.underlying, expiryMs: e.ms, json };
        this.active.set(instId, inst);
        if (!old) added.push(inst);
      });
      for (const e of listExpiries(nowMs, spec.optionSchedule)) {
        const prefix = `${spec.family}-${okxDateToken(e.ms)}-`;
        if ([...this.active.keys()].some((k) => k.startsWith(prefix))) continue;
        const listTime = optionListTime(e.ms, e.period, isQuarterly(e.ms, e.period), nowMs);
        const T = (e.ms - nowMs) / MS_PER_YEAR;
        const spot = this.view.spot(spec.underlying);
        let strikes = exchangeStrikeGrid(spot, this.view.atmVol(spec.underlying, T), T * 365, spec.strikes);
        // OKX lists its far expiries (beyond FAR_EXPIRY_DAYS) with only a few strikes around the money (the recorded
        // opt-summary push of issue 11: expiries with 2 or 3 strikes), which the service must fit as sparse expiries.
        if (T * 365 > FAR_EXPIRY_DAYS) {
          const near = [...strikes].sort((a, b) => Math.abs(Math.log(a / spot)) - Math.abs(Math.log(b / spot))).slice(0, FAR_EXPIRY_STRIKES);
          strikes = near.sort((a, b) => a - b);
        }
        for (const K of strikes) {
          for (const optType of ['C', 'P'] as const) {
            const instId = `${prefix}${okxStrikeText(K)}-${optType}`;
            const json = { ...baseItem(spec, 'OPTION'), expTime: String(e.ms), instId, listTime: String(listTime), optType, stk: okxStrikeText(K) };
            const inst: OkxSimInstrument = { instId, instType: 'OPTION', spec, underlying: spec.underlying, expiryMs: e.ms, strike: K, optType, json };
            this.active.set(instId, inst);
            added.push(inst);
          }
        }
      }
    }
    this.nextRefreshMs = lastBoundary(nowMs) + DAY_MS;
    return { added, expired };
  }
}
