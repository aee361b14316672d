/**
 * Rebuild the cache's immutable snapshots from Kafka documents with the calibrator's own builders
 * (src/cache/snapshotBuilder.ts `buildForwardCurveSnapshot` and `buildSurfaceSnapshot`: the same VolSurface and
 * ForwardCurve constructors over the same inputs), so that a REST query answered by an API replica gives the same
 * numbers as the calibrator that published the document. JSON keeps every IEEE-754 double exactly (shortest
 * round-trip representation, ECMA-262 Number::toString), so the inputs are bit-identical.
 */
import { buildForwardCurveSnapshot, buildSurfaceSnapshot, type ModelFit } from '../cache/snapshotBuilder.js';
import type { ExpirySlice, ForwardCurveSnapshot, SurfaceSnapshot } from '../cache/snapshot.js';
import type { ForwardCurveMessage, SurfaceSnapshotMessage } from './schemas.js';

/** The model fit a surface document describes (expiries without `quotes`, as in surface-history, get an empty list). */
function modelFitOf(m: SurfaceSnapshotMessage): ModelFit {
  const slices: ExpirySlice[] = m.expiries.map((e) => ({
    expirationTimestamp: e.expirationTimestamp,
    T: e.T,
    forward: e.forward,
    params: { ...e.parameters },
    fit: { ...e.diagnostics },
    quotes: (e.quotes ?? []).map((q) => ({ ...q })),
  }));
  return {
    model: m.volatilityModel,
    slices,
    skipped: [],
    calibrationMs: m.calibrationMs,
    ...(m.arbitrage ? { arbitrage: structuredClone(m.arbitrage) as unknown as NonNullable<ModelFit['arbitrage']> } : {}),
  };
}

/**
 * A SurfaceSnapshot from a validated surface document: its VolSurface over the expiries' parameters and its
 * ForwardCurve over the document's own points and spot, exactly as the calibrator built them.
 * @throws Error when the document has no expiries, or whatever VolSurface / ForwardCurve throw on inconsistent
 *   inputs (the replica counts the document as invalid)
 */
export function surfaceFromMessage(m: SurfaceSnapshotMessage): SurfaceSnapshot {
  if (m.expiries.length === 0) throw new Error('surface document without expiries');
  const fc = buildForwardCurveSnapshot(m.source, { base: m.baseCurrency, quote: m.quoteCurrency }, m.observationTimestamp, m.spot, m.forwardCurve, m.sequence);
  // the document's `skipped` is already the union of the chain's and the model's (buildSnapshots joins them)
  return buildSurfaceSnapshot(fc, modelFitOf(m), m.skipped ?? []);
}

/** A ForwardCurveSnapshot from a validated forward-curve document. */
export function forwardCurveFromMessage(m: ForwardCurveMessage): ForwardCurveSnapshot {
  return buildForwardCurveSnapshot(m.source, { base: m.baseCurrency, quote: m.quoteCurrency }, m.observationTimestamp, m.spot, m.points, m.sequence);
}
