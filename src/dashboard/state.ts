/**
 * The live dashboard's state of one (source, pair, model), built from the cache (server side; the browser
 * only draws it): the smile of each expiry (market mark IVs with bid/ask IVs and the fitted curve of every
 * model held), the ATM term structure with 25- and 10-delta risk reversals and butterflies, the forward curve
 * (listed expiries and constant maturities), the funding history of the pair's perpetuals, and the status of
 * every feed.
 *
 * Numbers are computed exactly as the REST API computes them, so the page and the API agree to the last bit:
 * the vol of an expiry comes from src/cache/expiryPoint.ts `expiryPoint` (as iV/byStrike, iV/byDelta, surface), the
 * delta strikes from src/quant/strikeFromDelta.ts with the same T floor as iV/byDelta, the yields from the
 * forward curve's `fixedYields` / `constMatYields` (as forwardCurve).
 * Conventions (decisions.md "Quant conventions"): ATM = forward ATM (K = F); risk reversal = vol(call at
 * delta) - vol(put at delta); butterfly = (vol(call) + vol(put)) / 2 - ATM vol; the put at delta d is the
 * strike of call delta 1 - d (forward Black delta, no premium adjustment). IVs are fractions, times Unix s.
 */
import type { FeedStats } from '../domain/feeds.js';
import type { MarketCache } from '../cache/marketCache.js';
import { VOLATILITY_MODELS, type SurfaceSnapshot, type VolatilityModel } from '../cache/snapshot.js';
import { pairLabel, resolveSource, SUPPORTED_PAIRS, type Pair, type Source } from '../domain/markets.js';
import { expiryPoint, MIN_T_YEARS } from '../cache/expiryPoint.js';
import { SECONDS_PER_YEAR } from '../domain/time.js';
import { strikeFromDelta } from '../quant/strikeFromDelta.js';

/** The (source, pair, model) the dashboard shows. */
export interface DashboardSelection {
  readonly source: Source;
  readonly pair: Pair;
  readonly model: VolatilityModel;
}

/** One market quote of a smile (the out-of-the-money quote used by the fit). */
export interface SmileQuoteView {
  readonly strike: number;
  readonly optionType: 'C' | 'P';
  readonly markIv: number;
  readonly bidIv: number | null;
  readonly askIv: number | null;
}

/** The smile of one expiry. */
export interface SmileView {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: readonly SmileQuoteView[];
  /** Fitted curve of each model held for the pair (same strike grid for all). */
  readonly strikes: readonly number[];
  readonly fits: Readonly<Partial<Record<VolatilityModel, readonly number[]>>>;
  readonly rmseVolPts: number;
  readonly quotesUsed: number;
  readonly butterflyFree: boolean;
  /** Slice status (fitted, repaired, sparse, kept-previous) of the pair's default-model fit. */
  readonly status: string;
  /** The model's unconstrained fit RMSE and what the repairs cost (vol points); null when not applicable. */
  readonly referenceRmseVolPts: number | null;
  readonly repairCostVolPts: number | null;
  /** Quality warnings (ATM error > 1 vp, 25-delta error > 3 vp). */
  readonly warnings: readonly string[];
}

/** One listed expiry of the term structure (field names as the spec's iVSummary). */
export interface TermPoint {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly atmVol: number;
  /** 25-delta risk reversal, fraction; null when no strike has that delta on the smile. */
  readonly delta25Skew: number | null;
  readonly delta25Bfly: number | null;
  readonly delta10Skew: number | null;
  readonly delta10Bfly: number | null;
  readonly rmseVolPts: number;
}

/** Feed-status panel row of one exchange. */
export interface FeedPanel {
  readonly source: Source;
  readonly connected: boolean;
  readonly messages: number;
  /** Messages per second over the last ~10 s; null right after start. */
  readonly messagesPerSecond: number | null;
  /** Seconds since the last message (wall clock); null before the first. */
  readonly lastMessageAgeS: number | null;
  readonly reconnects: number;
  readonly dropped: number;
  /** Pairs the API answers 503 stale for (disconnected feed or data older than STALE_AFTER_S). */
  readonly stalePairs: readonly string[];
  /** Pairs without calibrated data yet. */
  readonly warmingUpPairs: readonly string[];
}

/** Everything the page draws for one selection. */
export interface DashboardState {
  readonly selection: { source: Source; baseCurrency: string; quoteCurrency: string; volatilityModel: VolatilityModel } | null;
  /** Every (source, pair) the cache knows (expected or held), with the models held. */
  readonly options: ReadonlyArray<{ source: Source; pair: string; models: VolatilityModel[] }>;
  /** Wall-clock Unix seconds the state was built. */
  readonly generatedAt: number;
  /** Why the selection is not servable now (the API's 503 reason), or null. */
  readonly unavailable: { reason: string; message: string } | null;
  readonly surface: {
    readonly model: VolatilityModel;
    readonly models: readonly VolatilityModel[];
    readonly observationTimestamp: number;
    readonly spot: number;
    readonly sequence: number;
    readonly calibrationMs: number;
    readonly smiles: readonly SmileView[];
    readonly term: readonly TermPoint[];
  } | null;
  readonly forwardCurve: {
    readonly observationTimestamp: number;
    readonly spot: number;
    readonly sequence: number;
    readonly listed: ReadonlyArray<{ expirationTimestamp: number; T: number; forward: number; origin: string; value: number | null }>;
    readonly constMat: ReadonlyArray<{ constMat: string; expirationTimestamp: number; T: number; forward: number; value: number }>;
  } | null;
  readonly funding: ReadonlyArray<{ instrumentId: string; intervalHours: number; points: ReadonlyArray<{ timestamp: number; interest: number }> }>;
  readonly feeds: readonly FeedPanel[];
}

/** Funding points sent per instrument (newest). */
export const DASHBOARD_FUNDING_POINTS = 240;
/** Points of each fitted smile curve. */
export const SMILE_GRID_POINTS = 61;

/** Every (source, pair) the cache expects or holds a surface for, with the models held. */
export function dashboardOptions(cache: MarketCache): Array<{ source: Source; pair: Pair; models: VolatilityModel[] }> {
  const out: Array<{ source: Source; pair: Pair; models: VolatilityModel[] }> = [];
  const add = (source: Source, pair: Pair) => {
    if (out.some((o) => o.source === source && o.pair.base === pair.base && o.pair.quote === pair.quote)) return;
    out.push({ source, pair, models: VOLATILITY_MODELS.filter((m) => cache.getSurface(source, pair, m)) });
  };
  for (const p of cache.expected()) add(p.source, p.pair);
  for (const s of cache.allSurfaces()) add(s.source, s.pair);
  return out;
}

/**
 * The selection for a query: the requested source (wire value or XCHG alias), pair and model, each
 * defaulting to the first (source, pair) held and SVI (or the first model held).
 * @returns null when nothing is known yet and nothing was asked; throws RangeError for an unknown source
 *   or an unsupported pair
 */
export function resolveSelection(
  cache: MarketCache,
  q: { source?: string | undefined; baseCurrency?: string | undefined; quoteCurrency?: string | undefined; volatilityModel?: VolatilityModel | undefined },
): DashboardSelection | null {
  const options = dashboardOptions(cache);
  let source: Source | undefined;
  if (q.source !== undefined) {
    source = resolveSource(q.source) ?? undefined;
    if (!source) throw new RangeError(`unknown source ${q.source}`);
  }
  const candidates = options.filter(
    (o) => (!source || o.source === source) && (!q.baseCurrency || o.pair.base === q.baseCurrency) && (!q.quoteCurrency || o.pair.quote === q.quoteCurrency),
  );
  let pick = candidates.find((o) => o.models.length > 0) ?? candidates[0];
  if (!pick && source && q.baseCurrency && q.quoteCurrency) {
    const pair = SUPPORTED_PAIRS[source].find((p) => p.base === q.baseCurrency && p.quote === q.quoteCurrency);
    if (!pair) throw new RangeError(`${source} does not list ${q.baseCurrency}/${q.quoteCurrency}`);
    pick = { source, pair, models: [] };
  }
  if (!pick) return null;
  const model = q.volatilityModel ?? (pick.models.includes('SVI') || pick.models.length === 0 ? 'SVI' : pick.models[0]!);
  return { source: pick.source, pair: pick.pair, model };
}

/** Vol at call delta `d` on the expiry's smile, or null when no strike has it (as iV/byDelta, which answers 400). */
function volAtDelta(point: ReturnType<typeof expiryPoint>, d: number): number | null {
  try {
    const K = strikeFromDelta(d, point.forward, Math.max(point.T, MIN_T_YEARS), point.vol);
    return point.vol(K);
  } catch {
    return null;
  }
}

/** ATM vol, risk reversal and butterfly of one listed expiry of `snap` (iVSummary definitions). */
export function termPoint(snap: SurfaceSnapshot, expirationTimestamp: number, rmseVolPts: number): TermPoint {
  const p = expiryPoint(snap, expirationTimestamp);
  const atmVol = p.vol(p.forward);
  const pillar = (d: number) => {
    const call = volAtDelta(p, d);
    const put = volAtDelta(p, 1 - d);
    if (call === null || put === null) return { skew: null, bfly: null };
    return { skew: call - put, bfly: (call + put) / 2 - atmVol };
  };
  const d25 = pillar(0.25);
  const d10 = pillar(0.1);
  return {
    expirationTimestamp,
    T: p.T,
    forward: p.forward,
    atmVol,
    delta25Skew: d25.skew,
    delta25Bfly: d25.bfly,
    delta10Skew: d10.skew,
    delta10Bfly: d10.bfly,
    rmseVolPts,
  };
}

/** The smiles of `snap`, with the fitted curve of each model in `others` (same pair) on one strike grid. */
function smiles(snap: SurfaceSnapshot, models: readonly SurfaceSnapshot[]): SmileView[] {
  return snap.slices.map((sl) => {
    const quotes = sl.quotes.map((q) => ({ strike: q.strike, optionType: q.optionType, markIv: q.markIv, bidIv: q.bidIv, askIv: q.askIv }));
    let lo = sl.forward * 0.7;
    let hi = sl.forward * 1.4;
    if (quotes.length > 0) {
      lo = Math.min(...quotes.map((q) => q.strike));
      hi = Math.max(...quotes.map((q) => q.strike));
      if (hi <= lo) {
        lo *= 0.9;
        hi *= 1.1;
      }
    }
    // even in log-strike, so both wings get points
    const strikes = Array.from({ length: SMILE_GRID_POINTS }, (_, i) => lo * Math.exp((Math.log(hi / lo) * i) / (SMILE_GRID_POINTS - 1)));
    const fits: Partial<Record<VolatilityModel, number[]>> = {};
    for (const m of models) {
      if (!m.slices.some((x) => x.expirationTimestamp === sl.expirationTimestamp)) continue;
      const p = expiryPoint(m, sl.expirationTimestamp);
      fits[m.model] = strikes.map((K) => p.vol(K));
    }
    return {
      expirationTimestamp: sl.expirationTimestamp,
      T: sl.T,
      forward: sl.forward,
      quotes,
      strikes,
      fits,
      rmseVolPts: sl.fit.rmseVolPts,
      quotesUsed: sl.fit.quotesUsed,
      butterflyFree: sl.fit.butterflyFree,
      status: sl.fit.status ?? 'fitted',
      referenceRmseVolPts: sl.fit.referenceRmseVolPts ?? null,
      repairCostVolPts: sl.fit.repairCostVolPts ?? null,
      warnings: (sl.fit.warnings ?? []).filter((w) => w.startsWith('fit quality:')),
    };
  });
}

/** Message rates of the feeds (src/metrics/feedRates.ts implements it): messages/s of the counter `key` whose
 * cumulative count is `messages` at `nowS` (Unix s); null before a second reading. */
export interface MessageRates {
  rate(key: string, messages: number, nowS: number): number | null;
}

/** The feed-status panel: one row per feed. */
export function feedPanel(cache: MarketCache, stats: readonly FeedStats[], rates: MessageRates, wallNowS: number): FeedPanel[] {
  return stats.map((s) => {
    const pairs = cache.expected().filter((p) => p.source === s.source);
    const reasons = pairs.map((p) => ({ p: pairLabel(p.pair), u: cache.unavailable(p.source, p.pair, null) }));
    let dropped = 0;
    for (const n of Object.values(s.dropped)) dropped += n;
    return {
      source: s.source,
      connected: s.connected,
      messages: s.messages,
      messagesPerSecond: rates.rate(s.source, s.messages, wallNowS),
      lastMessageAgeS: s.lastMessageAt === null ? null : Math.max(0, wallNowS - s.lastMessageAt),
      reconnects: s.reconnects,
      dropped,
      stalePairs: reasons.filter((r) => r.u?.reason === 'stale').map((r) => r.p),
      warmingUpPairs: reasons.filter((r) => r.u?.reason === 'warming-up').map((r) => r.p),
    };
  });
}

/**
 * A key that changes whenever the state of `sel` changes (surface or curve sequence, funding, availability):
 * the event stream sends a new state only then.
 */
export function selectionVersion(cache: MarketCache, sel: DashboardSelection | null): string {
  if (!sel) return `none:${dashboardOptions(cache).length}`;
  const seqs = VOLATILITY_MODELS.map((m) => cache.getSurface(sel.source, sel.pair, m)?.sequence ?? 0).join(',');
  const curve = cache.getForwardCurve(sel.source, sel.pair)?.sequence ?? 0;
  const funding = cache.funding
    .instruments(sel.source)
    .filter((i) => i.pair.base === sel.pair.base && i.pair.quote === sel.pair.quote)
    .map((i) => `${i.points}:${i.lastTimestamp}`)
    .join(',');
  const u = cache.unavailable(sel.source, sel.pair, sel.model)?.reason ?? 'ok';
  return `${sel.source}:${pairLabel(sel.pair)}:${sel.model}|${seqs}|${curve}|${funding}|${u}|${dashboardOptions(cache).length}`;
}

/** Build the whole state of `sel` (see the module comment). */
export function buildDashboardState(
  cache: MarketCache,
  sel: DashboardSelection | null,
  feeds: readonly FeedPanel[],
  wallNowS: number,
): DashboardState {
  const options = dashboardOptions(cache).map((o) => ({ source: o.source, pair: pairLabel(o.pair), models: o.models }));
  if (!sel) return { selection: null, options, generatedAt: wallNowS, unavailable: null, surface: null, forwardCurve: null, funding: [], feeds };
  const held = VOLATILITY_MODELS.map((m) => cache.getSurface(sel.source, sel.pair, m)).filter((s): s is SurfaceSnapshot => s !== undefined);
  const snap = cache.getSurface(sel.source, sel.pair, sel.model);
  const u = cache.unavailable(sel.source, sel.pair, sel.model);
  const surface: DashboardState['surface'] = snap
    ? {
        model: snap.model,
        models: held.map((s) => s.model),
        observationTimestamp: snap.observationTimestamp,
        spot: snap.spot,
        sequence: snap.sequence,
        calibrationMs: snap.calibrationMs,
        smiles: smiles(snap, held),
        term: snap.slices.map((sl) => termPoint(snap, sl.expirationTimestamp, sl.fit.rmseVolPts)),
      }
    : null;
  const fc = cache.getForwardCurve(sel.source, sel.pair);
  let forwardCurve: DashboardState['forwardCurve'] = null;
  if (fc) {
    const yields = new Map(fc.curve.fixedYields().map((y) => [y.expirationTimestamp, y.value]));
    forwardCurve = {
      observationTimestamp: fc.observationTimestamp,
      spot: fc.spot,
      sequence: fc.sequence,
      listed: fc.points.map((p) => ({ expirationTimestamp: p.expirationTimestamp, T: p.T, forward: p.forward, origin: p.origin, value: yields.get(p.expirationTimestamp) ?? null })),
      constMat: fc.curve.constMatYields(fc.observationTimestamp).map((y) => {
        const T = (y.expirationTimestamp - fc.observationTimestamp) / SECONDS_PER_YEAR;
        return { constMat: y.constMat, expirationTimestamp: y.expirationTimestamp, T, forward: fc.curve.forward(T), value: y.value };
      }),
    };
  }
  const funding = cache.funding
    .instruments(sel.source)
    .filter((i) => i.pair.base === sel.pair.base && i.pair.quote === sel.pair.quote)
    .map((i) => ({
      instrumentId: i.instrumentId,
      intervalHours: i.intervalHours,
      points: cache.fundingRange(sel.source, i.instrumentId, 0, Number.MAX_SAFE_INTEGER, DASHBOARD_FUNDING_POINTS).reverse(),
    }));
  return {
    selection: { source: sel.source, baseCurrency: sel.pair.base, quoteCurrency: sel.pair.quote, volatilityModel: sel.model },
    options,
    generatedAt: wallNowS,
    unavailable: u ? { reason: u.reason, message: u.message } : null,
    surface,
    forwardCurve,
    funding,
    feeds,
  };
}
