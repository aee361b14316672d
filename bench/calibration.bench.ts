/**
 * Benchmark: the three-model chain calibration (src/quant/chain/chainFit.ts fitChain) per surface, on
 * - the real recorded Deribit BTC chain of 2026-05-26 19:27Z (878 options, 11 expiries; data/replay), and
 * - the simulated Deribit BTC chain (seed 42, printed by the simulator's own ticker builder, 24 h pre-run:
 *   streams/simulatedHistory.ts), as the service calibrates them.
 * Prints, per model: calibration time per surface (median and max of `runs` warm runs) and the fit errors
 * (RMSE per expiry over all quotes and between each smile's 10-delta strikes: median and max, vol points).
 * Asserts nothing (speed belongs here, not in tests).
 *
 * Run: npx tsx bench/calibration.bench.ts [runs]
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { normalizeDeribit } from '../adapters/deribit/normalize.js';
import { ChainState, type ChainView } from '../streams/chainState.js';
import { fitChain } from '../src/quant/chain/chainFit.js';
import type { ChainFit } from '../src/domain/chainFit.js';
import { prepareSimulatedHistory, TwinMarketPrinter } from '../adapters/simulator/history.js';

const runs = Number(process.argv[2] ?? 5);

function realChain(): ChainView {
  const st = new ChainState('DERIBIT', { base: 'BTC', quote: 'USD' });
  for (const line of readFileSync(new URL('../data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = normalizeDeribit(JSON.parse(line), 0);
    if (!r.ok) continue;
    for (const e of r.events) if (e.kind === 'option' || e.kind === 'future' || e.kind === 'index') st.apply(e);
  }
  return st.view();
}

/** When the simulated chain is printed: Friday 2026-11-27 12:00 UTC (Unix ms), a day with every expiry kind listed. */
const SIM_CHAIN_TIME_MS = Date.UTC(2026, 10, 27, 12, 0, 0);

function simulatedChain(): ChainView {
  // the simulator's BTC chain as printed by the twin of a 24 h pre-run market (streams/simulatedHistory.ts) at a
  // fixed time, so that the listed expiries, and with them the figures, do not depend on the day the bench runs
  const now = SIM_CHAIN_TIME_MS;
  const h = prepareSimulatedHistory({ seed: 42, hours: 24, clock: () => now });
  const steps = Math.round((now - h.startMs) / 1000 / h.spec.stepS);
  return new TwinMarketPrinter(h.spec).viewsAt(steps).find((v) => v.pair.base === 'BTC')!;
}

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))]!;
};

function report(name: string, view: ChainView): void {
  fitChain(view); // warm-up (JIT)
  const times: Record<string, number[]> = {};
  let last: ChainFit | null = null;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    last = fitChain(view);
    (times.total ??= []).push(performance.now() - t);
    for (const m of last.models) (times[m.model] ??= []).push(m.calibrationMs);
  }
  const opts = view.options.length;
  console.log(`\n${name}: ${opts} options, ${last!.models[0]!.slices.length} fitted expiries, ${runs} runs`);
  console.log('model        ms/surface (median, max)   RMSE all quotes (median, max)   RMSE 10D-10D (median, max)   statuses');
  for (const m of last!.models) {
    const rm = m.slices.map((s) => s.fit.rmseVolPts);
    const r10 = m.slices.map((s) => s.fit.rmse10DeltaVolPts ?? Number.NaN).filter(Number.isFinite);
    const st = m.slices.map((s) => s.fit.status![0]).join('');
    console.log(
      `${m.model.padEnd(12)} ${q(times[m.model]!, 0.5).toFixed(1).padStart(8)} ${Math.max(...times[m.model]!).toFixed(1).padStart(8)}          ${q(rm, 0.5).toFixed(2).padStart(6)} ${Math.max(...rm).toFixed(2).padStart(7)}                  ${q(r10, 0.5).toFixed(2).padStart(6)} ${Math.max(...r10).toFixed(2).padStart(6)}           ${st}`,
    );
  }
  console.log(`all three:   ${q(times.total!, 0.5).toFixed(1)} ms median per recalibration`);
}

console.log(`node ${process.version}, ${cpus().length} cpus (${cpus()[0]?.model}), load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
report('real Deribit BTC 2026-05-26 19:27Z', realChain());
report('simulated Deribit BTC (seed 42)', simulatedChain());
