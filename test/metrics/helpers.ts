/**
 * Helpers of the metrics tests: a hand-built SVI surface snapshot (raw SVI slices on a VolSurface, a
 * ForwardCurve), a fake feed whose stats the test sets, and a Prometheus text parser.
 */
import { Subject } from 'rxjs';
import type { FeedStats, MarketFeed } from '../../src/domain/feeds.js';
import type { ExpirySlice, ForwardPoint, SurfaceSnapshot, VolatilityModel } from '../../src/cache/snapshot.js';
import type { MarketEvent } from '../../src/domain/events.js';
import type { Pair, Source } from '../../src/domain/markets.js';
import { ForwardCurve } from '../../src/quant/forwardCurve.js';
import { VolSurface } from '../../src/quant/surface.js';
import type { SviParams } from '../../src/quant/svi.js';

const YEAR_S = 365 * 86400;

/** Options of {@link makeSurface}. */
export interface SurfaceSpec {
  source?: Source;
  pair?: Pair;
  model?: VolatilityModel;
  observationTimestamp?: number;
  sequence?: number;
  calibrationMs?: number;
  /** Per slice: fit method text, RMSE and butterflyFree. */
  fits?: Array<{ method?: string; rmseVolPts?: number; butterflyFree?: boolean; warnings?: string[] }>;
  spot?: number;
  params?: SviParams;
}

/**
 * A surface with one slice per `fits` entry (7, 30, 90... days), raw SVI `params` (default a smile with
 * skew), forwards 0.2 % apart, three quotes per slice.
 */
export function makeSurface(spec: SurfaceSpec = {}): SurfaceSnapshot {
  const obs = spec.observationTimestamp ?? 1_790_000_000;
  const spot = spec.spot ?? 100_000;
  const fits = spec.fits ?? [{}, {}];
  const days = [7, 30, 90, 180, 365];
  const points: ForwardPoint[] = fits.map((_, i) => {
    const e = Math.floor(obs / 86400) * 86400 + days[i]! * 86400 + 8 * 3600;
    return { expirationTimestamp: e, T: (e - obs) / YEAR_S, forward: spot * (1 + 0.002 * (i + 1)), origin: 'option-underlying' as const };
  });
  const params: SviParams = spec.params ?? { a: 0.01, b: 0.1, rho: -0.3, m: 0.01, sigma: 0.2 };
  const slices: ExpirySlice[] = points.map((p, i) => ({
    expirationTimestamp: p.expirationTimestamp,
    T: p.T,
    forward: p.forward,
    params: { ...params, a: params.a * p.T * 10 },
    fit: {
      rmseVolPts: fits[i]!.rmseVolPts ?? 0.1 * (i + 1),
      maxErrorVolPts: 0.5,
      quotesUsed: 3,
      butterflyFree: fits[i]!.butterflyFree ?? true,
      method: fits[i]!.method ?? 'full: vega weighting',
      calibrationMs: spec.calibrationMs ?? 12,
      ...(fits[i]!.warnings ? { warnings: fits[i]!.warnings } : {}),
    },
    quotes: [0.9, 1, 1.1].map((m) => ({
      instrument: `X-${i}-${m}`,
      strike: Math.round(p.forward * m),
      optionType: m < 1 ? ('P' as const) : ('C' as const),
      k: Math.log(Math.round(p.forward * m) / p.forward),
      markIv: 0.5,
      bidIv: 0.49,
      askIv: 0.51,
    })),
  }));
  return {
    source: spec.source ?? 'DERIBIT',
    pair: spec.pair ?? { base: 'BTC', quote: 'USD' },
    model: spec.model ?? 'SVI',
    observationTimestamp: obs,
    spot,
    slices,
    surface: new VolSurface(slices.map((s) => ({ expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, params: s.params as unknown as SviParams }))),
    forwardCurve: new ForwardCurve(spot, points),
    calibrationMs: spec.calibrationMs ?? 12,
    sequence: spec.sequence ?? 1,
  };
}

/** A feed whose stats the test sets. */
export class FakeFeed implements MarketFeed {
  readonly events$ = new Subject<MarketEvent>();
  current: FeedStats;
  constructor(readonly source: Source) {
    this.current = { source, connected: false, messages: 0, dropped: {}, reconnects: 0, lastMessageAt: null };
  }
  set(s: Partial<FeedStats>): void {
    this.current = { ...this.current, ...s };
  }
  start(): void {}
  async stop(): Promise<void> {}
  stats(): FeedStats {
    return this.current;
  }
}

/** One sample of a Prometheus text exposition. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parse the Prometheus text format (version 0.0.4) into samples; HELP/TYPE lines into `help`. */
export function parseProm(text: string): { samples: PromSample[]; help: Map<string, string>; types: Map<string, string> } {
  const samples: PromSample[] = [];
  const help = new Map<string, string>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ')) {
      const [name, ...rest] = line.slice(7).split(' ');
      help.set(name!, rest.join(' '));
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) for (const lm of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]!] = lm[2]!.replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    const v = m[4]!;
    samples.push({ name: m[1]!, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  return { samples, help, types };
}

/** Samples of `name` whose labels include `labels`. */
export function pick(samples: readonly PromSample[], name: string, labels: Record<string, string> = {}): PromSample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The single sample of `name` with `labels` (throws when not exactly one). */
export function one(samples: readonly PromSample[], name: string, labels: Record<string, string> = {}): number {
  const xs = pick(samples, name, labels);
  if (xs.length !== 1) throw new Error(`expected one ${name}${JSON.stringify(labels)}, got ${xs.length}`);
  return xs[0]!.value;
}

/** Sum of the samples of `name` with `labels`. */
export function sum(samples: readonly PromSample[], name: string, labels: Record<string, string> = {}): number {
  return pick(samples, name, labels).reduce((a, s) => a + s.value, 0);
}
