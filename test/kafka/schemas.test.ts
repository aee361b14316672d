/**
 * Kafka documents without a broker: the zod schemas accept what the publisher builds and reject broken values, the
 * JSON text round trip rebuilds snapshots that answer bit-identically (the replica's promise), and docs/events.md
 * carries the current JSON Schemas (regenerate with `npx tsx scripts/gen-events-doc.ts`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ForwardCurveMessageSchema,
  FundingUpdateMessageSchema,
  SurfaceSnapshotMessageSchema,
  eventJsonSchemas,
  forwardCurveToMessage,
  fundingToMessage,
  messageToFunding,
  surfaceToMessage,
} from '../../src/kafka/schemas.js';
import { renderEventSchemasSection, replaceGeneratedSection } from '../../src/kafka/eventsDoc.js';
import { forwardCurveFromMessage, surfaceFromMessage } from '../../src/kafka/rebuild.js';
import { sviTotalVariance } from '../../src/quant/svi.js';
import { fundingPoint, makeSnapshots } from './helpers.js';

const OBS = 1_767_254_400.123; // 2026-01-01T08:00:00.123Z
const BTC = { base: 'BTC', quote: 'USD' } as const;

describe('Kafka document schemas', () => {
  const { surface, curve } = makeSnapshots('DERIBIT', BTC, OBS, 7, 3);

  it('maps a surface snapshot to a valid v1 document carrying the forward curve, parameters, fit and input counts', () => {
    const m = surfaceToMessage(surface, curve.points, true);
    const r = SurfaceSnapshotMessageSchema.safeParse(m);
    expect(r.success, JSON.stringify(!r.success && r.error.issues)).toBe(true);
    expect(m.schemaVersion).toBe(1);
    expect([m.source, m.baseCurrency, m.quoteCurrency, m.volatilityModel]).toEqual(['DERIBIT', 'BTC', 'USD', 'SVI']);
    expect(m.observationTimestamp).toBe(OBS);
    expect(m.sequence).toBe(7);
    expect(m.inputCount).toBe(6);
    expect(m.forwardCurve.map((p) => p.origin)).toEqual(['option-underlying', 'option-underlying', 'future']);
    expect(m.forwardCurve[2]!.forward).toBe(101_000);
    expect(m.expiries).toHaveLength(2);
    expect(m.expiries[0]!.parameters).toEqual({ a: 0.002 + 3e-4, b: 0.05, rho: -0.3, m: 0.01, sigma: 0.1 });
    expect(m.expiries[1]!.diagnostics).toEqual({ rmseVolPts: 0.2, maxErrorVolPts: 0.3, quotesUsed: 3, butterflyFree: true, method: 'raw-svi', calibrationMs: 1.25 });
    expect(m.expiries[0]!.quotes).toHaveLength(3);
    expect(surfaceToMessage(surface, curve.points, false).expiries[0]!.quotes).toBeUndefined();
  });

  it('rejects non-finite numbers, a wrong version, an unknown model and an empty surface', () => {
    const good = surfaceToMessage(surface, curve.points, false);
    const bad = (patch: (m: ReturnType<typeof structuredClone<typeof good>>) => void) => {
      const m = structuredClone(good);
      patch(m);
      return SurfaceSnapshotMessageSchema.safeParse(m).success;
    };
    expect(bad(() => {})).toBe(true);
    expect(bad((m) => (m.expiries[0]!.diagnostics.rmseVolPts = NaN))).toBe(false);
    expect(bad((m) => (m.spot = Infinity))).toBe(false);
    expect(bad((m) => ((m as { schemaVersion: number }).schemaVersion = 2))).toBe(false);
    expect(bad((m) => ((m as { volatilityModel: string }).volatilityModel = 'HESTON'))).toBe(false);
    expect(bad((m) => (m.expiries = []))).toBe(false);
    // JSON turns NaN into null: the parsed text is rejected too.
    const text = JSON.stringify({ ...good, spot: NaN });
    expect(SurfaceSnapshotMessageSchema.safeParse(JSON.parse(text)).success).toBe(false);
    // Additive fields are allowed in version 1 (consumers ignore them).
    expect(SurfaceSnapshotMessageSchema.safeParse({ ...good, newField: 1 }).success).toBe(true);
  });

  it('rebuilds a surface from the JSON text that answers bit-identically to the original', () => {
    const text = JSON.stringify(SurfaceSnapshotMessageSchema.parse(surfaceToMessage(surface, curve.points, true)));
    const back = surfaceFromMessage(SurfaceSnapshotMessageSchema.parse(JSON.parse(text)));
    expect(back.sequence).toBe(7);
    expect(back.slices.map((s) => s.params)).toEqual(surface.slices.map((s) => s.params));
    expect(back.slices[0]!.quotes).toEqual(surface.slices[0]!.quotes);
    for (const T of [0.001, 0.02, 0.05, 0.0821917808219178, 0.3, 2]) {
      expect(back.forwardCurve.forward(T)).toBe(surface.forwardCurve.forward(T));
      const F = surface.forwardCurve.forward(T);
      for (const K of [50_000, 90_000, 100_000, 100_123.5, 130_000]) {
        expect(back.surface.impliedVol(T, K, F)).toBe(surface.surface.impliedVol(T, K, F));
      }
    }
    // Independent reference at a listed expiry: sigma = sqrt(w(k)/T) with raw SVI w (Gatheral-Jacquier 2014 eq. 3.1).
    const s0 = surface.slices[0]!;
    const k = Math.log(95_000 / s0.forward);
    const w = sviTotalVariance(s0.params as never, k);
    expect(back.surface.impliedVol(s0.T, 95_000, s0.forward)).toBeCloseTo(Math.sqrt(w / s0.T), 12);
  });

  it('carries the no-arbitrage status and the skipped expiries, and the rebuilt snapshot has them back', () => {
    const arbitrage = {
      butterflyFree: true,
      calendarFreeRaw: false,
      calendarFree: true,
      calendarGrid: '241 points of k in [-3, 3]',
      counts: { fits: 40, butterflyRepaired: 2, calendarRepaired: 3, rejected: 1, keptPrevious: 1, dropped: 0 },
    };
    const skipped = [{ expirationTimestamp: OBS + 1800, reason: 'expires within the hour' }];
    const withStatus = { ...surface, arbitrage, skipped } as unknown as typeof surface; // counts: whatever the calibrator counts
    const m = SurfaceSnapshotMessageSchema.parse(JSON.parse(JSON.stringify(surfaceToMessage(withStatus, curve.points, false))));
    expect(m.arbitrage).toEqual(arbitrage);
    expect(m.skipped).toEqual(skipped);
    const back = surfaceFromMessage(m) as typeof surface & { arbitrage?: unknown; skipped?: unknown };
    expect(back.arbitrage).toEqual(arbitrage);
    expect(back.skipped).toEqual(skipped);
    expect(SurfaceSnapshotMessageSchema.safeParse({ ...m, arbitrage: { ...arbitrage, counts: { fits: -1 } } }).success).toBe(false);
    // Without them (hand-built snapshots) the fields are simply absent.
    expect('arbitrage' in surfaceToMessage(surface, curve.points, false)).toBe(false);
  });

  it('round-trips forward curves and funding points', () => {
    const cm = forwardCurveToMessage(curve);
    expect(ForwardCurveMessageSchema.safeParse(cm).success).toBe(true);
    const cb = forwardCurveFromMessage(ForwardCurveMessageSchema.parse(JSON.parse(JSON.stringify(cm))));
    expect(cb.points).toEqual(curve.points);
    for (const T of [0, 0.01, 0.1, 1]) expect(cb.curve.forward(T)).toBe(curve.curve.forward(T));

    const p = fundingPoint(1_767_254_400, -2.5e-6);
    const fm = fundingToMessage(p);
    expect(fm).toEqual({ schemaVersion: 1, source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', interest: -2.5e-6, timestamp: 1_767_254_400, baseCurrency: 'BTC', quoteCurrency: 'USD', intervalHours: 1 });
    expect(messageToFunding(FundingUpdateMessageSchema.parse(JSON.parse(JSON.stringify(fm))))).toEqual(p);
    expect(FundingUpdateMessageSchema.safeParse({ ...fm, interest: '0.1' }).success).toBe(false);
  });

  it('exports open JSON Schemas (draft 2020-12) with the required fields', () => {
    const s = eventJsonSchemas() as Record<string, { $schema: string; required: string[]; additionalProperties?: unknown }>;
    expect(s['surface-snapshots']!.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(s['surface-snapshots']!.required).toEqual(expect.arrayContaining(['schemaVersion', 'observationTimestamp', 'spot', 'forwardCurve', 'expiries', 'inputCount']));
    expect(s['funding-updates']!.required).toEqual(['schemaVersion', 'source', 'instrumentId', 'interest', 'timestamp', 'baseCurrency', 'quoteCurrency', 'intervalHours']);
    expect(s['forward-curves']!.additionalProperties).toBeUndefined();
  });

  it('docs/events.md holds the current generated schemas (npx tsx scripts/gen-events-doc.ts)', () => {
    const doc = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8');
    expect(replaceGeneratedSection(doc, renderEventSchemasSection())).toBe(doc);
    expect(doc).toContain(JSON.stringify(eventJsonSchemas()['funding-updates'], null, 2));
  });
});
