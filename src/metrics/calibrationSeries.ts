/**
 * The calibration series of {@link ServiceMetrics} (src/metrics/serviceMetrics.ts): every surface written to the
 * cache observes its calibration duration, arbitrage repairs, rejections and violations and its quality warnings;
 * every chain calibration (streams/pipeline.ts `onCalibrated`) its kind, slice work and the expiries it left out.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { QUALITY_WARNING_PREFIX, type SurfaceSnapshot } from '../cache/snapshot.js';
import type { CalibrationResult } from '../cache/snapshotBuilder.js';
import { pairLabel } from '../domain/markets.js';
import { cumulativeCounter, type CumulativeCounts } from './cumulativeCounts.js';

/** Calibration duration buckets, seconds (a fit takes ~5 ms to ~2 s). */
const CALIBRATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * A short, bounded label for why calibration left an expiry out (src/quant/chain/chainFit.ts `skipped[].reason`):
 * `fit-failed` (the model fit was rejected), `near-expiry`, `no-quotes`, or `other`.
 */
export function skipReasonLabel(reason: string): string {
  if (reason.startsWith('fit failed')) return 'fit-failed';
  if (reason.includes('within the hour')) return 'near-expiry';
  if (reason.includes('no usable')) return 'no-quotes';
  return 'other';
}

/** True when a slice's fit `method` text says an arbitrage (butterfly/calendar density) penalty repaired it. */
export function isRepairedFit(method: string): boolean {
  return /penalty/i.test(method) && !/penalty failed/i.test(method);
}

/**
 * The optional no-arbitrage status a snapshot may carry (src/cache/snapshot.ts SurfaceArbitrage, issue 4),
 * read structurally so that snapshots without it stay valid.
 */
interface ArbitrageCountsLike {
  readonly constrainedRefits?: number;
  readonly calendarRepaired?: number;
  readonly keptPrevious?: number;
  readonly dropped?: number;
  readonly rejected?: number;
}

/** The (source, pair, model) labels of a surface's series. */
type SurfaceLabels = { source: string; pair: string; model: string };

/** The calibration series, and what observes them. */
export class CalibrationSeries {
  private readonly calibrationDuration: Histogram<'source' | 'pair' | 'model'>;
  private readonly calibrations: Counter<'source' | 'pair' | 'kind'>;
  private readonly sliceFits: Counter<'source' | 'pair' | 'model' | 'outcome'>;
  private readonly repairs: Counter<'source' | 'pair' | 'model' | 'kind'>;
  private readonly rejections: Counter<'source' | 'pair' | 'model' | 'outcome'>;
  private readonly violations: Counter<'source' | 'pair' | 'model'>;
  private readonly qualityWarned: Gauge<'source' | 'pair' | 'model'>;
  private readonly qualityWarnings: Counter<'source' | 'pair' | 'model' | 'kind'>;
  private readonly skipped: Counter<'source' | 'pair' | 'reason'>;

  /**
   * @param poolStats the calibration pool's counters (streams/calibrationPool.ts PoolStats), read at scrape time;
   *   absent: no volsurf_calibration_yields_total series (an API replica fits nothing)
   */
  constructor(
    registry: Registry,
    private readonly counts: CumulativeCounts,
    poolStats?: () => { readonly yielded: number },
  ) {
    const registers = [registry];
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Counter<L>({ name, help, labelNames, registers });
    const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Gauge<L>({ name, help, labelNames, registers });
    this.calibrationDuration = new Histogram({
      name: 'volsurf_calibration_duration_seconds',
      help: 'Wall-clock duration of one surface calibration, per (source, pair, model)',
      labelNames: ['source', 'pair', 'model'],
      buckets: CALIBRATION_BUCKETS,
      registers,
    });
    this.calibrations = counter('volsurf_calibrations_total', 'Chain recalibrations published, per (source, pair) and kind: regular (throttled, every changed expiry) or urgent (a mark moved by at least CALIBRATION_URGENT_VOL_PTS: only those expiries, at once)', ['source', 'pair', 'kind']);
    this.sliceFits = counter('volsurf_slice_fits_total', 'Expiry slices per (source, pair, model) handled by the chain fits, by outcome: refitted (the model calibration ran), confirmed (a refit would move the served smile by less than the tracking tolerance, max(0.05 vol pt, 10 % of the half-spread): the last fit carried, no refit), deferred (an urgent partial fit left it for the next regular one); the refits of wing repairs under the next expiry are not counted', ['source', 'pair', 'model', 'outcome']);
    const yields = {
      name: 'volsurf_calibration_yields_total',
      help: 'Regular incremental chain fits that yielded their calibration worker at a slice boundary to an urgent or reconnect fit queued behind them (asked again at once; the slices they refitted are kept)',
      key: 'yields',
    };
    if (poolStats) cumulativeCounter(registry, counts, yields, () => poolStats().yielded);
    this.repairs = counter('volsurf_arbitrage_repairs_total', 'Expiry fits whose arbitrage was repaired before publication: kind constrained-refit (butterfly/calendar penalty refit) or calendar-envelope', ['source', 'pair', 'model', 'kind']);
    this.rejections = counter('volsurf_arbitrage_rejections_total', 'Expiry fits rejected for arbitrage no refit removed: outcome kept-previous (the last good slice served) or dropped (expiry left out)', ['source', 'pair', 'model', 'outcome']);
    this.violations = counter('volsurf_arbitrage_violations_total', 'Expiry fits published with a remaining butterfly violation (butterflyFree false, reported, not hidden)', ['source', 'pair', 'model']);
    this.qualityWarned = gauge('volsurf_fit_quality_warned_expiries', 'Expiries of the newest surface whose served fit carries a quality warning (ATM error > 1 vol pt or an error > 3 vol pts within 25-delta, issue 11), whatever their RMSE', ['source', 'pair', 'model']);
    this.qualityWarnings = counter('volsurf_fit_quality_warnings_total', 'Quality warnings of published expiry fits, by kind (atm: ATM error > 1 vol pt; delta25: error > 3 vol pts at a quote within 25-delta)', ['source', 'pair', 'model', 'kind']);
    this.skipped = counter('volsurf_calibration_rejected_expiries_total', 'Expiries left out of a calibration, by reason (fit-failed = the fit was rejected; near-expiry; no-quotes)', ['source', 'pair', 'reason']);
  }

  /** Record one chain calibration (streams/pipeline.ts onCalibrated): its kind, slice work, expiries left out by reason. */
  observeCalibration(r: CalibrationResult): void {
    const pair = pairLabel(r.pair);
    this.calibrations.inc({ source: r.source, pair, kind: r.partial ? 'urgent' : 'regular' });
    for (const [model, w] of Object.entries(r.sliceWork ?? {})) {
      if (!w) continue;
      this.sliceFits.inc({ source: r.source, pair, model, outcome: 'refitted' }, w.refitted);
      this.sliceFits.inc({ source: r.source, pair, model, outcome: 'confirmed' }, w.confirmed);
      this.sliceFits.inc({ source: r.source, pair, model, outcome: 'deferred' }, w.deferred);
    }
    for (const sk of r.skipped) this.skipped.inc({ source: r.source, pair, reason: skipReasonLabel(sk.reason) });
  }

  /** Record one surface written to the cache: duration, butterfly violations, quality warnings, arbitrage repairs and rejections. */
  observeSurface(s: SurfaceSnapshot): void {
    const labels = { source: s.source, pair: pairLabel(s.pair), model: s.model };
    this.calibrationDuration.observe(labels, s.calibrationMs / 1000);
    let violating = 0;
    for (const sl of s.slices) if (!sl.fit.butterflyFree) violating++;
    // inc(0) creates the series, so a scrape shows 0 rather than nothing
    this.violations.inc(labels, violating);
    this.observeQualityWarnings(s, labels);
    this.observeArbitrage(s, labels);
  }

  /** The expiries whose served fit carries a quality warning, and the warnings by kind (ATM, 25-delta). */
  private observeQualityWarnings(s: SurfaceSnapshot, labels: SurfaceLabels): void {
    let warned = 0;
    let atm = 0;
    let d25 = 0;
    for (const sl of s.slices) {
      const q = (sl.fit.warnings ?? []).filter((w) => w.startsWith(QUALITY_WARNING_PREFIX));
      if (q.length > 0) warned++;
      for (const w of q) {
        if (w.includes('ATM error')) atm++;
        else d25++;
      }
    }
    this.qualityWarned.set(labels, warned);
    this.qualityWarnings.inc({ ...labels, kind: 'atm' }, atm);
    this.qualityWarnings.inc({ ...labels, kind: 'delta25' }, d25);
  }

  /**
   * Arbitrage repairs and rejections: the increase of the snapshot's cumulative `arbitrage.counts` when it carries
   * them; else a repair is a slice whose fit `method` says a penalty was applied, and no rejection is counted.
   */
  private observeArbitrage(s: SurfaceSnapshot, labels: SurfaceLabels): void {
    const key = `${labels.source}:${labels.pair}:${labels.model}`;
    const counts = (s as SurfaceSnapshot & { arbitrage?: { counts?: ArbitrageCountsLike } }).arbitrage?.counts;
    if (counts) {
      // cumulative counts of the calibrator: add their increase
      this.counts.add(this.repairs, `rep:${key}:refit`, { ...labels, kind: 'constrained-refit' }, counts.constrainedRefits ?? 0);
      this.counts.add(this.repairs, `rep:${key}:cal`, { ...labels, kind: 'calendar-envelope' }, counts.calendarRepaired ?? 0);
      this.counts.add(this.rejections, `rej:${key}:kept`, { ...labels, outcome: 'kept-previous' }, counts.keptPrevious ?? 0);
      this.counts.add(this.rejections, `rej:${key}:drop`, { ...labels, outcome: 'dropped' }, counts.dropped ?? 0);
    } else {
      let repaired = 0;
      for (const sl of s.slices) if (isRepairedFit(sl.fit.method)) repaired++;
      this.repairs.inc({ ...labels, kind: 'constrained-refit' }, repaired);
      this.rejections.inc({ ...labels, outcome: 'kept-previous' }, 0);
      this.rejections.inc({ ...labels, outcome: 'dropped' }, 0);
    }
  }
}
