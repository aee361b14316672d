/**
 * One recalibration of a (source, pair) chain, every model in src/domain/volatilityModels.ts: per listed expiry an SVI,
 * a SABR and a Vanna-Volga fit to the out-of-the-money mark IVs, the no-arbitrage checks and repairs, each model's
 * surface across expiries in total variance, and the forward points. Runs in the calibration worker
 * (streams/calibrationWorker.ts through chainFitter.ts ChainFitter); src/cache/snapshotBuilder.ts turns the plain
 * {@link ChainFit} into the immutable cache snapshots on the main thread. Each model's fit of one expiry is its
 * module's in src/quant/models (SmileModel.fit, through MODEL_REGISTRY); this file is the pipeline around it. Pieces:
 * expiryGroups.ts (the view's quotes per expiry), fitMemory.ts (what a pair keeps between fits), sparse.ts (sparse
 * expiries), quality.ts (served-surface figures), modelSurface.ts (slices -> surface, calendar envelope); each
 * model's typed parameters travel through the passes and are carried by the model's own carryForward. Deterministic
 * for a given sequence of chain views. Memory per (source, pair) ({@link FitMemory}): the last good slice per expiry
 * (used when a new fit is rejected), the repair/rejection counts, and each expiry's last fit with the inputs it was
 * fitted to.
 *
 * Incremental refits (issue 12 item 1, issue 22): a view that is not `full` (ChainView.full === false) refits only the
 * expiries whose inputs changed since their last fit (forward, or any quote's strike, mark, bid or ask IV; for an
 * SVI slice of fewer than 7 quotes also the shape prior it borrows) by more than the tracking tolerance says matters
 * (the refit gate, src/quant/chain/sliceGate.ts, for SVI; any change for SABR and Vanna-Volga), or whose T moved by
 * more than 0.1 % since
 * (SABR 0.05 %, Vanna-Volga 0.001 %: each model's SmileModel.reuseMaxTChange), each warm-started from its previous parameters (SVI:
 * `warm`, the outer search from them alone; SABR: `warm`, its LM from them alone). An unchanged expiry reuses its
 * last fit carried to the new T (the model's carryForward: the implied vol at each log-moneyness is kept). The sparse
 * expiries are refitted unless their neighbours are the same fits and their quotes moved within the tolerance; the
 * wing repairs are reused for the same two fits; the calendar flags and served-surface figures are redone unless
 * every slice of the model is the same fit as in the last pass (derivedPass). Full views (start, reconnect, roll-off, the periodic safety net of streams/pipeline.ts) fit
 * every expiry cold. docs/architecture.md "Recalibration" has the table. An urgent partial view (ChainView.refitOnly,
 * streams/pipeline.ts: a mark moved by at least CALIBRATION_URGENT_VOL_PTS) refits only its listed expiries; every
 * other expiry keeps its last fit carried to the new forward and T ("deferred"), and is refitted by the next
 * regular view.
 *
 * Rules (docs/conventions.md "Volatility surfaces: SVI, SABR, Vanna-Volga"):
 * - T = (expiry - observationTimestamp) / (365 * 86400); expiries closer than
 *   {@link MIN_EXPIRY_SECONDS} are left out of the fit (they roll off before they expire);
 * - the expiry's forward is the exchange's own (Deribit `underlying_price`) from the newest option
 *   quote of that expiry; futures supply forwards of expiries without options;
 * - quotes used: one per strike, the out-of-the-money side (put below the forward, call at or
 *   above it), mark IV within (0.01, 5); bid/ask IVs passed for spread weighting;
 * - every model fits the expiries in increasing T; a sparse expiry takes its shape from the last full fit
 *   of a shorter expiry (SVI `prior`, SABR `prior`); SVI slices are also kept above the previous served
 *   slice (calendar floor, Gatheral-Jacquier 2014 sec. 5, as calibrateSviSurface does);
 * - butterfly: SVI g(k) >= 0 (Gatheral-Jacquier 2014 eq. (2.1)), SABR and Vanna-Volga the density check on a
 *   strike grid (src/quant/smileArbitrage.ts). A violating fit is repaired by a constrained refit (SVI and
 *   SABR penalty rounds inside their calibrations; Vanna-Volga: the 25-delta pillar vols shrunk towards the
 *   ATM vol by the largest factor lambda in [0, 1] that passes, lambda = 0 being flat) or, if that fails,
 *   rejected: the last good slice of that expiry stays (carried to the new observation by the model's carryForward),
 *   or the expiry is left out when there is none;
 * - calendar: total variance non-decreasing in T at fixed k, checked on {@link CALENDAR_GRID}; a slice below
 *   the earlier served one is served as the envelope max(w_i, W_{i-1}) (src/quant/chain/modelSurface.ts), and the
 *   served surface is verified with VolSurface.calendarArbitrageFree.
 */
import { performance } from 'node:perf_hooks';
import type { ArbitrageCounts, ChainFit, ExpirySlice, ModelFit, SliceWork, SmileQuote, SurfaceArbitrage } from '../../domain/chainFit.js';
import { mayYield, type ChainView } from '../../domain/chainView.js';
import { optionPriceTick } from '../../domain/optionTicks.js';
import { VOLATILITY_MODELS, type VolatilityModel } from '../../domain/volatilityModels.js';
import { MODEL_REGISTRY, type FitContext, type SliceFit, type SliceFitOptions, type SmileModel } from '../models/index.js';
import type { VolSurface } from '../surface.js';
import { YEAR_S, MIN_EXPIRY_SECONDS, forwardPoints, groupByExpiry, type EligibleGroup } from './expiryGroups.js';
import { FitMemory, FitYielded, inputSignature, type FittedExpiry, type GoodSlice, type MutableCounts, type PassTally, type SparseFit, type WingRepair } from './fitMemory.js';
import { CALENDAR_GRID, CALENDAR_GRID_TEXT, buildTypedSurface, rawCalendarCheck, typedTotalVariance } from './modelSurface.js';
import { crossModelWarnings, servedQuality, within10Delta, type DraftSlice } from './quality.js';
import { SliceGate, residualsWithinTracking } from './sliceGate.js';
import { SHAPE_SOURCE_MIN_T, SPARSE_MAX_QUOTES, sparseTarget } from './sparse.js';

/** Options of a chain fit: those of a slice fit (SABR's beta). */
export type ChainFitOptions = SliceFitOptions;

/**
 * Fits one expiry with one model, in the model's typed parameters (the default is {@link fitExpiry}; tests inject
 * others).
 */
export type ExpiryFitter = <P>(smile: SmileModel<P>, g: EligibleGroup, st: FitContext<P>, options: ChainFitOptions) => SliceFit<P>;

/**
 * The model's calibration of one expiry (src/quant/models: each registered model fits a slice behind SmileModel.fit).
 * @throws whatever the calibration throws (no valid quote); fitModel turns it into a rejection
 */
export function fitExpiry<P>(smile: SmileModel<P>, g: EligibleGroup, st: FitContext<P>, options: ChainFitOptions): SliceFit<P> {
  return smile.fit(g, st, options);
}

/** The state one model's fit of a chain shares between its passes ({@link fitModel}); `mp` in the pass functions. */
interface ModelPass<P> {
  readonly model: VolatilityModel;
  /** The model's module, looked up once (its fit, checks and reuse limit). */
  readonly smile: SmileModel<P>;
  readonly groups: readonly EligibleGroup[];
  /** Observation time of the chain, Unix s. */
  readonly obs: number;
  readonly memory: FitMemory;
  readonly options: ChainFitOptions;
  readonly fit: ExpiryFitter;
  /** The memory's cumulative counts, last good slices, last own fits and wing repairs of this model. */
  readonly counts: MutableCounts;
  readonly lastGood: Map<number, GoodSlice<P>>;
  readonly fitted: Map<number, FittedExpiry<P>>;
  readonly wingRepairs: Map<number, WingRepair<P>>;
  readonly sparseFits: Map<number, SparseFit<P>>;
  /** The sparse-mode prior: the last full fit so far in increasing T (set by {@link settle}). */
  readonly st: FitContext<P>;
  /** Served draft slices by expiry (full and sparse passes). */
  readonly byExpiry: Map<number, DraftSlice<P>>;
  readonly skipped: Array<{ expirationTimestamp: number; reason: string }>;
  /** Per expiry, the RMSE of the model's own unconstrained fit (null: none), for the quality pass. */
  readonly reference: Map<number, number | null>;
  /** Per expiry, the identity of the own fit its served slice comes from (wing repair memo); absent: none. */
  readonly identity: Map<number, string>;
  /** Refitted, reused, warm, deferred and ceiling counts of this pass (FitMemory.lastPass). */
  readonly pass: PassTally;
}

/**
 * Fit one model over the eligible expiries, apply the rejection rule, the calendar envelope and the verification;
 * updates `memory` (last good slices, counts). `fit` fits one expiry (default {@link fitExpiry}; tests inject
 * failing fits to exercise the rejection rule).
 * - Pass 1 ({@link fullPass}), expiries with more than {@link SPARSE_MAX_QUOTES} quotes, in increasing T: each fitted
 *   on its own (no calendar floor); the last full fit of an expiry of at least {@link SHAPE_SOURCE_MIN_T} is the
 *   sparse-mode prior.
 * - Pass 2 ({@link sparsePass}), sparse expiries: the model is fitted to 41 points of {@link sparseTarget} (shape from
 *   both served neighbours in total variance, level from the quotes) over the quotes and +-4 ATM standard deviations;
 *   status `sparse`, `method` says how. Without any neighbour the model's own sparse mode is used (default shape).
 * - Wing repair ({@link ceilingPass}): a slice's unquoted wing is kept at or below the next expiry's served slice.
 * - Calendar ({@link calendarPass}): the envelope W_i = max(w_i, W_{i-1}) where the raw slice dips below the previous
 *   served one.
 * - Then ({@link qualityPass}), on the SERVED surface: RMSE and max error against the marks, the reference gap
 *   (referenceRmseVolPts, repairCostVolPts), the ATM and 25-delta errors and the quality warnings.
 */
export function fitModel(
  model: VolatilityModel,
  groups: readonly EligibleGroup[],
  obs: number,
  memory: FitMemory,
  options: ChainFitOptions = {},
  fit: ExpiryFitter = fitExpiry,
): ModelFit {
  return fitModelWith(MODEL_REGISTRY[model], groups, obs, memory, options, fit);
}

/**
 * {@link fitModel} with the model's module, typed by its parameters `P`: the passes carry them as the model made them
 * (fit, carryForward) and hand them back only to it; the stored form is written once, for the served slices.
 */
function fitModelWith<P>(smile: SmileModel<P>, groups: readonly EligibleGroup[], obs: number, memory: FitMemory, options: ChainFitOptions, fit: ExpiryFitter): ModelFit {
  const t0 = performance.now();
  const model = smile.name;
  const mp: ModelPass<P> = {
    model,
    smile,
    groups,
    obs,
    memory,
    options,
    fit,
    counts: memory.counts.get(model)!,
    ...memory.modelState(smile),
    st: { lastFull: undefined, lastFullT: undefined },
    byExpiry: new Map(),
    skipped: [],
    reference: new Map(),
    identity: new Map(),
    pass: { refitted: 0, reused: 0, warm: 0, deferred: 0, sparse: 0, ceilingRefitted: 0, ceilingReused: 0, derivedReused: false },
  };
  fullPass(mp);
  memory.lastPass.set(model, mp.pass);
  sparsePass(mp);
  const slices = [...mp.byExpiry.values()].sort((a, b) => a.T - b.T);
  ceilingPass(mp, slices);
  const { calendarFreeRaw, calendarFree } = derivedPass(mp, slices);
  const arbitrage: SurfaceArbitrage = {
    butterflyFree: slices.every((s) => s.fit.butterflyFree),
    calendarFreeRaw,
    calendarFree,
    calendarGrid: CALENDAR_GRID_TEXT,
    counts: { ...mp.counts } as ArbitrageCounts,
  };
  // the served slices in their stored form (the plain ChainFit a worker posts, snapshots and Kafka documents carry);
  // the snapshot builder reads them back (a record it cannot read fails that fit in streams/pipeline.ts)
  const served = slices.map((s): ExpirySlice => ({ ...s, params: mp.smile.toRecord(s.params) }));
  return { model, slices: served, skipped: mp.skipped, calibrationMs: performance.now() - t0, arbitrage };
}

/**
 * Serve an attempt, or apply the rejection rule; returns the served draft slice (or null: left out). `reusedFrom`:
 * the attempt is an earlier fit carried to this observation (no fit ran), fitted at that time.
 */
function settle<P>(mp: ModelPass<P>, g: EligibleGroup, run: () => SliceFit<P>, sparseHow: string | null, reusedFrom: number | null = null): DraftSlice<P> | null {
  const { smile, obs, counts, lastGood, reference, st, skipped } = mp;
  const ts = performance.now();
  let attempt: SliceFit<P> | null = null;
  let failure: string | null = null;
  try {
    attempt = run();
  } catch (err) {
    failure = `fit failed: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (reusedFrom === null) counts.fits++;
  if (attempt && !attempt.butterflyFree) failure = `butterfly arbitrage left after the constrained refit (${attempt.warnings.find((w) => w.startsWith('butterfly')) ?? 'check failed'})`;
  const base = { expirationTimestamp: g.expirationTimestamp, T: g.T, forward: g.forward, quotes: g.quotes };
  if (attempt && failure === null) {
    if (attempt.repaired) counts.constrainedRefits++;
    const slice: DraftSlice<P> = {
      ...base,
      params: attempt.params,
      fit: {
        rmseVolPts: attempt.rmseVolPts,
        maxErrorVolPts: attempt.maxErrorVolPts,
        quotesUsed: sparseHow === null ? attempt.quotesUsed : g.quotes.length,
        butterflyFree: true,
        method: sparseHow === null ? attempt.method : `sparse (${g.quotes.length} quote${g.quotes.length > 1 ? 's' : ''}): ${sparseHow}; model fitted to 41 points of that smile and the quotes (weight 5): ${attempt.method}`,
        calibrationMs: performance.now() - ts,
        status: sparseHow !== null ? 'sparse' : attempt.repaired ? 'repaired' : 'fitted',
        constrainedRefit: attempt.repaired,
        calendarFree: true,
        calendarRepaired: false,
        arbitrageCheck: smile.arbitrageCheck,
        minDensity: attempt.minDensity,
        fittedAt: reusedFrom ?? obs,
        atmErrorVolPts: attempt.atmErrorVolPts,
        plainRmseVolPts: sparseHow === null ? (attempt.plainRmseVolPts ?? null) : null,
        warnings: attempt.warnings.filter((w) => !w.startsWith('ATM check')),
      },
    };
    reference.set(g.expirationTimestamp, sparseHow === null ? (attempt.unconstrainedRmseVolPts ?? null) : null);
    lastGood.set(g.expirationTimestamp, { slice: { ...slice, fit: { ...slice.fit } }, fittedAt: reusedFrom ?? obs });
    if (sparseHow === null && attempt.full && g.T >= SHAPE_SOURCE_MIN_T) {
      st.lastFull = attempt.params;
      st.lastFullT = g.T;
      // the fit's identity (expiry and fit time: a confirmed slice keeps it), not its inputs: a prior confirmed within
      // the tracking tolerance does not change the slices that borrow its shape
      st.lastFullKey = `${g.expirationTimestamp}:${reusedFrom ?? obs}`;
    }
    return slice;
  }
  // Rejected: the last good slice of this expiry stays, carried to this observation.
  counts.rejected++;
  const prev = lastGood.get(g.expirationTimestamp);
  if (!prev) {
    counts.dropped++;
    skipped.push({ expirationTimestamp: g.expirationTimestamp, reason: `${failure}; no earlier good fit of this expiry` });
    return null;
  }
  counts.keptPrevious++;
  const params = smile.carryForward(prev.slice.params, prev.slice.T, g.T, prev.slice.forward, g.forward);
  reference.set(g.expirationTimestamp, null);
  return {
    ...base,
    params,
    fit: {
      ...prev.slice.fit,
      quotesUsed: g.quotes.length,
      butterflyFree: true,
      calibrationMs: performance.now() - ts,
      status: 'kept-previous',
      calendarFree: true,
      calendarRepaired: false,
      fittedAt: prev.fittedAt,
      rejectedReason: failure ?? 'rejected',
    },
  };
}

/**
 * Pass 1: the expiries with more than {@link SPARSE_MAX_QUOTES} quotes, in increasing T, each fitted on its own (or,
 * on an incremental view, its last fit reused or deferred: module docstring); fills `mp.byExpiry` and `mp.identity`.
 * @throws FitYielded when the memory's `shouldYield` asks it to stop at a slice boundary
 */
function fullPass<P>(mp: ModelPass<P>): void {
  const { model, smile, groups, obs, memory, options, fit, fitted, st, byExpiry, identity, pass } = mp;
  // Pass 1: expiries with enough quotes for a fit of their own. Incremental: an expiry whose inputs are those of
  // its last fit reuses it (carried to this T); a changed one refits warm from it (module docstring).
  for (const g of groups) {
    if (g.quotes.length <= SPARSE_MAX_QUOTES) continue;
    const signature = inputSignature(g);
    // a slice fitted in a sparse mode of its model (SVI under 7 quotes) borrows its shape from the last full fit
    const priorKey = smile.borrowsShape(g) ? (st.lastFullKey ?? 'none') : '';
    const prev = memory.incremental ? fitted.get(g.expirationTimestamp) : undefined;
    const deferred = memory.refitOnly !== null && !memory.refitOnly.has(g.expirationTimestamp);
    // (a deferred expiry of an urgent partial view whose inputs changed is kept without asking the gate: deferred)
    const unchanged =
      prev !== undefined &&
      prev.priorKey === priorKey &&
      Math.abs(g.T / prev.T - 1) <= smile.reuseMaxTChange &&
      (prev.signature === signature || (!deferred && withinTracking(smile, prev, g)));
    let slice: DraftSlice<P> | null;
    if (prev && (unchanged || deferred)) {
      if (unchanged) pass.reused++;
      else pass.deferred++;
      const carried: SliceFit<P> = { ...prev.attempt, params: smile.carryForward(prev.attempt.params, prev.T, g.T, prev.forward, g.forward) };
      slice = settle(mp, g, () => carried, null, prev.fittedAt);
      if (slice && slice.fit.status !== 'kept-previous') identity.set(g.expirationTimestamp, String(prev.id));
    } else {
      // preemption at a slice boundary (streams/calibrationPool.ts): the slices refitted so far stay in `fitted`
      if (memory.shouldYield !== null && memory.chainRefits > 0 && memory.shouldYield()) throw new FitYielded();
      memory.chainRefits++;
      pass.refitted++;
      if (prev) pass.warm++;
      const stFit: FitContext<P> = prev ? { ...st, previous: smile.carryForward(prev.attempt.params, prev.T, g.T, prev.forward, g.forward) } : st;
      const id = memory.nextFitId++;
      slice = settle(
        mp,
        g,
        () => {
          const fresh = fit(smile, g, stFit, options);
          // a warm refit computes no plain-fit figure (diagnostics only): the expiry's last one is kept
          const a = fresh.plainRmseVolPts === undefined && prev?.attempt.plainRmseVolPts !== undefined ? { ...fresh, plainRmseVolPts: prev.attempt.plainRmseVolPts } : fresh;
          fitted.set(g.expirationTimestamp, { id, signature, priorKey, attempt: a, T: g.T, forward: g.forward, fittedAt: obs, quotes: g.quotes, gate: undefined });
          return a;
        },
        null,
      );
      if (slice && slice.fit.status !== 'kept-previous') identity.set(g.expirationTimestamp, String(id));
    }
    if (slice) byExpiry.set(g.expirationTimestamp, slice);
  }
}

/**
 * Share of the tracking tolerance the gate's predicted change, and each quote's residual change, may use. Measured on
 * the real Deribit chains and the simulator (test/calibration/tracking.test.ts): with the whole tolerance, confirmed
 * slices strayed up to 12 tolerances from a cold fit inside their quotes (Vanna-Volga, whose fit responds to the
 * quotes less smoothly than the least squares the prediction linearizes, since ungated, and repaired SVI slices, since
 * refitted); with half, confirmed SVI slices stay within 0.61 of the tolerance inside their quotes.
 */
const GATE_SHARE = 0.5;

/**
 * Confirm without a refit (issue 22): true when a refit of expiry `g` would move its served smile by no more than the
 * tracking tolerance (src/quant/chain/sliceGate.ts; the gate of the last fit is built on first use and kept with it):
 * the Gauss-Newton prediction of the refit's change at every quote and on the |k| <= 1 check grid within
 * {@link GATE_SHARE} of the tolerance, and no quote's residual against the served smile moved by more than that share
 * of its tolerance (a local move that a least-squares projection would spread thin, e.g. near a Vanna-Volga pillar).
 * False when the gate cannot judge (other strikes, parameters it cannot read): refit.
 */
function withinTracking<P>(smile: SmileModel<P>, prev: FittedExpiry<P>, g: EligibleGroup): boolean {
  if (smile.trackingGate === false) return false;
  // expiries under 2 days are refitted whenever their quotes change: their fits respond least regularly to the quotes
  // (plateau marks, few quotes carrying weight under the spread-weighted objective); a confirmed 20-hour SABR slice of
  // the simulator strayed 0.5 vol pt (10 tolerances) inside its quotes
  if (g.T < SHAPE_SOURCE_MIN_T) return false;
  // only a plain full fit is linearized: a fit the rule rejected (butterfly left: the served slice is the last good
  // one, a refit may now pass), a penalty-repaired one (the response of a constrained fit is not the least squares'),
  // or one in a sparse mode with parameters fixed from a prior, is refitted
  if (!prev.attempt.butterflyFree || prev.attempt.repaired || !prev.attempt.full) return false;
  if (prev.gate === undefined) prev.gate = SliceGate.build(smile, prev.attempt.params, prev.T, prev.forward, prev.quotes);
  const c = prev.gate?.check(g.T, g.forward, g.quotes) ?? null;
  return c !== null && c.ratio <= GATE_SHARE && c.localRatio <= GATE_SHARE;
}

/**
 * Pass 2: the sparse expiries (at most {@link SPARSE_MAX_QUOTES} quotes), each fitted to 41 points of its
 * {@link sparseTarget} and its quotes (weight 5), shaped by the served neighbours of at least
 * {@link SHAPE_SOURCE_MIN_T}; without a neighbour the model's own sparse mode. Adds to `mp.byExpiry`.
 */
function sparsePass<P>(mp: ModelPass<P>): void {
  const { smile, groups, options, fit, st, byExpiry, pass, memory, identity, obs, sparseFits } = mp;
  // Pass 2: sparse expiries, shaped by their served neighbours (never by an expiry of less than 2 days).
  const sources = [...byExpiry.values()]
    .filter((s) => s.fit.status !== 'kept-previous' && s.T >= SHAPE_SOURCE_MIN_T)
    .sort((a, b) => a.T - b.T)
    .map((s) => ({ T: s.T, w: typedTotalVariance(smile, s), id: identity.get(s.expirationTimestamp) ?? null }));
  for (const g of groups) {
    if (g.quotes.length > SPARSE_MAX_QUOTES) continue;
    const lo = [...sources].reverse().find((x) => x.T < g.T) ?? null;
    const hi = sources.find((x) => x.T > g.T) ?? null;
    // Incremental: the last sparse fit is kept (carried) while its neighbours are the same fits and its quotes moved
    // within half their tracking tolerance (SparseFit; never under 2 days, as in pass 1).
    // (without a neighbour the model's own sparse mode depends on the chain's shape prior instead)
    const key = (lo && lo.id === null) || (hi && hi.id === null) ? null : lo || hi ? `${lo?.id ?? '-'}|${hi?.id ?? '-'}` : `prior ${st.lastFullKey ?? 'none'}`;
    const memo = memory.incremental && key !== null ? sparseFits.get(g.expirationTimestamp) : undefined;
    if (
      memo !== undefined &&
      memo.key === key &&
      g.T >= SHAPE_SOURCE_MIN_T &&
      memo.attempt.butterflyFree &&
      Math.abs(g.T / memo.T - 1) <= smile.reuseMaxTChange &&
      residualsWithinTracking(smile, memo.attempt.params, memo.T, memo.forward, memo.quotes, g.T, g.forward, g.quotes, GATE_SHARE)
    ) {
      pass.reused++;
      const carried: SliceFit<P> = { ...memo.attempt, params: smile.carryForward(memo.attempt.params, memo.T, g.T, memo.forward, g.forward) };
      const slice = settle(mp, g, () => carried, memo.how, memo.fittedAt);
      if (slice) {
        byExpiry.set(g.expirationTimestamp, slice);
        if (slice.fit.status !== 'kept-previous') identity.set(g.expirationTimestamp, `s${memo.id}`);
      }
      continue;
    }
    sparseFits.delete(g.expirationTimestamp);
    const target = sparseTarget(g, lo, hi);
    pass.sparse++;
    const id = memory.nextFitId++;
    const remember = (how: string, run: () => SliceFit<P>) => (): SliceFit<P> => {
      const a = run();
      if (key !== null) sparseFits.set(g.expirationTimestamp, { id, key, attempt: a, T: g.T, forward: g.forward, quotes: g.quotes, how, fittedAt: obs });
      return a;
    };
    let slice: DraftSlice<P> | null;
    if (target) {
      const s0 = Math.sqrt(Math.max(target.w(0), 1e-12));
      const kq = g.quotes.map((q) => q.k);
      const kLo = Math.min(-4 * s0, ...kq);
      const kHi = Math.max(4 * s0, ...kq);
      const synthetic: SmileQuote[] = [];
      for (let i = 0; i <= 40; i++) {
        const k = kLo + ((kHi - kLo) * i) / 40;
        const w = target.w(k);
        if (!(w > 0) || !Number.isFinite(w)) continue;
        synthetic.push({ instrument: 'sparse-target', strike: g.forward * Math.exp(k), optionType: k < 0 ? 'P' : 'C', k, markIv: Math.sqrt(w / g.T), bidIv: null, askIv: null });
      }
      // The quotes themselves join the 41 points with weight 5 (repeated), so that the model (which cannot follow
      // the target exactly: SABR has 3 parameters) stays within 1 vol point of them.
      for (let r = 0; r < 5; r++) for (const q of g.quotes) synthetic.push(q);
      synthetic.sort((a, b) => a.k - b.k);
      const how = `${target.how}; level lambda = ${target.lambda.toFixed(4)} and tilt mu = ${target.mu.toExponential(3)} (w = lambda w_shape + mu k) from the quotes`;
      const empty: FitContext<P> = { lastFull: undefined, lastFullT: undefined };
      slice = settle(mp, g, remember(how, () => fit(smile, { ...g, quotes: synthetic }, empty, options)), how);
    } else {
      const how = 'no neighbouring expiry to take a shape from: the model\'s own sparse mode (default shape)';
      slice = settle(mp, g, remember(how, () => fit(smile, g, st, options)), how);
    }
    if (slice) {
      byExpiry.set(g.expirationTimestamp, slice);
      if (slice.fit.status !== 'kept-previous') identity.set(g.expirationTimestamp, `s${id}`);
    }
  }
}

/**
 * Wing repair under the next expiry's calendar ceiling, on `slices` sorted by T (replaced in place by their repaired
 * slices): where the next longer served expiry is quoted and this one is not, this slice's extrapolated wing must not
 * lie above it; the slice is refitted with that ceiling (its quoted part barely moves) and kept only if the refit is
 * arbitrage-free and meets the ceiling. An incremental view reuses the last repair of the same two fits
 * (FitMemory.wingRepairs) when it still meets the ceiling.
 */
function ceilingPass<P>(mp: ModelPass<P>, slices: DraftSlice<P>[]): void {
  // longest first: a repaired slice is the ceiling of the one before it
  for (let i = slices.length - 2; i >= 0; i--) repairWing(mp, slices, i);
}

/**
 * The wing repair of `slices[i]` under `slices[i + 1]` ({@link ceilingPass}); replaces `slices[i]` when it is repaired,
 * records the repair (or its failure) in the memory's wing repairs.
 */
function repairWing<P>(mp: ModelPass<P>, slices: DraftSlice<P>[], i: number): void {
  const { model, smile, groups, obs, memory, options, fit, counts, lastGood, wingRepairs, st, identity, pass } = mp;
  const s = slices[i]!;
  const next = slices[i + 1]!;
  if (s.fit.status === 'kept-previous' || s.fit.status === 'sparse') return;
  const g = groups.find((x) => x.expirationTimestamp === s.expirationTimestamp)!;
  const wNext = typedTotalVariance(smile, next);
  const wOwn = typedTotalVariance(smile, s);
  const { grid, yields } = ceilingGrid(s, next);
  // the identity of this slice as the next one of the slice before it: kept while it is served unrepaired
  const ownId = identity.get(s.expirationTimestamp);
  const nextId = identity.get(next.expirationTimestamp);
  identity.delete(s.expirationTimestamp);
  if (!grid.some((k) => wOwn(k) > wNext(k))) {
    if (ownId !== undefined) identity.set(s.expirationTimestamp, ownId);
    return;
  }
  // The same two fits as at the last repair (both reused or deferred, on an incremental view): that repair, carried
  // to this T, if it still meets the ceiling on this grid (WingRepair).
  const key = ownId !== undefined && nextId !== undefined ? `${ownId}<${nextId}${yields ? ' yields' : ''}` : null;
  const memo = key !== null && memory.incremental ? wingRepairs.get(s.expirationTimestamp) : undefined;
  let repair: Extract<WingRepair<P>, { failed: false }> | null = null;
  if (memo !== undefined && memo.key === key) {
    if (memo.failed) {
      pass.ceilingReused++;
      return;
    }
    const params = smile.carryForward(memo.params, memo.T, s.T, memo.forward, s.forward);
    const wCarried = typedTotalVariance(smile, { T: s.T, forward: s.forward, params });
    if (!grid.some((k) => wCarried(k) > wNext(k) * (1 + 1e-9))) {
      repair = { ...memo, params, T: s.T, forward: s.forward };
      pass.ceilingReused++;
    }
  }
  if (repair === null) {
    let refit: SliceFit<P> | null = null;
    pass.ceilingRefitted++;
    try {
      // incremental: warm from the slice's own fit (its quoted part barely moves under the ceiling)
      refit = fit(smile, g, { ...st, ceiling: { w: wNext, kGrid: grid }, ...(memory.incremental ? { previous: s.params } : {}) }, options);
    } catch {
      refit = null;
    }
    const wRefit = refit && refit.butterflyFree ? typedTotalVariance(smile, { T: s.T, forward: s.forward, params: refit.params }) : null;
    if (!refit || wRefit === null || grid.some((k) => wRefit(k) > wNext(k) * (1 + 1e-9))) {
      if (key !== null) wingRepairs.set(s.expirationTimestamp, { key, failed: true });
      return;
    }
    repair = { key: key ?? '', failed: false, params: refit.params, T: s.T, forward: s.forward, method: refit.method, minDensity: refit.minDensity, warnings: refit.warnings };
    if (key !== null) wingRepairs.set(s.expirationTimestamp, repair);
    else wingRepairs.delete(s.expirationTimestamp);
  }
  if (key !== null) identity.set(s.expirationTimestamp, `(${key})`);
  counts.constrainedRefits++;
  const repaired: DraftSlice<P> = {
    ...s,
    params: repair.params,
    fit: {
      ...s.fit,
      method: `${repair.method}; ${yields ? 'kept at or below the next expiry\'s slice over its quoted range (an expiry under 2 days yields)' : 'wings kept at or below the next expiry\'s slice where it is quoted and this one is not'} (calendar ceiling on ${grid.length} points)`,
      status: 'repaired',
      constrainedRefit: true,
      minDensity: repair.minDensity,
      warnings: repair.warnings.filter((w) => !w.startsWith('ATM check')),
    },
  };
  slices[i] = repaired;
  lastGood.set(s.expirationTimestamp, { slice: { ...repaired, fit: { ...repaired.fit } }, fittedAt: obs });
}

/**
 * Where slice `s` must stay at or below the next expiry's slice `next` ({@link repairWing}): 81 points of k across
 * `next`'s quoted range, those outside `s`'s own quoted range, or all of them when `s` yields (T under
 * {@link SHAPE_SOURCE_MIN_T}: the noisiest expiry, often marked with flat plateaus, never forces a longer one up).
 */
function ceilingGrid(s: DraftSlice<unknown>, next: DraftSlice<unknown>): { grid: number[]; yields: boolean } {
  const kq = s.quotes.map((q) => q.k);
  const nk = next.quotes.map((q) => q.k);
  const lo = Math.min(...kq);
  const hi = Math.max(...kq);
  const grid: number[] = [];
  const nLo = Math.min(...nk);
  const nHi = Math.max(...nk);
  // An expiry of less than 2 days (the noisiest, often marked with flat plateaus) yields everywhere the next one is
  // quoted, so that it never forces a longer expiry up; any other only outside its own quoted range.
  const yields = s.T < SHAPE_SOURCE_MIN_T;
  for (let j = 0; j <= 80; j++) {
    const k = nLo + ((nHi - nLo) * j) / 80;
    if (yields || k < lo || k > hi) grid.push(k);
  }
  return { grid, yields };
}

/**
 * The calendar pass and the quality figures ({@link calendarPass}, {@link qualityPass}), or, on an incremental view
 * whose served slices all come from the same fits as the last pass's (every expiry confirmed: the same fit
 * identities, sparse fits and wing repairs, carried to the new T and forward), their results of that pass: the
 * calendar flags and the quality figures of each slice are computed once per change, not once per pass (issue 22;
 * the figures then describe the served slice as of its last change, within the tracking tolerance of the current
 * one). The cumulative calendar-repair count moves on as if the pass had run.
 */
function derivedPass<P>(mp: ModelPass<P>, slices: DraftSlice<P>[]): { calendarFreeRaw: boolean; calendarFree: boolean } {
  const { memory, model, identity, counts } = mp;
  const derived = memory.derived.get(model);
  let key: string | null = '';
  for (const s of slices) {
    const id = identity.get(s.expirationTimestamp);
    if (id === undefined || s.fit.status === 'kept-previous') {
      key = null;
      break;
    }
    key += `${s.expirationTimestamp}=${id};`;
  }
  if (memory.incremental && key !== null && derived !== undefined && derived.key === key) {
    slices.forEach((s, i) => {
      s.fit = { ...derived.fits[i]!, calibrationMs: s.fit.calibrationMs, fittedAt: s.fit.fittedAt };
      if (s.fit.calendarRepaired) counts.calendarRepaired++;
    });
    mp.pass.derivedReused = true;
    return { calendarFreeRaw: derived.calendarFreeRaw, calendarFree: derived.calendarFree };
  }
  const { calendarFreeRaw, calendarFree, served } = calendarPass(mp, slices);
  if (served) qualityPass(mp, served, slices);
  if (key !== null) memory.derived.set(model, { key, fits: slices.map((s) => ({ ...s.fit })), calendarFreeRaw, calendarFree });
  else memory.derived.delete(model);
  return { calendarFreeRaw, calendarFree };
}

/**
 * Calendar: the raw check slice by slice on {@link CALENDAR_GRID} (a slice below the earlier served one is marked
 * `calendarRepaired` and served as the envelope), then the served surface and its verification. `served` is null
 * when there is no slice.
 */
function calendarPass<P>(mp: ModelPass<P>, slices: readonly DraftSlice<P>[]): { calendarFreeRaw: boolean; calendarFree: boolean; served: VolSurface | null } {
  const { smile, counts } = mp;
  let calendarFreeRaw = true;
  let calendarFree = true;
  if (slices.length > 0) {
    const fns = slices.map((s) => typedTotalVariance(smile, s));
    const raw = rawCalendarCheck(fns, CALENDAR_GRID);
    raw.forEach((r, i) => {
      const s = slices[i]!;
      s.fit.calendarFree = r.calendarFree;
      if (!r.calendarFree) {
        calendarFreeRaw = false;
        s.fit.calendarRepaired = true;
        if (s.fit.status === 'fitted') s.fit.status = 'repaired';
        counts.calendarRepaired++;
      }
    });
    const served = buildTypedSurface(smile, slices);
    calendarFree = served.calendarArbitrageFree(CALENDAR_GRID).arbitrageFree;
    return { calendarFreeRaw, calendarFree, served };
  }
  return { calendarFreeRaw, calendarFree, served: null };
}

/**
 * The figures measured on the SERVED surface, per slice: the 10-delta RMSE ({@link within10Delta}) and
 * {@link servedQuality} (RMSE and max error against the marks, the reference gap, ATM and 25-delta errors, warnings).
 */
function qualityPass<P>(mp: ModelPass<P>, served: VolSurface, slices: readonly DraftSlice<P>[]): void {
  for (const s of slices) {
    const core = within10Delta(served, s);
    s.fit.rmse10DeltaVolPts = core.rmse;
    s.fit.quotes10Delta = core.quotes;
    servedQuality(served, s, mp.reference.get(s.expirationTimestamp) ?? null);
  }
}


/**
 * Fit one chain view with every model of src/domain/volatilityModels.ts (SABR's beta from `options.sabrBeta`,
 * default 1), per expiry, the rejection rule against `memory` and the calendar envelope (module docstring), plus the
 * listed forward points. Without `memory` a fresh one is used (no earlier slice can be kept, counts are this
 * fit's). Runs in the calibration worker.
 * @param shouldYield on a view that may yield (mayYield: a regular incremental view, or a full view of the periodic
 *   safety net only): asked before each slice refit after the
 *   chain's first; when it answers true the fit stops there ({@link FitYielded}). The slices refitted until then stay
 *   in `memory` (a later view with the same inputs for them reuses them) and the cumulative counts, but the count of
 *   fits run, are restored to their values before this fit; nothing is returned for the view.
 * @throws FitYielded when `shouldYield` stopped it
 */
export function fitChain(view: ChainView, options: ChainFitOptions = {}, memory: FitMemory = new FitMemory(), shouldYield?: () => boolean): ChainFit {
  const t0 = performance.now();
  const obs = view.observationTimestamp;
  const skipped: Array<{ expirationTimestamp: number; reason: string }> = [];
  const spot = view.spot;
  if (spot === null || !Number.isFinite(obs)) {
    return { source: view.source, pair: view.pair, observationTimestamp: obs, spot: null, points: [], models: [], skipped, calibrationMs: performance.now() - t0, version: view.version };
  }
  // the chain's option price tick (issue 26's no-bid price bands) unless the caller set one (null: none)
  if (options.optionPriceTick === undefined) options = { ...options, optionPriceTick: optionPriceTick(view.source, view.pair, obs) };
  memory.prune(obs);
  memory.incremental = view.full === false;
  memory.refitOnly = view.full === false && view.refitOnly !== undefined ? new Set(view.refitOnly) : null;
  memory.shouldYield = mayYield(view) && shouldYield ? shouldYield : null;
  memory.chainRefits = 0;
  const groups = groupByExpiry(view.options, obs);
  const points = forwardPoints(groups, view.futures, obs);
  const eligible = groups.filter((g) => {
    if (g.T * YEAR_S < MIN_EXPIRY_SECONDS) {
      skipped.push({ expirationTimestamp: g.expirationTimestamp, reason: 'expires within the hour' });
      return false;
    }
    if (g.quotes.length === 0) {
      skipped.push({ expirationTimestamp: g.expirationTimestamp, reason: 'no usable mark IV' });
      return false;
    }
    return true;
  });
  // (the iVSummary figures are computed where they are read, once per snapshot: src/cache/history.ts summarizeSurface)
  // the cumulative repair/rejection counts of a pass that yields are taken back (its retry counts its served slices
  // again), except `fits`: the fits it ran are kept in memory and reused by the retry, which does not count them
  const counts = memory.shouldYield ? VOLATILITY_MODELS.map((m) => ({ ...memory.counts.get(m)! })) : null;
  let models: ModelFit[];
  try {
    models = VOLATILITY_MODELS.map((m): ModelFit => fitModel(m, eligible, obs, memory, options));
  } catch (err) {
    if (err instanceof FitYielded && counts) {
      VOLATILITY_MODELS.forEach((m, i) => {
        const c = memory.counts.get(m)!;
        Object.assign(c, { ...counts[i]!, fits: c.fits });
      });
    }
    throw err;
  }
  crossModelWarnings(models);
  const sliceWork: Partial<Record<VolatilityModel, SliceWork>> = {};
  for (const m of VOLATILITY_MODELS) {
    const p = memory.lastPass.get(m);
    if (p) sliceWork[m] = { refitted: p.refitted + p.sparse, confirmed: p.reused, deferred: p.deferred };
  }
  return { source: view.source, pair: view.pair, observationTimestamp: obs, spot, points, models, skipped, calibrationMs: performance.now() - t0, version: view.version, sliceWork };
}
