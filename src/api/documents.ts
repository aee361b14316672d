/**
 * The JSON documents the API answers, built from one immutable cache snapshot: shared by the REST routes
 * (./routes/surface.ts, ./routes/ivSummary.ts) and the streaming API (./stream/), so that a document pushed on
 * a channel has exactly the shape and the numbers of the REST answer of the same snapshot, with the same
 * `sequence` (the snapshot's, which Kafka documents carry too: src/kafka/schemas.ts).
 * Times are Unix seconds; vols fractions; prices in the pair's quote currency.
 */
import type { SurfaceHistory } from '../cache/history.js';
import { summarizeSurface, withDiffs } from '../cache/history.js';
import type { ForwardCurveSnapshot, IvSummary, SurfaceSnapshot } from '../cache/snapshot.js';

/**
 * The `surface` answer (GET /api/v1/global/data/surface) of `snap`.
 * @param sourceLabel the `source` to echo (the REST query's value, an alias included; the stream gives the canonical name)
 */
export function surfaceDocument(snap: SurfaceSnapshot, sourceLabel: string = snap.source) {
  return {
    source: sourceLabel,
    baseCurrency: snap.pair.base,
    quoteCurrency: snap.pair.quote,
    volatilityModel: snap.model,
    observationTimestamp: snap.observationTimestamp,
    spotPrice: snap.spot,
    sequence: snap.sequence,
    calibrationMs: snap.calibrationMs,
    arbitrage: snap.arbitrage ?? null,
    skipped: snap.skipped ?? [],
    expiries: snap.slices.map((s) => ({
      expirationTimestamp: s.expirationTimestamp,
      T: s.T,
      forwardPrice: s.forward,
      atmVol: snap.surface.impliedVol(s.T, s.forward, s.forward),
      parameters: s.params,
      diagnostics: s.fit,
    })),
  };
}

/**
 * The `iVSummary` answer (GET /api/v1/global/data/iVSummary) of `snap`, its 24 h changes measured against the
 * point of `history` nearest 24 h before it (null changes without one).
 * @param sourceLabel the `source` to echo (see {@link surfaceDocument})
 */
export function ivSummaryDocument(history: SurfaceHistory, snap: SurfaceSnapshot, sourceLabel: string = snap.source) {
  return ivSummaryDocumentAgainst(snap, history.dayAgo(snap.source, snap.pair, snap.model, snap.observationTimestamp), sourceLabel);
}

/**
 * The `iVSummary` answer of `snap` with its 24 h changes measured against `past` (null: every change null); the
 * as-of route reads `past` from the history store (src/api/routes/ivSummary.ts).
 */
export function ivSummaryDocumentAgainst(snap: SurfaceSnapshot, past: IvSummary | null, sourceLabel: string = snap.source) {
  const current = summarizeSurface(snap);
  const d = withDiffs(current, past);
  const entry = (e: (typeof d.listed)[number]) => ({
    expirationTimestamp: e.expirationTimestamp,
    ...(e.constMat ? { constMat: e.constMat } : {}),
    atmVol: e.atmVol,
    diffAtmVol: e.diffAtmVol,
    delta10Skew: e.delta10Skew,
    diffDelta10Skew: e.diffDelta10Skew,
    delta25Skew: e.delta25Skew,
    diffDelta25Skew: e.diffDelta25Skew,
    delta10Bfly: e.delta10Bfly,
    diffDelta10Bfly: e.diffDelta10Bfly,
    delta25Bfly: e.delta25Bfly,
    diffDelta25Bfly: e.diffDelta25Bfly,
  });
  return {
    baseCurrency: snap.pair.base,
    quoteCurrency: snap.pair.quote,
    source: sourceLabel,
    volatilityModel: snap.model,
    observationTimestamp: snap.observationTimestamp,
    diffReferenceTimestamp: past?.observationTimestamp ?? null,
    volatilityListed: d.listed.map(entry),
    volatilityConstMat: d.constMat.map(entry),
  };
}

/**
 * The `forwardCurve` answer (GET /api/v1/global/data/forwardCurve) of `snap`: annualized basis yields of the
 * listed expiries and of the constant maturities 1D..12M.
 * @param sourceLabel the `source` to echo (see {@link surfaceDocument})
 */
export function forwardCurveDocument(snap: ForwardCurveSnapshot, sourceLabel: string = snap.source) {
  return {
    baseCurrency: snap.pair.base,
    quoteCurrency: snap.pair.quote,
    source: sourceLabel,
    fixedYields: snap.curve.fixedYields(),
    constMatYields: snap.curve.constMatYields(snap.observationTimestamp),
    // additive: which curve answered (an `asOf` of this time answers it again)
    observationTimestamp: snap.observationTimestamp,
    sequence: snap.sequence,
  };
}
