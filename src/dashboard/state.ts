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
import { VOLATILITY_MODELS, type FitDiagnostics, type SurfaceSnapshot, type VolatilityModel } from '../cache/snapshot.js';
import { summarizeSurface, withDiffs, type IvSummary, type IvSummaryEntryWithDiffs, type SurfaceHistory } from '../cache/history.js';
import { d1d2 } from '../quant/black76.js';
import { normCdf } from '../quant/normal.js';
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

/** One market quote of a smile (the out-of-the-money quote used by the fit). IVs rounded to 1e-6 (drawing precision). */
export interface SmileQuoteView {
  readonly strike: number;
  readonly optionType: 'C' | 'P';
  readonly markIv: number;
  readonly bidIv: number | null;
  readonly askIv: number | null;
  /** Plain forward Black call delta N(d1) at the mark IV (decisions.md), whatever the option type, 5 decimals; null if undefined. */
  readonly delta: number | null;
  /** IV of the selected model at this strike (fraction); residual = markIv - modelIv. */
  readonly modelIv: number | null;
}

/** Where the quotes of a smile lie, to mark partial and one-sided smiles. */
export interface SmileCoverage {
  /** Quotes with strike below / above the forward. */
  readonly below: number;
  readonly above: number;
  /** Every quote on one side of the forward (`calls`: all above, `puts`: all below), or null. */
  readonly oneSided: 'calls' | 'puts' | null;
  /** Fewer than {@link SPARSE_SMILE_QUOTES} quotes, or one-sided: the fit leans on its model, not on the market. */
  readonly partial: boolean;
}

/** The smile of one expiry. */
export interface SmileView {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: readonly SmileQuoteView[];
  /** Fitted curve of each model held for the pair (same strike grid for all), IV fractions to 6 significant digits (drawing precision). */
  readonly strikes: readonly number[];
  readonly fits: Readonly<Partial<Record<VolatilityModel, readonly number[]>>>;
  /** Plain forward Black call delta of each grid strike with that model's IV (for the delta axis), 5 decimals. */
  readonly fitDeltas: Readonly<Partial<Record<VolatilityModel, ReadonlyArray<number | null>>>>;
  /** Fit diagnostics of each model held for this expiry, as calibrated (src/cache/snapshot.ts FitDiagnostics, every field). */
  readonly diagnostics: Readonly<Partial<Record<VolatilityModel, FitDiagnostics>>>;
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
  readonly coverage: SmileCoverage;
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
  /** 24 h changes of the figures (src/cache/history.ts withDiffs, as GET iVSummary), null without a reference point. */
  readonly diffAtmVol: number | null;
  readonly diffDelta25Skew: number | null;
  readonly diffDelta25Bfly: number | null;
  readonly diffDelta10Skew: number | null;
  readonly diffDelta10Bfly: number | null;
  /** The figures of the reference point of about 24 h ago (same expiry), for the page's 24 h smile overlay; null without one. */
  readonly dayAgo: { readonly atmVol: number | null; readonly delta25Skew: number | null; readonly delta25Bfly: number | null; readonly delta10Skew: number | null; readonly delta10Bfly: number | null } | null;
}

/** One constant maturity of the IV summary (1W..9M) with its 24 h changes. */
export interface ConstMatTermPoint extends IvSummaryEntryWithDiffs {
  readonly T: number;
  /** Beyond the last listed expiry: the figures come from extrapolating the surface in maturity. */
  readonly extrapolated: boolean;
}

/** How the service gets its data, for the page's status badge. */
export interface MarketMode {
  /** `live` exchanges, `simulated` (embedded simulators), `replay` (recorded messages: historical data), `replica` (filled from Kafka). */
  readonly mode: 'live' | 'simulated' | 'replay' | 'replica';
  /** Replay: the recording has been replayed to its end. */
  readonly finished?: boolean;
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
  /** Completed reconnections. */
  readonly reconnects: number;
  /** Connection attempts after the first, successful or not (null: the feed has no socket, e.g. replay). */
  readonly reconnectAttempts: number | null;
  /** Seconds until the next connection attempt while disconnected (wall clock), null when none is scheduled. */
  readonly nextAttemptInS: number | null;
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
  /**
   * The past time (Unix s) the state shows, read from the history store (GET /dashboard/api/state?asOf=): the
   * surface, curve and 24 h reference served then; null for the live state.
   */
  readonly asOf: number | null;
  /** Why the selection is not servable now (the API's 503 reason), or null. */
  readonly unavailable: { reason: string; message: string } | null;
  /** Data mode of the service (live, simulated, replay = historical). */
  readonly market: MarketMode;
  readonly surface: {
    readonly model: VolatilityModel;
    readonly models: readonly VolatilityModel[];
    readonly observationTimestamp: number;
    readonly spot: number;
    readonly sequence: number;
    readonly calibrationMs: number;
    readonly smiles: readonly SmileView[];
    readonly term: readonly TermPoint[];
    /** The IV summary's constant maturities with 24 h changes and an extrapolation flag. */
    readonly constMat: readonly ConstMatTermPoint[];
    /** Observation time of the 24 h reference point (null: none held). */
    readonly dayAgoTimestamp: number | null;
    /** Expiries the model could not serve, and why. */
    readonly skipped: ReadonlyArray<{ readonly expirationTimestamp: number; readonly reason: string }>;
  } | null;
  readonly forwardCurve: {
    readonly observationTimestamp: number;
    readonly spot: number;
    readonly sequence: number;
    readonly listed: ReadonlyArray<{ expirationTimestamp: number; T: number; forward: number; origin: string; value: number | null }>;
    /** `extrapolated`: beyond the last listed expiry, read off the curve's extrapolation. */
    readonly constMat: ReadonlyArray<{ constMat: string; expirationTimestamp: number; T: number; forward: number; value: number; extrapolated: boolean }>;
  } | null;
  /**
   * Funding history per perpetual: `interest` is the rate per funding period (fraction); `periodsPerYear`
   * = 365 x 24 / intervalHours annualizes it (simple, no compounding), so exchanges with 1 h, 4 h and 8 h
   * periods compare.
   */
  readonly funding: ReadonlyArray<{ instrumentId: string; intervalHours: number; periodsPerYear: number; points: ReadonlyArray<{ timestamp: number; interest: number }> }>;
  readonly feeds: readonly FeedPanel[];
}

/** Funding points sent per instrument (newest). */
export const DASHBOARD_FUNDING_POINTS = 240;
/** Points of each fitted smile curve. */
export const SMILE_GRID_POINTS = 61;
/** A smile with fewer quotes than this is marked partial. */
export const SPARSE_SMILE_QUOTES = 5;

/** Plain forward Black call delta N(d1) (decisions.md "Delta"), T floored as iV/byDelta; null when sigma is not > 0. */
export function callDelta(F: number, K: number, T: number, sigma: number | null): number | null {
  if (sigma === null || !(sigma > 0) || !Number.isFinite(sigma)) return null;
  return normCdf(d1d2(F, K, Math.max(T, MIN_T_YEARS), sigma).d1);
}

/** Where the quotes of a smile lie against its forward (see {@link SmileCoverage}). */
export function smileCoverage(strikes: readonly number[], forward: number): SmileCoverage {
  const below = strikes.filter((k) => k < forward).length;
  const above = strikes.filter((k) => k > forward).length;
  const oneSided = strikes.length === 0 ? null : below === 0 ? 'calls' : above === 0 ? 'puts' : null;
  return { below, above, oneSided, partial: strikes.length < SPARSE_SMILE_QUOTES || oneSided !== null };
}

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
 * defaulting to the first (source, pair) of the service's expected list (the configured exchanges in the
 * pair table's order, so DERIBIT BTC/USD first), whether or not it has calibrated yet: the default never
 * flips between exchanges during warm-up. The model defaults to SVI.
 * @returns null when nothing is known yet and nothing was asked; throws RangeError for an unknown source,
 *   a source the service does not follow (when it knows any), or an unsupported pair
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
  let pick = candidates[0];
  if (!pick && source && q.baseCurrency && q.quoteCurrency) {
    const pair = SUPPORTED_PAIRS[source].find((p) => p.base === q.baseCurrency && p.quote === q.quoteCurrency);
    if (!pair) throw new RangeError(`${source} does not list ${q.baseCurrency}/${q.quoteCurrency} (it lists ${SUPPORTED_PAIRS[source].map(pairLabel).join(', ')})`);
    pick = { source, pair, models: [] };
  }
  if (!pick && options.length > 0) {
    const followed = [...new Set(options.map((o) => o.source))];
    if (source && !followed.includes(source)) throw new RangeError(`source ${source} is not followed by this service (it follows ${followed.join(', ')})`);
    const pair = [q.baseCurrency ?? '*', q.quoteCurrency ?? '*'].join('/');
    throw new RangeError(`no followed market matches ${source ?? 'any source'} ${pair} (followed: ${options.map((o) => `${o.source} ${pairLabel(o.pair)}`).join(', ')})`);
  }
  if (!pick) return null;
  const model = q.volatilityModel ?? 'SVI';
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
    diffAtmVol: null,
    diffDelta25Skew: null,
    diffDelta25Bfly: null,
    diffDelta10Skew: null,
    diffDelta10Bfly: null,
    dayAgo: null,
  };
}

/**
 * The term structure of `snap` with the 24 h changes and the 24 h reference figures of the iVSummary
 * (src/cache/history.ts: reference = the history point nearest to observationTimestamp - 24 h, within 30 min),
 * and the constant maturities 1W..9M flagged `extrapolated` beyond the listed expiries.
 */
export function termWithHistory(snap: SurfaceSnapshot, history: SurfaceHistory | null): { term: TermPoint[]; constMat: ConstMatTermPoint[]; dayAgoTimestamp: number | null } {
  return termAgainst(snap, history ? history.dayAgo(snap.source, snap.pair, snap.model, snap.observationTimestamp) : null);
}

/**
 * The term structure of `snap` with the 24 h changes and reference figures measured against `past` (the iVSummary
 * point of about 24 h before, however found: the in-memory history, or the history store read by the API layer;
 * null: no reference, every change null), and the constant maturities flagged `extrapolated`.
 */
export function termAgainst(snap: SurfaceSnapshot, past: IvSummary | null): { term: TermPoint[]; constMat: ConstMatTermPoint[]; dayAgoTimestamp: number | null } {
  const diffs = withDiffs(summarizeSurface(snap), past);
  const byExpiry = new Map(diffs.listed.map((e) => [e.expirationTimestamp, e]));
  const pastByExpiry = new Map((past?.listed ?? []).map((e) => [e.expirationTimestamp, e]));
  const term = snap.slices.map((sl): TermPoint => {
    const base = termPoint(snap, sl.expirationTimestamp, sl.fit.rmseVolPts);
    const d = byExpiry.get(sl.expirationTimestamp);
    const p = pastByExpiry.get(sl.expirationTimestamp);
    return {
      ...base,
      diffAtmVol: d?.diffAtmVol ?? null,
      diffDelta25Skew: d?.diffDelta25Skew ?? null,
      diffDelta25Bfly: d?.diffDelta25Bfly ?? null,
      diffDelta10Skew: d?.diffDelta10Skew ?? null,
      diffDelta10Bfly: d?.diffDelta10Bfly ?? null,
      dayAgo: p ? { atmVol: p.atmVol, delta25Skew: p.delta25Skew, delta25Bfly: p.delta25Bfly, delta10Skew: p.delta10Skew, delta10Bfly: p.delta10Bfly } : null,
    };
  });
  const Ts = snap.slices.map((x) => x.T);
  const hi = Ts.length ? Math.max(...Ts) : 0;
  const constMat = diffs.constMat.map((e): ConstMatTermPoint => {
    const T = (e.expirationTimestamp - snap.observationTimestamp) / SECONDS_PER_YEAR;
    return { ...e, T, extrapolated: T > hi + 1e-9 };
  });
  return { term, constMat, dayAgoTimestamp: past?.observationTimestamp ?? null };
}

/** One point of the page's time series of the held history (fractions; null: no figure). */
export interface HistoryPoint {
  readonly t: number;
  readonly atmVol: number | null;
  readonly delta25Skew: number | null;
  readonly delta25Bfly: number | null;
  readonly delta10Skew: number | null;
  readonly delta10Bfly: number | null;
}

/**
 * ATM vol, 25D/10D RR and BF over the held history (src/cache/history.ts, one point per 5 min bucket, up to
 * 25 h) of one listed expiry (matched by expirationTimestamp) or one constant maturity (by label), oldest first.
 */
export function historySeries(history: SurfaceHistory, sel: DashboardSelection, which: { expiry?: number | undefined; constMat?: string | undefined }): HistoryPoint[] {
  const out: HistoryPoint[] = [];
  for (const s of history.points(sel.source, sel.pair, sel.model)) {
    const e = which.constMat !== undefined ? s.constMat.find((c) => c.constMat === which.constMat) : s.listed.find((l) => l.expirationTimestamp === which.expiry);
    if (!e) continue;
    out.push({ t: s.observationTimestamp, atmVol: e.atmVol, delta25Skew: e.delta25Skew, delta25Bfly: e.delta25Bfly, delta10Skew: e.delta10Skew, delta10Bfly: e.delta10Bfly });
  }
  return out;
}

/** The smiles of `snap`, with the fitted curve of each model in `others` (same pair) on one strike grid. */
function smiles(snap: SurfaceSnapshot, models: readonly SurfaceSnapshot[]): SmileView[] {
  return snap.slices.map((sl) => {
    const own = expiryPoint(snap, sl.expirationTimestamp);
    const quotes = sl.quotes.map((q) => ({
      strike: q.strike,
      optionType: q.optionType,
      // drawing precision (light on the wire): IVs to 1e-6 (0.0001 vol point), deltas to 5 decimals
      markIv: +q.markIv.toFixed(6),
      bidIv: roundOrNull(q.bidIv, 6),
      askIv: roundOrNull(q.askIv, 6),
      delta: roundOrNull(callDelta(sl.forward, q.strike, sl.T, q.markIv), 5),
      modelIv: roundOrNull(own.vol(q.strike), 6),
    }));
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
    const strikes = Array.from({ length: SMILE_GRID_POINTS }, (_, i) => +(lo * Math.exp((Math.log(hi / lo) * i) / (SMILE_GRID_POINTS - 1))).toPrecision(7));
    const fits: Partial<Record<VolatilityModel, number[]>> = {};
    const fitDeltas: Partial<Record<VolatilityModel, Array<number | null>>> = {};
    const diagnostics: Partial<Record<VolatilityModel, FitDiagnostics>> = {};
    for (const m of models) {
      const mine = m.slices.find((x) => x.expirationTimestamp === sl.expirationTimestamp);
      if (!mine) continue;
      const p = expiryPoint(m, sl.expirationTimestamp);
      const ivs = strikes.map((K) => p.vol(K));
      // drawing precision (light on the wire): IVs to 6 significant digits, deltas to 5 decimals
      fits[m.model] = ivs.map((v) => +v.toPrecision(6));
      fitDeltas[m.model] = strikes.map((K, i) => roundOrNull(callDelta(sl.forward, K, sl.T, ivs[i]!), 5));
      diagnostics[m.model] = mine.fit;
    }
    return {
      expirationTimestamp: sl.expirationTimestamp,
      T: sl.T,
      forward: sl.forward,
      quotes,
      strikes,
      fits,
      fitDeltas,
      diagnostics,
      rmseVolPts: sl.fit.rmseVolPts,
      quotesUsed: sl.fit.quotesUsed,
      butterflyFree: sl.fit.butterflyFree,
      status: sl.fit.status ?? 'fitted',
      referenceRmseVolPts: sl.fit.referenceRmseVolPts ?? null,
      repairCostVolPts: sl.fit.repairCostVolPts ?? null,
      warnings: (sl.fit.warnings ?? []).filter((w) => w.startsWith('fit quality:')),
      coverage: smileCoverage(quotes.map((q) => q.strike), sl.forward),
    };
  });
}

/** Message rates of the feeds (src/metrics/feedRates.ts implements it): messages/s of the counter `key` whose
 * cumulative count is `messages` at `nowS` (Unix s); null before a second reading. */
export interface MessageRates {
  rate(key: string, messages: number, nowS: number): number | null;
}

function roundOrNull(x: number | null, decimals: number): number | null {
  return x === null || !Number.isFinite(x) ? null : +x.toFixed(decimals);
}

function finiteOrNull(x: number): number | null {
  return Number.isFinite(x) ? x : null;
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
      reconnectAttempts: s.reconnectAttempts ?? null,
      nextAttemptInS: s.nextAttemptAt === undefined || s.nextAttemptAt === null ? null : Math.max(0, s.nextAttemptAt - wallNowS),
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

/** Where {@link buildDashboardState} takes the 24 h reference from and which time it shows. */
export interface DashboardStateSource {
  /**
   * The iVSummary point of about 24 h before the selected surface (read from the history store by the caller), or
   * null for none; undefined: look it up in `cache.history` (the in-memory 24 h history).
   */
  readonly dayAgo?: IvSummary | null | undefined;
  /** The past time `cache` stands at (an as-of cache, src/api/asOf.ts), Unix s; absent: live. */
  readonly asOf?: number | undefined;
}

/**
 * Build the whole state of `sel` (see the module comment) from `cache` (the live cache, or one holding what was
 * served at `from.asOf`), the feed rows `feeds`, at wall time `wallNowS` (Unix s).
 */
export function buildDashboardState(
  cache: MarketCache,
  sel: DashboardSelection | null,
  feeds: readonly FeedPanel[],
  wallNowS: number,
  market: MarketMode = { mode: 'live' },
  from: DashboardStateSource = {},
): DashboardState {
  const asOf = from.asOf ?? null;
  const options = dashboardOptions(cache).map((o) => ({ source: o.source, pair: pairLabel(o.pair), models: o.models }));
  if (!sel) return { selection: null, options, generatedAt: wallNowS, asOf, unavailable: null, market, surface: null, forwardCurve: null, funding: [], feeds };
  const held = VOLATILITY_MODELS.map((m) => cache.getSurface(sel.source, sel.pair, m)).filter((s): s is SurfaceSnapshot => s !== undefined);
  const snap = cache.getSurface(sel.source, sel.pair, sel.model);
  const u = cache.unavailable(sel.source, sel.pair, sel.model);
  const th = snap ? (from.dayAgo === undefined ? termWithHistory(snap, cache.history) : termAgainst(snap, from.dayAgo)) : null;
  const surface: DashboardState['surface'] = snap && th
    ? {
        model: snap.model,
        models: held.map((s) => s.model),
        observationTimestamp: snap.observationTimestamp,
        spot: snap.spot,
        sequence: snap.sequence,
        calibrationMs: snap.calibrationMs,
        smiles: smiles(snap, held),
        term: th.term,
        constMat: th.constMat,
        dayAgoTimestamp: th.dayAgoTimestamp,
        skipped: snap.skipped ?? [],
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
        const Ts = fc.points.map((p) => p.T);
        const extrapolated = Ts.length === 0 || T > Math.max(...Ts) + 1e-9;
        return { constMat: y.constMat, expirationTimestamp: y.expirationTimestamp, T, forward: fc.curve.forward(T), value: y.value, extrapolated };
      }),
    };
  }
  const funding = cache.funding
    .instruments(sel.source)
    .filter((i) => i.pair.base === sel.pair.base && i.pair.quote === sel.pair.quote)
    .map((i) => ({
      instrumentId: i.instrumentId,
      intervalHours: i.intervalHours,
      periodsPerYear: (365 * 24) / i.intervalHours,
      points: cache.fundingRange(sel.source, i.instrumentId, 0, Number.MAX_SAFE_INTEGER, DASHBOARD_FUNDING_POINTS).reverse(),
    }));
  return {
    selection: { source: sel.source, baseCurrency: sel.pair.base, quoteCurrency: sel.pair.quote, volatilityModel: sel.model },
    options,
    generatedAt: wallNowS,
    asOf,
    unavailable: u ? { reason: u.reason, message: u.message } : null,
    market,
    surface,
    forwardCurve,
    funding,
    feeds,
  };
}
