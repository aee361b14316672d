/**
 * Rebuild the cache's immutable snapshots from Kafka documents, exactly as streams/calibrate.ts builds them from a
 * calibration (same constructors, same inputs), so that a REST query answered by an API replica gives the same
 * numbers as the calibrator that published the document. JSON keeps every IEEE-754 double exactly (shortest
 * round-trip representation, ECMA-262 Number::toString), so the inputs are bit-identical.
 */
import type { SviParams } from '../quant/svi.js';
import { VolSurface } from '../quant/surface.js';
import { ForwardCurve } from '../quant/forwardCurve.js';
import type { ExpirySlice, ForwardCurveSnapshot, ForwardPoint, SmileQuote, SurfaceSnapshot } from '../cache/snapshot.js';
import type { ForwardCurveMessage, SurfaceSnapshotMessage } from '../publish/schemas.js';

/** Frozen copies of forward points from a document. */
function points(ps: SurfaceSnapshotMessage['forwardCurve']): readonly ForwardPoint[] {
  return Object.freeze(ps.map((p) => Object.freeze({ expirationTimestamp: p.expirationTimestamp, T: p.T, forward: p.forward, origin: p.origin })));
}

/**
 * A SurfaceSnapshot from a validated surface document. Expiries without `quotes` (surface-history) get an empty
 * quote list. The forward curve is rebuilt from the document's own points and spot (the calibrator builds the
 * surface's curve from the same points: streams/calibrate.ts).
 * @throws whatever VolSurface/ForwardCurve throw on inconsistent inputs (the replica counts it as invalid)
 */
export function surfaceFromMessage(m: SurfaceSnapshotMessage): SurfaceSnapshot {
  const pts = points(m.forwardCurve);
  const curve = new ForwardCurve(m.spot, [...pts]);
  const slices: ExpirySlice[] = m.expiries.map((e) =>
    Object.freeze({
      expirationTimestamp: e.expirationTimestamp,
      T: e.T,
      forward: e.forward,
      params: Object.freeze({ ...e.parameters }),
      fit: Object.freeze({ ...e.diagnostics }),
      quotes: Object.freeze((e.quotes ?? []).map((q): SmileQuote => Object.freeze({ ...q }))),
    }),
  );
  return Object.freeze({
    source: m.source,
    pair: Object.freeze({ base: m.baseCurrency, quote: m.quoteCurrency }),
    model: m.volatilityModel,
    observationTimestamp: m.observationTimestamp,
    spot: m.spot,
    slices: Object.freeze(slices),
    surface: new VolSurface(
      slices.map((s) => ({ expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, params: s.params as unknown as SviParams })),
    ),
    forwardCurve: curve,
    calibrationMs: m.calibrationMs,
    sequence: m.sequence,
  });
}

/** A ForwardCurveSnapshot from a validated forward-curve document. */
export function forwardCurveFromMessage(m: ForwardCurveMessage): ForwardCurveSnapshot {
  const pts = points(m.points);
  return Object.freeze({
    source: m.source,
    pair: Object.freeze({ base: m.baseCurrency, quote: m.quoteCurrency }),
    observationTimestamp: m.observationTimestamp,
    spot: m.spot,
    points: pts,
    curve: new ForwardCurve(m.spot, [...pts]),
    sequence: m.sequence,
  });
}
