/**
 * A simulator Market pre-run through a stretch of history (the simulated 24 h history, adapters/simulator/history.ts):
 * built `steps` steps of `stepS` seconds before now from the same seed, stepped to now, then released to the
 * real clock. Deterministic in (seed, startMs, stepS, steps), so the simulator process and the service's twin
 * market (which prints the history) follow exactly the same path.
 */
import { Market } from './market.js';

/** Where a pre-run market starts: its seed, start (Unix ms) and step (seconds). */
export interface PrerunSpec {
  readonly seed: number;
  readonly startMs: number;
  readonly stepS: number;
}

/**
 * The market of `spec` stepped `steps` times from `spec.startMs`, on the clock `clock` (Unix ms) afterwards.
 * @param steps number of market steps (>= 0)
 */
export function prerunMarket(spec: PrerunSpec, steps: number, clock: () => number = Date.now): Market {
  let simMs: number | null = spec.startMs;
  const market = new Market({ seed: spec.seed, clock: () => simMs ?? clock() });
  for (let i = 1; i <= steps; i++) {
    simMs = spec.startMs + i * spec.stepS * 1000;
    market.step(spec.stepS);
  }
  simMs = null;
  return market;
}
