/**
 * Rebuild the cache's immutable snapshots from Kafka documents with the calibrator's own builder
 * (streams/calibrate.ts `buildSnapshots`: the same VolSurface and ForwardCurve constructors over the same inputs), so
 * that a REST query answered by an API replica gives the same numbers as the calibrator that published the document.
 * JSON keeps every IEEE-754 double exactly (shortest round-trip representation, ECMA-262 Number::toString), so the
 * inputs are bit-identical.
 */
import { buildSnapshots, type ChainFit, type ModelFit } from '../../streams/calibrate.js';
import type { ExpirySlice, ForwardCurveSnapshot, SurfaceSnapshot } from '../cache/snapshot.js';
import type { ForwardCurveMessage, SurfaceSnapshotMessage } from './schemas.js';

/** The fit a surface document describes (expiries without `quotes`, as in surface-history, get an empty list). */
function fitOf(m: SurfaceSnapshotMessage): ChainFit {
  const slices: ExpirySlice[] = m.expiries.map((e) => ({
    expirationTimestamp: e.expirationTimestamp,
    T: e.T,
    forward: e.forward,
    params: { ...e.parameters },
    fit: { ...e.diagnostics },
    quotes: (e.quotes ?? []).map((q) => ({ ...q })),
  }));
  return {
    source: m.source,
    pair: { base: m.baseCurrency, quote: m.quoteCurrency },
    observationTimestamp: m.observationTimestamp,
    spot: m.spot,
    points: m.forwardCurve.map((p) => ({ ...p })),
    models: [
      {
        model: m.volatilityModel,
        slices,
        // the document's `skipped` is already the union of the chain's and the model's (buildSnapshots joins them)
        skipped: (m.skipped ?? []).map((x) => ({ ...x })),
        calibrationMs: m.calibrationMs,
        ...(m.arbitrage ? { arbitrage: structuredClone(m.arbitrage) as unknown as NonNullable<ModelFit['arbitrage']> } : {}),
      },
    ],
    skipped: [],
    calibrationMs: m.calibrationMs,
    version: 0,
  };
}

/**
 * A SurfaceSnapshot from a validated surface document: its VolSurface over the expiries' parameters and its
 * ForwardCurve over the document's own points and spot, exactly as the calibrator built them.
 * @throws Error when the builder cannot make a surface of the document's model, or whatever VolSurface /
 *   ForwardCurve throw on inconsistent inputs (the replica counts the document as invalid)
 */
export function surfaceFromMessage(m: SurfaceSnapshotMessage): SurfaceSnapshot {
  const built = buildSnapshots(fitOf(m), m.sequence).surface;
  if (!built) throw new Error('surface document without expiries');
  if (built.model !== m.volatilityModel) throw new Error(`this build cannot rebuild ${m.volatilityModel} surfaces (built ${built.model})`);
  return built;
}

/** A ForwardCurveSnapshot from a validated forward-curve document. */
export function forwardCurveFromMessage(m: ForwardCurveMessage): ForwardCurveSnapshot {
  const built = buildSnapshots(
    {
      source: m.source,
      pair: { base: m.baseCurrency, quote: m.quoteCurrency },
      observationTimestamp: m.observationTimestamp,
      spot: m.spot,
      points: m.points.map((p) => ({ ...p })),
      models: [],
      skipped: [],
      calibrationMs: 0,
      version: 0,
    },
    m.sequence,
  ).forwardCurve;
  return built!;
}
