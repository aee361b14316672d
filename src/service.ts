/**
 * Composition of the service: market source -> adapters -> streams -> cache -> REST.
 *
 * `simulated` (default): the embedded simulators of the configured exchanges (SOURCES, default Deribit,
 * OKX and Bybit, one shared stochastic market) are started in-process on 127.0.0.1 and the real adapters
 * connect to them over real sockets (only the URLs differ from `live`).
 * `live`: the real exchanges' WebSockets and REST. `replay`: recorded JSON Lines files (one per exchange)
 * through the same normalizers, with the messages' own time as the service clock. OKX and Bybit: ./marketSources.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { merge, type Observable } from 'rxjs';
import { followedPairs, followedSources, type Config } from './config.js';
import { MarketClock, systemClock, type Clock } from './domain/clock.js';
import type { MarketEvent } from './domain/events.js';
import type { Pair, Source } from './domain/markets.js';
import { MarketCache } from './cache/marketCache.js';
import { buildApp } from './api/app.js';
import { installMetrics } from './api/plugins/metrics.js';
import { Monitoring } from './metrics/monitoring.js';
import { securityOptionsFromConfig } from './api/plugins/securityConfig.js';
import { startPipelines } from '../streams/pipeline.js';
import { CalibrationWorker } from '../streams/calibrationPool.js';
import { prepareSimulatedHistory, type SimulatedHistory } from '../streams/simulatedHistory.js';
import { surfaceHistoryFor } from './cache/history.js';
import type { MarketFeed } from '../adapters/types.js';
import { DeribitFeed } from '../adapters/deribit/feed.js';
import type { ReplayFeed } from '../adapters/replay/replayFeed.js';
import { startDeribitSimulator } from '../adapters/simulator/deribitServer.js';
import { buildHealthApp, startKafkaRole, type KafkaWiring } from './publish/wiring.js';
import { liveOkxBybitFeeds, replayFeeds, startSimulatedOkxBybit, type OkxBybitOverrides, type SimulatedOkxBybit } from './marketSources.js';

/** A running service. */
export interface RunningService {
  readonly app: FastifyInstance;
  readonly cache: MarketCache;
  readonly clock: Clock;
  readonly feeds: readonly MarketFeed[];
  /** Base URL of the REST API, e.g. http://127.0.0.1:8080 */
  readonly url: string;
  /** URL of the embedded simulator (simulated mode), for tests and logs. */
  readonly simulatorUrl: string | null;
  /** Fault hooks of the embedded simulator (simulated mode). */
  readonly simulator: Awaited<ReturnType<typeof startDeribitSimulator>> | null;
  /** The embedded OKX and Bybit simulators (simulated mode; null when not configured). */
  readonly simulators: { readonly okx: SimulatedOkxBybit['okx']; readonly bybit: SimulatedOkxBybit['bybit'] };
  /** Resolves when the replay file has been read completely (replay mode). */
  readonly replayDone: Promise<void> | null;
  /** True when every chain state received so far has been calibrated at its latest version. */
  settled(): boolean;
  /** Kafka publisher (ROLE all/calibrator with KAFKA_BROKERS) or replica (ROLE=api); docs/events.md. */
  readonly kafka: KafkaWiring;
  /** Prometheus metrics, feed health and the dashboard's data (src/metrics/monitoring.ts). */
  readonly monitoring: Monitoring;
  /** Graceful stop: HTTP first, then feeds, then the simulator. */
  stop(): Promise<void>;
}

/** Test and embedding overrides. */
export interface ServiceOverrides extends OkxBybitOverrides {
  /** Simulator port (default 0 = any free port). */
  readonly simulatorPort?: number;
  /** Deribit feed options merged over the defaults (heartbeat, silence timeout...). */
  readonly deribit?: Partial<ConstructorParameters<typeof DeribitFeed>[0]>;
  /** Simulator options merged over the defaults. */
  readonly simulator?: Partial<Parameters<typeof startDeribitSimulator>[0]>;
}


/** Start everything per `config`; resolves once the HTTP server listens. */
export async function startService(config: Config, logger: Logger, overridesIn: ServiceOverrides = {}): Promise<RunningService> {
  let overrides = overridesIn;
  const replay = config.MARKET_SOURCE === 'replay';
  const clock: Clock = replay ? new MarketClock() : systemClock;
  // PAIRS (sharding) narrows the pairs followed, and the sources connected to those of the pairs.
  const sources = followedSources(config);
  const followed = followedPairs(config);
  const pairsOf = (source: Source): Pair[] => followed.filter((p) => p.source === source).map((p) => p.pair);
  overrides = {
    ...overrides,
    okx: { pairs: pairsOf('OKX'), ...overrides.okx },
    bybit: { pairs: pairsOf('BYBIT'), ...overrides.bybit },
  };
  const expected: Array<{ source: Source; pair: Pair }> = replay ? [] : followed;
  const cache = new MarketCache(clock, config.STALE_AFTER_S, expected);
  // Before the feeds start, so the publisher sees every cache write (ROLE=api: the replica fills the cache).
  const kafka = startKafkaRole(config, cache, logger);

  let simulator: RunningService['simulator'] = null;
  let okxBybit: SimulatedOkxBybit | null = null;
  let simHistory: SimulatedHistory | null = null;
  const feeds: MarketFeed[] = [];
  let replayDone: Promise<void> | null = null;
  const feedLogger = logger.child({ component: 'feed' });

  if (config.ROLE === 'api') {
    // No exchange connection: the cache is filled from Kafka.
  } else if (config.MARKET_SOURCE === 'simulated' && !sources.includes('DERIBIT')) {
    okxBybit = await startSimulatedOkxBybit(sources, undefined, false, { seed: config.SIM_SEED, clock, logger: feedLogger, overrides });
    feeds.push(...okxBybit.feeds);
  } else if (config.MARKET_SOURCE === 'simulated') {
    // SIM_HISTORY_HOURS of market history before now: the simulator serves its continuation and the iVSummary
    // 24 h changes are seeded from it (streams/simulatedHistory.ts).
    if (config.SIM_HISTORY_HOURS > 0 && !overrides.simulator?.market && !overrides.simulator?.clock) {
      simHistory = prepareSimulatedHistory({ seed: overrides.simulator?.seed ?? config.SIM_SEED, hours: config.SIM_HISTORY_HOURS, sources });
    }
    simulator = await startDeribitSimulator({
      port: overrides.simulatorPort ?? 0,
      host: '127.0.0.1',
      seed: config.SIM_SEED,
      ...(simHistory ? { market: simHistory.market } : {}),
      ...overrides.simulator,
    });
    logger.info({ url: simulator.url }, 'simulated Deribit exchange listening');
    feeds.push(new DeribitFeed({ url: simulator.url, pairs: pairsOf('DERIBIT'), logger: feedLogger, clock, ...overrides.deribit }));
    // OKX and Bybit on the same market, which the Deribit simulator steps.
    okxBybit = await startSimulatedOkxBybit(sources, simulator.market, true, { seed: config.SIM_SEED, clock, logger: feedLogger, overrides });
    feeds.push(...okxBybit.feeds);
  } else if (config.MARKET_SOURCE === 'live') {
    if (sources.includes('DERIBIT')) feeds.push(new DeribitFeed({ url: config.DERIBIT_WS_URL, pairs: pairsOf('DERIBIT'), logger: feedLogger, clock, ...overrides.deribit }));
    feeds.push(...liveOkxBybitFeeds(config, sources, clock, feedLogger, overrides));
  } else {
    const replays: ReplayFeed[] = replayFeeds(config, clock as MarketClock, feedLogger);
    feeds.push(...replays);
    replayDone = Promise.all(replays.map((f) => f.done)).then(() => undefined);
  }

  const events$: Observable<MarketEvent> = merge(...feeds.map((f) => f.events$));
  const monitoring = new Monitoring({
    cache,
    feeds,
    clock,
    events$,
    logger,
    // an API replica never publishes: no publisher series; its own consumer series instead
    ...(config.ROLE === 'api' ? {} : { publisher: () => kafka.publisher }),
    // the replica's consumer series (ROLE=api), the ownership series of a sharded calibrator
    registries: () => [kafka.replica?.metrics.registry, kafka.ownership?.registry].filter((r) => r !== undefined),
  });
  const seenPairs = new Set<string>();
  const worker = new CalibrationWorker({ sabrBeta: config.SABR_BETA });
  const history = surfaceHistoryFor(cache);
  simHistory?.start({ fitAt: (spec, step) => worker.fitHistory(spec, step), onSnapshot: (s) => history.record(s), logger: logger.child({ component: 'history' }) });
  const pipelines = startPipelines(events$, {
    cache,
    fit: (view) => worker.fit(view),
    clock,
    throttleMs: config.CALIBRATION_THROTTLE_MS,
    logger: logger.child({ component: 'streams' }),
    onCalibrated: (r) => {
      monitoring.observeCalibration(r);
      const key = `${r.source}:${r.pair.base}/${r.pair.quote}`;
      if (replay && !seenPairs.has(key)) {
        // In replay the pairs to wait for are the pairs the recording holds.
        seenPairs.add(key);
        cache.setExpectedPairs([...cache.expected(), { source: r.source, pair: r.pair }]);
      }
      // the first calibrated surface per pair is logged by the monitoring (src/metrics/startupLog.ts)
    },
  });

  const app =
    config.ROLE === 'calibrator'
      ? await buildHealthApp(cache, logger.child({ component: 'http' }))
      : await buildApp({
          cache,
          monitoring,
          logger: logger.child({ component: 'http' }),
          bodyLimit: config.BODY_LIMIT_BYTES,
          requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
          security: securityOptionsFromConfig(config),
        });
  // the calibrator's health-only app gets /metrics too (calibration happens there)
  if (config.ROLE === 'calibrator') installMetrics(app, monitoring.metrics);
  await app.listen({ port: config.PORT, host: config.HOST });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;

  monitoring.feedsStarting();
  for (const f of feeds) f.start();

  let stopped = false;
  return {
    app,
    cache,
    clock,
    feeds,
    url,
    simulatorUrl: simulator?.url ?? null,
    simulator,
    simulators: { okx: okxBybit?.okx ?? null, bybit: okxBybit?.bybit ?? null },
    replayDone,
    settled: () => pipelines.isSettled(),
    kafka,
    monitoring,
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.close();
      monitoring.close();
      await Promise.all(feeds.map((f) => f.stop()));
      pipelines.subscription.unsubscribe();
      simHistory?.stop();
      await worker.close();
      await kafka.close();
      cache.updates$.complete();
      if (simulator) await simulator.close();
      if (okxBybit) await okxBybit.close();
    },
  };
}
