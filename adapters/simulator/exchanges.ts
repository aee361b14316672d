/**
 * The three simulated exchanges on one shared stochastic market (Deribit, OKX, Bybit; any subset), as the
 * service's simulated mode runs them: in the service's own process (SIMULATOR_PROCESS=inprocess, tests) or in
 * their own child process (adapters/simulator/process.ts, the default). Each listens on 127.0.0.1 and speaks its
 * exchange's real protocol; only the URLs differ from live.
 *
 * Market: `market` when given (e.g. pre-run through the simulated history), else a new one from `seed`. With
 * Deribit, its simulator steps the market every tick and OKX and Bybit share it; without, the first of OKX and
 * Bybit steps it and the other shares it. OKX and Bybit refresh each option 0.5 times per second by default.
 */
import type { Source } from '../../src/domain/markets.js';
import type { Market } from './market.js';
import { startDeribitSimulator, type DeribitSimulator, type DeribitSimulatorOptions } from './deribitServer.js';
import { startOkxSimulator, type OkxSimulator, type OkxSimulatorOptions } from './okxServer.js';
import { startBybitSimulator, type BybitSimulator, type BybitSimulatorOptions } from './bybitServer.js';

/** Options of {@link startSimulatedExchanges}. */
export interface SimulatedExchangesOptions {
  /** Which exchanges to run. */
  readonly sources: readonly Source[];
  /** Market seed (SIM_SEED) when no `market` is given. */
  readonly seed: number;
  /** Simulator clock, Unix ms, of a market made here (ignored with `market`). Default Date.now. */
  readonly clock?: () => number;
  /** The shared market (e.g. pre-run); default a new one from `seed` (or from `deribit.seed`). */
  readonly market?: Market;
  /** Deribit simulator options merged over the defaults (port 0, 127.0.0.1, the shared market). */
  readonly deribit?: Partial<DeribitSimulatorOptions>;
  /** OKX simulator options merged over the defaults. */
  readonly okx?: Partial<OkxSimulatorOptions>;
  /** Bybit simulator options merged over the defaults. */
  readonly bybit?: Partial<BybitSimulatorOptions>;
}

/** Where the running simulated exchanges listen (null for those not run). Plain data: crosses IPC. */
export interface SimulatorEndpoints {
  readonly deribit: { readonly url: string } | null;
  readonly okx: { readonly url: string; readonly restUrl: string } | null;
  readonly bybit: { readonly optionUrl: string; readonly linearUrl: string; readonly restUrl: string } | null;
}

/** The running simulated exchanges (in this process). */
export interface SimulatedExchanges {
  readonly deribit: DeribitSimulator | null;
  readonly okx: OkxSimulator | null;
  readonly bybit: BybitSimulator | null;
  readonly endpoints: SimulatorEndpoints;
  /** Close every simulator. */
  close(): Promise<void>;
}

/** Start the simulated exchanges of `opts.sources` (see the module docstring). */
export async function startSimulatedExchanges(opts: SimulatedExchangesOptions): Promise<SimulatedExchanges> {
  let deribit: DeribitSimulator | null = null;
  let okx: OkxSimulator | null = null;
  let bybit: BybitSimulator | null = null;
  let shared = opts.market;
  let stepped = false;
  const own = (): { market: Market } | { clock?: () => number } => (shared ? { market: shared } : opts.clock ? { clock: opts.clock } : {});
  try {
    if (opts.sources.includes('DERIBIT')) {
      deribit = await startDeribitSimulator({ port: 0, host: '127.0.0.1', seed: opts.seed, ...own(), ...opts.deribit });
      shared = deribit.market;
      stepped = true;
    }
    if (opts.sources.includes('OKX')) {
      okx = await startOkxSimulator({ host: '127.0.0.1', seed: opts.seed, ...own(), stepMarket: !stepped, optionUpdatesPerSecond: 0.5, ...opts.okx });
      shared = okx.market;
      stepped = true;
    }
    if (opts.sources.includes('BYBIT')) {
      bybit = await startBybitSimulator({ host: '127.0.0.1', seed: opts.seed, ...own(), stepMarket: !stepped, optionUpdatesPerSecond: 0.5, ...opts.bybit });
    }
  } catch (err) {
    await Promise.all([deribit?.close(), okx?.close(), bybit?.close()]);
    throw err;
  }
  return {
    deribit,
    okx,
    bybit,
    endpoints: {
      deribit: deribit ? { url: deribit.url } : null,
      okx: okx ? { url: okx.url, restUrl: okx.restUrl } : null,
      bybit: bybit ? { optionUrl: bybit.optionUrl, linearUrl: bybit.linearUrl, restUrl: bybit.restUrl } : null,
    },
    close: async () => {
      await Promise.all([deribit?.close(), okx?.close(), bybit?.close()]);
    },
  };
}
