/**
 * From fits to immutable cache snapshots: the one builder the calibration pipeline (streams/) and the Kafka replica
 * (src/kafka/rebuild.ts) share, so a replica answers with the very numbers of the calibrator that published.
 * A {@link ChainFit} is plain data (structured-clone and JSON safe): what a calibration worker sends back.
 */
import { ForwardCurve } from '../quant/forwardCurve.js';
import type { Pair, Source } from '../domain/markets.js';
import { buildModelSurface } from '../quant/chain/modelSurface.js';
import type { ChainFit, ExpirySlice, ForwardPoint, ModelFit, SmileQuote } from '../domain/chainFit.js';
import type { ChainView } from '../domain/chainView.js';
import { fitChain, type ChainFitOptions } from '../quant/chain/chainFit.js';
import type { ForwardCurveSnapshot, SurfaceSnapshot } from './snapshot.js';

// A chain fit's shapes live in src/domain (src/quant/chain/chainFit.ts makes them); re-exported for the cache's readers.
export type { ChainFit, ModelFit } from '../domain/chainFit.js';

/** Outcome of one chain calibration, as the cache takes it. */
export interface CalibrationResult {
  readonly source: Source;
  readonly pair: Pair;
  /** One snapshot per model with at least one served expiry, in VOLATILITY_MODELS order. */
  readonly surfaces: readonly SurfaceSnapshot[];
  /** The SVI snapshot (the first of `surfaces` when SVI is absent); null when no model served an expiry. */
  readonly surface: SurfaceSnapshot | null;
  /** Null when the chain has no spot yet. */
  readonly forwardCurve: ForwardCurveSnapshot | null;
  /** Expiries skipped and why. */
  readonly skipped: ReadonlyArray<{ expirationTimestamp: number; reason: string }>;
  readonly calibrationMs: number;
  /** Version of the chain state calibrated. */
  readonly version: number;
  /**
   * True for an urgent partial recalibration (streams/pipeline.ts): only the expiries whose marks moved by at least
   * the urgency threshold were refitted, the others kept their last fits (each slice's `fit.fittedAt` says when).
   */
  readonly partial?: boolean;
  /** Per model, the expiries refitted, confirmed and deferred by this calibration (ChainFit.sliceWork). */
  readonly sliceWork?: ChainFit['sliceWork'];
}

/** True when two quote lists are equal field by field (same strikes, sides, k, IVs, instruments, in order). */
function sameQuotes(a: readonly SmileQuote[], b: readonly SmileQuote[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.strike !== y.strike || x.k !== y.k || x.markIv !== y.markIv || x.bidIv !== y.bidIv || x.askIv !== y.askIv || x.optionType !== y.optionType || x.instrument !== y.instrument) return false;
  }
  return true;
}

/**
 * A frozen copy of a slice. `prev` (the same expiry in the previous snapshot of the same model): when its quotes
 * are equal (an expiry whose quotes and forward did not change, issue 12 item 1), its frozen quote list, the bulk of
 * a slice, is shared instead of copied (immutable, so sharing is safe). Params and diagnostics are always new: T
 * moves with the observation time, so even a carried slice's params differ.
 */
function freezeSlice(s: ExpirySlice, prev: ExpirySlice | undefined): ExpirySlice {
  return Object.freeze({
    ...s,
    params: Object.freeze({ ...s.params }),
    fit: Object.freeze({ ...s.fit, ...(s.fit.warnings ? { warnings: Object.freeze([...s.fit.warnings]) } : {}) }),
    quotes: prev && sameQuotes(prev.quotes, s.quotes) ? prev.quotes : Object.freeze(s.quotes.map((q) => Object.freeze({ ...q }))),
  });
}

/**
 * The immutable forward-curve snapshot of one (source, pair): the ForwardCurve over the listed points (frozen copies).
 * @param points listed forward points sorted by T; @param spot the index, quote currency (> 0)
 * @throws RangeError from ForwardCurve on invalid points or spot
 */
export function buildForwardCurveSnapshot(source: Source, pair: Pair, observationTimestamp: number, spot: number, points: readonly ForwardPoint[], sequence: number): ForwardCurveSnapshot {
  const frozen = Object.freeze(points.map((p) => Object.freeze({ ...p })));
  const curve = new ForwardCurve(spot, frozen);
  const snap: ForwardCurveSnapshot = Object.freeze({ source, pair, observationTimestamp, spot, points: frozen, curve, sequence });
  curveSnapshots.set(curve, snap);
  return snap;
}

const curveSnapshots = new WeakMap<object, ForwardCurveSnapshot>();

/**
 * The forward-curve snapshot a surface's curve object was built in (its listed points, sequence and time), or
 * undefined for a curve not built by {@link buildForwardCurveSnapshot} (hand-built test surfaces). The history store
 * records a surface's curve through it (a surface snapshot holds only the curve object).
 */
export function forwardCurveSnapshotOf(curve: object): ForwardCurveSnapshot | undefined {
  return curveSnapshots.get(curve);
}

/**
 * The immutable surface snapshot of one model over its served slices: a VolSurface (buildModelSurface: the model's
 * w(k) per expiry, the calendar envelope where the fit says so) on the pair's forward-curve snapshot.
 * @param skipped expiries not served and why (the chain's and the model's, joined by the caller)
 * @throws RangeError when a slice's parameters are invalid for its model
 */
export function buildSurfaceSnapshot(
  fc: ForwardCurveSnapshot,
  mf: ModelFit,
  skipped: ReadonlyArray<{ expirationTimestamp: number; reason: string }>,
  previous?: SurfaceSnapshot,
): SurfaceSnapshot {
  const prevByExpiry = new Map((previous?.slices ?? []).map((s) => [s.expirationTimestamp, s]));
  const slices = Object.freeze(mf.slices.map((s) => freezeSlice(s, prevByExpiry.get(s.expirationTimestamp))));
  return Object.freeze({
    source: fc.source,
    pair: fc.pair,
    model: mf.model,
    observationTimestamp: fc.observationTimestamp,
    spot: fc.spot,
    slices,
    surface: buildModelSurface(mf.model, slices),
    forwardCurve: fc.curve,
    // this model's own fit time (the chain's total is CalibrationResult.calibrationMs)
    calibrationMs: mf.calibrationMs,
    sequence: fc.sequence,
    ...(mf.arbitrage ? { arbitrage: Object.freeze({ ...mf.arbitrage, counts: Object.freeze({ ...mf.arbitrage.counts }) }) } : {}),
    skipped: Object.freeze(skipped.map((x) => Object.freeze({ ...x }))),
  });
}

/**
 * Immutable cache snapshots from a fit: per model a surface snapshot ({@link buildSurfaceSnapshot}) and the forward
 * curve shared by every model's snapshot ({@link buildForwardCurveSnapshot}); cheap, no fitting.
 * @param fit a {@link ChainFit} (from src/quant/chain/chainFit.ts fitChain, in a calibration worker)
 * @param sequence the snapshot sequence number to stamp (per (source, pair): every model of one
 *   recalibration carries the same number)
 * @param previous the previous result of the same (source, pair), optional: slices whose quotes are unchanged share
 *   its frozen quote lists instead of copying them
 * @throws RangeError when a slice's parameters are invalid for its model (streams/pipeline.ts turns it into a failed fit:
 *   the last good surface stays, nothing is published)
 */
export function buildSnapshots(fit: ChainFit, sequence: number, previous?: CalibrationResult | null): CalibrationResult {
  const { source, pair, spot, observationTimestamp: obs } = fit;
  if (spot === null) {
    return { source, pair, surfaces: [], surface: null, forwardCurve: null, skipped: fit.skipped, calibrationMs: fit.calibrationMs, version: fit.version, ...(fit.sliceWork ? { sliceWork: fit.sliceWork } : {}) };
  }
  const forwardCurve = buildForwardCurveSnapshot(source, pair, obs, spot, fit.points, sequence);
  const surfaces = fit.models
    .filter((mf) => mf.slices.length > 0)
    .map((mf) => buildSurfaceSnapshot(forwardCurve, mf, [...fit.skipped, ...mf.skipped], previous?.surfaces.find((s) => s.model === mf.model)));
  const surface = surfaces.find((s) => s.model === 'SVI') ?? surfaces[0] ?? null;
  return { source, pair, surfaces, surface, forwardCurve, skipped: fit.skipped, calibrationMs: fit.calibrationMs, version: fit.version, ...(fit.sliceWork ? { sliceWork: fit.sliceWork } : {}) };
}

/**
 * Fit and build in one step, on the calling thread (stateless: a fresh FitMemory, src/quant/chain/chainFit.ts
 * fitChain): the snapshots of `view` stamped with `sequence` (tests, benchmarks, the real-chain helpers; the service
 * fits in its calibration workers).
 */
export function calibrateChain(view: ChainView, sequence: number, options: ChainFitOptions = {}): CalibrationResult {
  return buildSnapshots(fitChain(view, options), sequence);
}
