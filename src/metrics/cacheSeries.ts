/**
 * The market cache's series of {@link ServiceMetrics} (src/metrics/serviceMetrics.ts): its writes by type, and at
 * scrape time its surfaces (per-expiry fit RMSE and max error, expiries, sequence, age on the service clock) and
 * forward curves (age).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { MarketCache } from '../cache/marketCache.js';
import type { SurfaceSnapshot } from '../cache/snapshot.js';
import type { Clock } from '../domain/clock.js';
import { registerPairAgeGauge } from './feedSeries.js';
import { pairLabel } from '../domain/markets.js';

/** `2026-12-25` of an expiry (Unix seconds, UTC): the expiry label of per-expiry series. */
export function expiryLabel(expirationTimestamp: number): string {
  return new Date(expirationTimestamp * 1000).toISOString().slice(0, 10);
}

/** The (source, pair, model) labels of a cached surface's series. */
const surfaceLabels = (s: SurfaceSnapshot) => ({ source: s.source, pair: pairLabel(s.pair), model: s.model });

/** The cache's write counter, and the scrape-time series of what it holds. */
export class CacheSeries {
  private readonly cacheUpdates: Counter<'type'>;

  /** @param clock the service clock (surface and forward-curve ages) */
  constructor(registry: Registry, cache: MarketCache, clock: Clock) {
    this.cacheUpdates = new Counter({
      name: 'volsurf_cache_updates_total',
      help: 'Writes to the market cache, by type (surface, forwardCurve, funding)',
      labelNames: ['type'],
      registers: [registry],
    });
    registerFitErrorSeries(registry, cache);
    registerSurfaceStateSeries(registry, cache, clock);
  }

  /** Count one write to the cache, by its type. */
  observeUpdate(type: string): void {
    this.cacheUpdates.inc({ type });
  }
}

/** Per-expiry fit errors of the cached surfaces: RMSE and the largest absolute error against the mark IVs. */
function registerFitErrorSeries(registry: Registry, cache: MarketCache): void {
  const perExpiry = (name: string, help: string, error: (fit: SurfaceSnapshot['slices'][number]['fit']) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['source', 'pair', 'model', 'expiry'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of cache.allSurfaces()) for (const sl of s.slices) this.set({ ...surfaceLabels(s), expiry: expiryLabel(sl.expirationTimestamp) }, error(sl.fit));
      },
    });
  perExpiry('volsurf_fit_rmse_vol_points', 'RMSE of the fitted smile against the mark IVs of one expiry, vol points (0.01), of the cached surface', (fit) => fit.rmseVolPts);
  perExpiry('volsurf_fit_max_error_vol_points', 'Largest absolute error of the fitted smile against the mark IVs of one expiry, vol points', (fit) => fit.maxErrorVolPts);
}

/** The cached surfaces' expiries, sequence numbers and ages, and the cached forward curves' ages. */
function registerSurfaceStateSeries(registry: Registry, cache: MarketCache, clock: Clock): void {
  const registers = [registry];
  new Gauge({
    name: 'volsurf_surface_expiries',
    help: 'Expiries in the cached surface',
    labelNames: ['source', 'pair', 'model'],
    registers,
    collect() {
      this.reset();
      for (const s of cache.allSurfaces()) this.set(surfaceLabels(s), s.slices.length);
    },
  });
  new Gauge({
    name: 'volsurf_surface_sequence',
    help: 'Sequence number of the cached surface (increments with every recalibration)',
    labelNames: ['source', 'pair', 'model'],
    registers,
    collect() {
      this.reset();
      for (const s of cache.allSurfaces()) this.set(surfaceLabels(s), s.sequence);
    },
  });
  new Gauge({
    name: 'volsurf_snapshot_age_seconds',
    help: 'Age of the cached surface: service-clock now minus its observationTimestamp, seconds',
    labelNames: ['source', 'pair', 'model'],
    registers,
    collect() {
      this.reset();
      const now = clock.now();
      for (const s of cache.allSurfaces()) this.set(surfaceLabels(s), Math.max(0, now - s.observationTimestamp));
    },
  });
  const curveAge = { name: 'volsurf_forward_curve_age_seconds', help: 'Age of the cached forward curve: service-clock now minus its observationTimestamp, seconds' };
  registerPairAgeGauge(registry, { cache, clock }, curveAge, (p) => cache.getForwardCurve(p.source, p.pair)?.observationTimestamp);
}
