/**
 * The history store over a timeline (issue 24 "resolution and size you can reason about"): three hours of surfaces
 * of a real Deribit chain, one every 15 s (the chain's SVI surface carried along the clock, its level drifting),
 * recorded, then read as series and compacted. Asserted against the snapshots themselves: the series points are
 * the first surface of each interval with the iVSummary figures of that surface; after compaction with
 * HISTORY_FULL_H = 1 every surface of the last hour is still answered exactly, and before it exactly the first of
 * each HISTORY_BUCKET_S; retention deletes what is older; every kept row still rebuilds.
 */
import { describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import { summarizeSurface } from '../../src/cache/history.js';
import { surfaceDocument } from '../../src/api/documents.js';
import { surfaceToMessage } from '../../src/kafka/schemas.js';
import { surfaceFromMessage } from '../../src/kafka/rebuild.js';
import { HistoryStore } from '../../src/history/store.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { compact } from '../../src/history/compaction.js';
import { ivSummarySeriesSql, keptRange, surfaceAsOf, surfaceIdAsOf } from '../../src/history/reads.js';
import { Markets } from '../../src/api/asOf.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';
import { SECONDS_PER_YEAR } from '../../src/domain/time.js';
import { realChainCache } from '../helpers/realChainCache.js';

const STEP_S = 15;
const HOURS = 3;
const BUCKET_S = 60;

describe('history timeline', () => {
  const rc = realChainCache();
  const svi = rc.cache.getSurface('DERIBIT', rc.pair, 'SVI')!;
  const curve = rc.cache.getForwardCurve('DERIBIT', rc.pair)!;
  const t0 = Math.ceil(svi.observationTimestamp / 3600) * 3600; // on an hour, so buckets are easy to count
  const n = (HOURS * 3600) / STEP_S;
  /** Surface i: the chain's SVI surface at t0 + 15 s i, T shortened accordingly, ATM total variance up by i 1e-6. */
  const snaps: SurfaceSnapshot[] = Array.from({ length: n }, (_, i) => {
    const m = surfaceToMessage(svi, curve.points, false);
    const dt = (t0 - svi.observationTimestamp + i * STEP_S) / SECONDS_PER_YEAR;
    return surfaceFromMessage({
      ...m,
      observationTimestamp: t0 + i * STEP_S,
      sequence: i + 1,
      forwardCurve: m.forwardCurve.map((p) => ({ ...p, T: p.T - dt })),
      expiries: m.expiries
        .filter((e) => e.T - dt > 1 / 365)
        .map((e) => ({ ...e, T: e.T - dt, parameters: { ...e.parameters, a: e.parameters.a! + i * 1e-6 } })),
    });
  });
  const ref = { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' };

  /**
   * A store that recorded snaps[i] for i in `order`, each published (service clock) at `published[i]`; and the
   * sequence of the surface the as-of rule finds at a time.
   */
  async function recordPublished(order: readonly number[], published: readonly number[]) {
    const store = await HistoryStore.open(':memory:');
    const clock = { t: snaps[0]!.observationTimestamp };
    const cache = new MarketCache({ now: () => clock.t }, 30, [{ source: 'DERIBIT', pair: rc.pair }]);
    const rec = new HistoryRecorder({ store, cache, bucketS: BUCKET_S, fullH: 24, flushMs: 60_000 });
    for (const i of order) {
      clock.t = published[i]!;
      cache.putSurface(snaps[i]!);
    }
    await rec.close();
    const at = async (asOf: number) => (await surfaceIdAsOf(store, ref, asOf, 30))?.sequence ?? null;
    return { store, at };
  }

  it('keeps every surface, series of the first per interval, then compacts to the promised resolution', async () => {
    const store = await HistoryStore.open(':memory:');
    const cache = new MarketCache({ now: () => t0 + HOURS * 3600 }, 30);
    const rec = new HistoryRecorder({ store, cache, bucketS: BUCKET_S, fullH: 1, flushMs: 60_000 });
    // a past recorded after the fact: published at its observation time
    for (const s of snaps) rec.recordPast(s);
    await rec.close();

    // series at 5 minutes: one point per interval, the first surface in it, with its own iVSummary figures
    const rows = await store.query(ivSummarySeriesSql(ref, t0, t0 + HOURS * 3600, 300, '1M'));
    expect(rows).toHaveLength((HOURS * 3600) / 300);
    rows.forEach((r, j) => {
      const s = snaps[(j * 300) / STEP_S]!;
      expect(r.observation_timestamp).toBe(s.observationTimestamp);
      const fig = summarizeSurface(s).constMat.find((e) => e.constMat === '1M')!;
      expect([r.atm_vol, r.delta25_skew, r.delta10_skew, r.delta25_bfly, r.delta10_bfly]).toEqual([fig.atmVol, fig.delta25Skew, fig.delta10Skew, fig.delta25Bfly, fig.delta10Bfly]);
    });
    expect(await store.query(ivSummarySeriesSql(ref, t0, t0 + HOURS * 3600, 60, null))).toHaveLength(((HOURS * 3600) / 60) * 7);

    const before = Number((await store.query('SELECT count(*) AS n FROM surfaces'))[0]!.n);
    expect(before).toBe(n);
    const nowS = t0 + HOURS * 3600;
    const r = await compact(store, { nowS, fullH: 1, retentionD: 30 });
    const cut = nowS - 3600;
    const kept = snaps.filter((s) => s.observationTimestamp >= cut || s.observationTimestamp % BUCKET_S === 0);
    expect(r.surfaces).toBe(n - kept.length);
    expect(r.fits).toBeGreaterThan(0);
    expect(Number((await store.query('SELECT count(*) AS n FROM surfaces'))[0]!.n)).toBe(kept.length);

    // as of any instant: the last hour exactly; before it, the bucket's surface (lookback: stale limit + bucket)
    for (const i of [0, 3, 5, 100, 239, 240, 241, 480, 600, 719]) {
      const s = snaps[i]!;
      const asOf = s.observationTimestamp + 7;
      const want = s.observationTimestamp >= cut ? s : snaps[Math.floor(i / (BUCKET_S / STEP_S)) * (BUCKET_S / STEP_S)]!;
      const m = await surfaceAsOf(store, ref, asOf, 30 + BUCKET_S);
      expect(m?.observationTimestamp, `asOf ${asOf}`).toBe(want.observationTimestamp);
      expect(surfaceDocument(surfaceFromMessage(m!))).toEqual(surfaceDocument(want));
    }
    // every kept row still rebuilds (no fit or curve it refers to was deleted)
    const unrebuildable = await store.query(
      `SELECT count(*) AS n FROM surfaces s WHERE EXISTS (SELECT 1 FROM unnest(s.fit_ids) u(id) WHERE id NOT IN (SELECT fit_id FROM fits))
         OR NOT EXISTS (SELECT 1 FROM forward_curves c WHERE c.source = s.source AND c.pair = s.pair AND c.sequence = s.sequence AND c.obs = s.obs)`,
    );
    expect(Number(unrebuildable[0]!.n)).toBe(0);

    // retention: one hour and a half kept at all
    await compact(store, { nowS, fullH: 1, retentionD: 1.5 / 24 });
    const range = (await keptRange(store))!;
    expect(range.from).toBeGreaterThanOrEqual(nowS - 1.5 * 3600);
    expect(range.from).toBeLessThan(nowS - 1.5 * 3600 + BUCKET_S);
    expect(Number((await store.query('SELECT count(*) AS n FROM iv_summary WHERE obs < $1', [nowS - 1.5 * 3600]))[0]!.n)).toBe(0);
    await store.close();
  });

  it('a past recorded while live surfaces flow changes neither tier; live updates already stored are skipped', async () => {
    const store = await HistoryStore.open(':memory:');
    const live = snaps.slice(480); // the last hour: live
    const past = snaps.slice(0, 240); // an hour before: a rebuild recorded meanwhile
    const clock = { t: live[0]!.observationTimestamp };
    const cache = new MarketCache({ now: () => clock.t }, 30);
    // the store held the live stream's first minute already (a replica restarting re-reads it)
    const storedUpTo = new Map([['DERIBIT:BTC/USD:SVI', live[3]!.observationTimestamp]]);
    const rec = new HistoryRecorder({ store, cache, bucketS: BUCKET_S, fullH: 1, flushMs: 60_000, storedUpTo });
    for (let i = 0; i < live.length; i++) {
      clock.t = live[i]!.observationTimestamp + 0.1;
      cache.putSurface(live[i]!);
      rec.recordPast(past[i]!);
    }
    await rec.close();
    expect(rec.stats.skipped).toBe(4);
    const tiers = await store.query('SELECT obs, tier, published FROM surfaces ORDER BY obs');
    expect(tiers).toHaveLength(past.length + live.length - 4);
    // tier 1 exactly for the first surface of each minute, in both streams
    for (const r of tiers) expect(r.tier, `obs ${String(r.obs)}`).toBe((r.obs as number) % BUCKET_S === 0 ? 1 : 0);
    // live rows are published at the service clock, past ones at their observation time
    for (const r of tiers) expect(r.published).toBe((r.obs as number) >= live[0]!.observationTimestamp ? (r.obs as number) + 0.1 : r.obs);
    await store.close();
  });

  it('as of a time: the latest PUBLISHED at or before it (ties: the higher sequence), one read per stored surface', async () => {
    // publication delays (s after observation): surface 2 is published late, after surface 3; 4 and 5 at the same time
    const delay = [0.1, 0.1, 20, 0.1, 0, 0.1];
    const published = delay.map((d, i) => snaps[i]!.observationTimestamp + d);
    published[4] = published[5]!;
    const { store, at } = await recordPublished([0, 1, 3, 2, 4, 5], published);
    expect(await at(snaps[0]!.observationTimestamp + 0.05)).toBeNull(); // observed, not yet published
    expect(await at(published[0]!)).toBe(1);
    expect(await at(published[1]! + 1)).toBe(2);
    expect(await at(published[3]!)).toBe(4); // 3 observed earlier but not yet published: 4 was served
    expect(await at(published[2]! - 0.001)).toBe(4);
    expect(await at(published[2]!)).toBe(3); // published last: what was served from then on
    expect(await at(published[4]!)).toBe(6); // same publication time: the higher sequence
    // at once (the store's read connections each hold one prepared statement; nothing mixes their bound values)
    const instants = Array.from({ length: 60 }, (_, j) => snaps[0]!.observationTimestamp + j * 1.5);
    const one = [];
    for (const t of instants) one.push(await at(t));
    expect(await Promise.all(instants.map(at))).toEqual(one);
    expect(new Set(one).size).toBeGreaterThan(4);
    // the whole document as read through the identity is the surface as recorded
    expect(surfaceDocument(surfaceFromMessage((await surfaceAsOf(store, ref, published[2]!, 30))!))).toEqual(surfaceDocument(snaps[2]!));

    // Markets: two instants the same surface served share one read and one rebuilt snapshot
    const markets = new Markets(new MarketCache({ now: () => published[5]! + 1 }, 30, [{ source: 'DERIBIT', pair: rc.pair }]), { store });
    const need = [{ source: 'DERIBIT' as const, pair: rc.pair, model: 'SVI' as const }];
    const reads = { n: 0 };
    const query = store.query.bind(store);
    store.query = (sql, params, opts) => {
      if (sql.includes('FROM fits')) reads.n++;
      return query(sql, params, opts);
    };
    const a = (await markets.at(published[0]! + 0.5, need)).getSurface('DERIBIT', rc.pair, 'SVI');
    const b = (await markets.at(published[0]! + 0.7, need)).getSurface('DERIBIT', rc.pair, 'SVI');
    const c = (await markets.at(published[1]! + 0.5, need)).getSurface('DERIBIT', rc.pair, 'SVI');
    expect(a).toBeDefined();
    expect(b).toBe(a);
    expect(c!.sequence).toBe(2);
    expect(reads.n).toBe(2);
    await store.close();
  });

  it("as of a time: a surface whose exchange clock ran ahead of the service's (observed after it was published) is found", async () => {
    // the second surface is stamped 2 s ahead of the service clock that published it
    const published = [0.1, -2, 0.1].map((d, i) => snaps[i]!.observationTimestamp + d);
    const { store, at } = await recordPublished([0, 1, 2], published);
    expect(await at(published[1]! - 0.001)).toBe(1);
    expect(await at(published[1]!)).toBe(2); // served from its publication, although observed 2 s later
    expect(await at(snaps[1]!.observationTimestamp)).toBe(2);
    await store.close();
  });
});
