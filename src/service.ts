/**
 * Composition of the service: market source -> adapters -> streams -> cache -> REST.
 *
 * `simulated` (default): the simulators of the configured exchanges (SOURCES, default Deribit, OKX and Bybit,
 * one shared stochastic market, adapters/simulator/exchanges.ts) are started on 127.0.0.1, in their own child
 * process (SIMULATOR_PROCESS=separate, the default) or in this one (`inprocess`, tests), and the real adapters
 * connect to them over real sockets (only the URLs differ from `live`).
 * `live`: the real exchanges' WebSockets and REST. `replay`: recorded JSON Lines files (one per exchange)
 * through the same normalizers, with the messages' own time as the service clock. The feeds: one loop over the
 * registered exchanges (./marketSources.ts `exchangeFeeds`), the same for `simulated` and `live`.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { merge, type Observable } from 'rxjs';
import { followedPairs, followedSources, type Config } from './config.js';
import { MarketClock, SimulatedClock, systemClock, type Clock } from './domain/clock.js';
import type { MarketEvent } from './domain/events.js';
import type { Pair, Source } from './domain/markets.js';
import { MarketCache } from './cache/marketCache.js';
import { buildApp } from './api/app.js';
import { buildMetricsApp, installMetrics } from './api/plugins/metrics.js';
import { Monitoring } from './metrics/monitoring.js';
import { DEFAULT_METRICS_HOST, apiKeysFromConfig, metricsKeyFromConfig, securityOptionsFromConfig } from './api/plugins/securityConfig.js';
import { startPipelines } from '../streams/pipeline.js';
import { CalibrationPool, defaultPoolSize } from '../streams/calibrationPool.js';
import type { SimulatedHistory } from '../adapters/simulator/history.js';
import type { MarketFeed } from './domain/feeds.js';
import type { ReplayFeed } from '../adapters/replay/replayFeed.js';
import type { DeribitSimulator, DeribitSimulatorOptions } from '../adapters/simulator/deribitServer.js';
import type { OkxSimulator } from '../adapters/simulator/okxServer.js';
import type { BybitSimulator } from '../adapters/simulator/bybitServer.js';
import type { SimulatedExchanges, SimulatorEndpoints } from '../adapters/simulator/exchanges.js';
import type { SimulatorProcess, SimulatorProcessOptions } from '../adapters/simulator/processClient.js';
import { startKafkaRole, type KafkaWiring } from './kafka/wiring.js';
import { buildHealthApp } from './api/healthApp.js';
import { StreamHub } from './api/stream/hub.js';
import { streamLimitsFromConfig } from './api/stream/config.js';
import { exchangeFeeds, replayFeeds, type MarketSourceOverrides } from './marketSources.js';
import { startHistory, type ServiceHistory } from './history/runtime.js';

/** A running service. */
export interface RunningService {
  readonly app: FastifyInstance;
  readonly cache: MarketCache;
  readonly clock: Clock;
  readonly feeds: readonly MarketFeed[];
  /** Base URL of the REST API, e.g. http://127.0.0.1:8080 */
  readonly url: string;
  /** Base URL of the metrics-only listener (METRICS_PORT), e.g. http://127.0.0.1:9464; null when /metrics is on `url`. */
  readonly metricsUrl: string | null;
  /** URL of the simulated Deribit exchange (simulated mode), for tests and logs. */
  readonly simulatorUrl: string | null;
  /** The simulated Deribit exchange and its fault hooks (simulated mode with SIMULATOR_PROCESS=inprocess; else null). */
  readonly simulator: DeribitSimulator | null;
  /** The simulated OKX and Bybit exchanges (SIMULATOR_PROCESS=inprocess; null when not configured or in their own process). */
  readonly simulators: { readonly okx: OkxSimulator | null; readonly bybit: BybitSimulator | null };
  /** The simulators' own process (simulated mode with SIMULATOR_PROCESS=separate, the default), or null. */
  readonly simulatorProcess: SimulatorProcess | null;
  /** The calibration worker pool (its size and pair assignment). */
  readonly calibration: CalibrationPool;
  /** Resolves when the replay file has been read completely (replay mode). */
  readonly replayDone: Promise<void> | null;
  /** True when every chain state received so far has been calibrated at its latest version. */
  settled(): boolean;
  /** Kafka publisher (ROLE all/calibrator with KAFKA_BROKERS) or replica (ROLE=api); docs/events.md. */
  readonly kafka: KafkaWiring;
  /** Prometheus metrics, feed health and the dashboard's data (src/metrics/monitoring.ts). */
  readonly monitoring: Monitoring;
  /** The streaming API's hub (null for ROLE=calibrator, which serves no API). */
  readonly stream: StreamHub | null;
  /** The history store (as-of answers, series; src/history/runtime.ts); its `store` is null with HISTORY_DIR=off. */
  readonly history: ServiceHistory;
  /** Graceful stop: HTTP first, then feeds, then the simulator. */
  stop(): Promise<void>;
}

/** Test and embedding overrides. */
export interface ServiceOverrides extends MarketSourceOverrides {
  /** Simulator port (default 0 = any free port). */
  readonly simulatorPort?: number;
  /**
   * Simulator options merged over the defaults. With SIMULATOR_PROCESS=separate only their plain-data fields
   * (numbers, strings, booleans) reach the simulator process; a `market` or `clock` needs `inprocess`.
   */
  readonly simulator?: Partial<DeribitSimulatorOptions>;
}


/** The plain-data (number, string, boolean) fields of simulator options: what crosses to the simulator process. */
function plain<T extends object>(o: T | undefined): Record<string, number | string | boolean> {
  const out: Record<string, number | string | boolean> = {};
  for (const [k, v] of Object.entries(o ?? {})) if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') out[k] = v;
  return out;
}

/** Start everything per `config`; resolves once the HTTP server listens. */
export async function startService(config: Config, logger: Logger, overridesIn: ServiceOverrides = {}): Promise<RunningService> {
  let overrides = overridesIn;
  const replay = config.MARKET_SOURCE === 'replay';
  // replay: the recorded messages' time; simulated with SIM_START_TIME: a clock from that start (tests run the
  // same market at any hour); otherwise the wall clock. Every part of the service and the simulators read it.
  const clock: Clock = replay
    ? new MarketClock()
    : config.MARKET_SOURCE === 'simulated' && config.SIM_START_TIME !== undefined
      ? new SimulatedClock(config.SIM_START_TIME)
      : systemClock;
  const clockMs = (): number => clock.now() * 1000;
  // PAIRS (sharding) narrows the pairs followed, and the sources connected to those of the pairs.
  const sources = followedSources(config);
  const followed = followedPairs(config);
  const pairsOf = (source: Source): Pair[] => followed.filter((p) => p.source === source).map((p) => p.pair);
  const expected: Array<{ source: Source; pair: Pair }> = replay ? [] : followed;
  const cache = new MarketCache(clock, config.STALE_AFTER_S, expected);
  // The history store records every cache write from here on (a calibrator serves no as-of queries: none there).
  const serviceHistory = await startHistory(config.ROLE === 'calibrator' ? { ...config, HISTORY_DIR: 'off' } : config, cache, logger.child({ component: 'history' }));
  // Before the feeds start, so the publisher sees every cache write (ROLE=api: the replica fills the cache).
  const kafka = startKafkaRole(config, cache, logger, { onPastSurface: (s) => serviceHistory.recordMissing(s) });
  if (kafka.role !== 'calibrator' && config.KAFKA_BROKERS) serviceHistory.rebuilding(kafka.historyRestored, 'the Kafka surface-history topic');

  let exchanges: SimulatedExchanges | null = null;
  let simProcess: SimulatorProcess | null = null;
  let simHistory: SimulatedHistory | null = null;
  const feeds: MarketFeed[] = [];
  let replayDone: Promise<void> | null = null;
  const feedLogger = logger.child({ component: 'feed' });
  /** The simulated exchanges' endpoints (simulated); the feeds connect to the configured live URLs otherwise. */
  let endpoints: SimulatorEndpoints | undefined;

  if (config.ROLE === 'api') {
    // No exchange connection: the cache is filled from Kafka.
  } else if (config.MARKET_SOURCE === 'simulated') {
    // Simulator code is loaded only here (dynamic imports): a live or replay service never loads it.
    const separate = config.SIMULATOR_PROCESS === 'separate';
    // SIM_HISTORY_HOURS of market history before now (with Deribit): the simulator serves its continuation and the
    // iVSummary 24 h changes are seeded from it (adapters/simulator/history.ts).
    if (sources.includes('DERIBIT') && config.SIM_HISTORY_HOURS > 0 && !overrides.simulator?.market && !overrides.simulator?.clock) {
      const { prepareSimulatedHistory } = await import('../adapters/simulator/history.js');
      simHistory = prepareSimulatedHistory({ seed: overrides.simulator?.seed ?? config.SIM_SEED, hours: config.SIM_HISTORY_HOURS, sources, buildMarket: !separate, clock: clockMs });
    }
    const port = overrides.simulatorPort !== undefined ? { port: overrides.simulatorPort } : {};
    if (separate) {
      const { startSimulatorProcess } = await import('../adapters/simulator/processClient.js');
      const opts: SimulatorProcessOptions = {
        sources,
        seed: config.SIM_SEED,
        // the child runs on this service's clock: the same offset from the machine's wall clock
        clockOffsetMs: clockMs() - Date.now(),
        ...(simHistory ? { history: { spec: simHistory.spec, steps: simHistory.steps } } : {}),
        deribit: { ...port, ...plain(overrides.simulator) },
        okx: plain(overrides.okxSimulator),
        bybit: plain(overrides.bybitSimulator),
      };
      simProcess = await startSimulatorProcess(opts);
      endpoints = simProcess.endpoints;
      logger.info({ pid: simProcess.pid, ...endpoints }, 'simulated exchanges listening in their own process');
    } else {
      const { startSimulatedExchanges } = await import('../adapters/simulator/exchanges.js');
      exchanges = await startSimulatedExchanges({
        sources,
        seed: config.SIM_SEED,
        clock: clockMs,
        ...(simHistory?.market ? { market: simHistory.market } : {}),
        deribit: { ...port, ...overrides.simulator },
        okx: overrides.okxSimulator ?? {},
        bybit: overrides.bybitSimulator ?? {},
      });
      endpoints = exchanges.endpoints;
      logger.info({ ...endpoints }, 'simulated exchanges listening in this process');
    }
  } else if (config.MARKET_SOURCE === 'replay') {
    const replays: ReplayFeed[] = replayFeeds(config, clock as MarketClock, feedLogger);
    feeds.push(...replays);
    replayDone = Promise.all(replays.map((f) => f.done)).then(() => undefined);
  }
  // one loop over the configured exchanges (src/marketSources.ts EXCHANGE_FEEDS), simulated or live
  if (config.ROLE !== 'api' && config.MARKET_SOURCE !== 'replay') {
    feeds.push(...exchangeFeeds(endpoints ? { simulated: endpoints } : { live: config }, sources, { clock, logger: feedLogger, pairsOf }, overrides));
  }

  const events$: Observable<MarketEvent> = merge(...feeds.map((f) => f.events$));
  let replayFinished = false;
  void replayDone?.then(() => {
    replayFinished = true;
  });
  // the streaming API's hub (WebSocket /api/v1/ws, SSE /api/v1/stream): made here so that /metrics shows its series
  const stream = config.ROLE === 'calibrator' ? null : new StreamHub(cache, { limits: streamLimitsFromConfig(config) });
  const monitoring = new Monitoring({
    cache,
    feeds,
    clock,
    // feed message ages: on a simulated clock the feeds stamp messages with it, so the ages are read on it too
    ...(clock instanceof SimulatedClock ? { wallNowS: () => clock.now() } : {}),
    events$,
    logger,
    // an API replica never publishes: no publisher series; its own consumer series instead
    ...(config.ROLE === 'api' ? {} : { publisher: () => kafka.publisher }),
    // the replica's consumer series (ROLE=api), the ownership series of a sharded calibrator
    registries: () => [kafka.replica?.metrics.registry, kafka.ownership?.registry, stream?.registry].filter((r) => r !== undefined && r !== null),
    // the pool is made just below (a scrape reads it later); an API replica fits nothing
    ...(config.ROLE === 'api' ? {} : { calibrationPool: () => pool.stats() }),
    history: () => serviceHistory.recorder?.stats ?? null,
    market: () => (config.ROLE === 'api' ? { mode: 'replica' } : replay ? { mode: 'replay', finished: replayFinished } : { mode: config.MARKET_SOURCE }),
  });
  const seenPairs = new Set<string>();
  const pool = new CalibrationPool({ sabrBeta: config.SABR_BETA }, config.CALIBRATION_WORKERS > 0 ? config.CALIBRATION_WORKERS : defaultPoolSize());
  const history = cache.history;
  // simulator code (the twin market's history worker) is loaded only in simulated mode
  const historyWorker = simHistory ? new (await import('../adapters/simulator/historyPool.js')).HistoryWorker({ sabrBeta: config.SABR_BETA }) : null;
  // the simulator's pre-run past goes to the store too, unless the store already holds that time (a restart)
  const recordPast = simHistory ? await serviceHistory.pastRecorder(clock.now() - config.SIM_HISTORY_HOURS * 3600) : null;
  simHistory?.start({
    fitAt: (spec, step) => historyWorker!.fitHistory(spec, step),
    // with a store that already holds that time (a restart), the 24 h changes come from the store's points (restored
    // at start): the pre-run's own points would be a second past the store never had
    onSnapshot: (s) => {
      if (recordPast) recordPast(s);
      if (recordPast || !serviceHistory.store) history.record(s);
    },
    logger: logger.child({ component: 'history' }),
  });
  const pipelines = startPipelines(events$, {
    cache,
    fit: (view, signal) => pool.fit(view, undefined, signal),
    clock,
    throttleMs: config.CALIBRATION_THROTTLE_MS,
    // off in replay: urgent refits depend on arrival timing, and a replay must give the same surfaces every time
    urgentVolPts: replay ? 0 : config.CALIBRATION_URGENT_VOL_PTS,
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

  // replay: once the file is read, every pair is fitted cold from its final state, so that the surfaces served at the
  // end do not depend on which intermediate states the timing of the reading let the warm refits start from
  void replayDone?.then(() => pipelines.refitAllFull());

  // /metrics: guarded by METRICS_KEY, else by the API keys (src/api/plugins/metricsAuth.ts); on the API port,
  // or alone on METRICS_HOST:METRICS_PORT
  const metricsKey = metricsKeyFromConfig(config);
  const ownMetricsListener = config.METRICS_PORT !== undefined;
  const metricsAuth = {
    metricsKey,
    apiKeys: apiKeysFromConfig(config),
    onReject: () => monitoring.metrics.observeRejection('unauthorized'),
  };
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
          metricsKey,
          metricsRoute: !ownMetricsListener,
          ...(stream ? { stream } : {}),
          history: serviceHistory,
        });
  // the calibrator's health-only app gets /metrics too (calibration happens there)
  if (config.ROLE === 'calibrator') installMetrics(app, monitoring.metrics, { auth: metricsAuth, route: !ownMetricsListener });
  let metricsApp: FastifyInstance | null = null;
  /** Stops what has been started so far (the feeds are started last, below), in the order of `stop()`. */
  const stopStarted = async (): Promise<void> => {
    await app.close();
    stream?.close();
    if (metricsApp) await metricsApp.close();
    monitoring.close();
    await Promise.all(feeds.map((f) => f.stop()));
    pipelines.subscription.unsubscribe();
    simHistory?.stop();
    await pool.close();
    await historyWorker?.close();
    await kafka.close();
    await serviceHistory.close().catch((err: unknown) => logger.error({ err: (err as Error).message }, 'history store close failed'));
    cache.updates$.complete();
    await exchanges?.close();
    await simProcess?.close();
  };
  // A port that cannot be bound stops everything started above (worker threads, the simulators' process, Kafka
  // clients) before the error reaches the caller (main.ts prints it as one line).
  let url: string;
  let metricsUrl: string | null = null;
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
    url = baseUrl(app, config.HOST, config.PORT);
    if (ownMetricsListener) {
      const host = config.METRICS_HOST ?? DEFAULT_METRICS_HOST;
      metricsApp = await buildMetricsApp(monitoring.metrics, metricsAuth, logger.child({ component: 'metrics-http' }));
      await metricsApp.listen({ port: config.METRICS_PORT!, host });
      metricsUrl = baseUrl(metricsApp, host, config.METRICS_PORT!);
    }
  } catch (err) {
    await stopStarted().catch(() => undefined);
    throw err;
  }

  monitoring.feedsStarting();
  for (const f of feeds) f.start();

  let stopped = false;
  return {
    app,
    cache,
    clock,
    feeds,
    url,
    metricsUrl,
    simulatorUrl: exchanges?.endpoints.deribit?.url ?? simProcess?.endpoints.deribit?.url ?? null,
    simulator: exchanges?.deribit ?? null,
    simulators: { okx: exchanges?.okx ?? null, bybit: exchanges?.bybit ?? null },
    simulatorProcess: simProcess,
    calibration: pool,
    replayDone,
    settled: () => pipelines.isSettled(),
    kafka,
    monitoring,
    stream,
    history: serviceHistory,
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopStarted();
    },
  };
}

/** `http://host:port` of a listening app (IPv6 hosts bracketed). */
function baseUrl(app: FastifyInstance, host: string, configuredPort: number): string {
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : configuredPort;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
