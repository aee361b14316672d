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
import type { Pair, Source, SourcePair } from './domain/markets.js';
import { MarketCache } from './cache/marketCache.js';
import { buildApp } from './api/app.js';
import { buildMetricsApp, installMetrics } from './api/plugins/metrics.js';
import type { MetricsAuthOptions } from './api/plugins/metricsAuth.js';
import { Monitoring } from './metrics/monitoring.js';
import { DEFAULT_METRICS_HOST, apiKeysFromConfig, metricsKeyFromConfig, securityOptionsFromConfig } from './api/plugins/securityConfig.js';
import { startPipelines, type Pipelines } from '../streams/pipeline.js';
import { CalibrationPool, defaultPoolSize } from '../streams/calibrationPool.js';
import type { SimulatedHistory } from '../adapters/simulator/history.js';
import type { HistoryWorker } from '../adapters/simulator/historyPool.js';
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

/**
 * Start everything per `config`, in this order; resolves once the HTTP server listens (the feeds connect last).
 * clock -> followed markets -> cache -> history store -> Kafka -> market source (simulators, feeds) -> streaming hub
 * -> calibration pool -> monitoring -> simulated past -> calibration pipelines -> HTTP app -> listen -> feeds.
 */
export async function startService(config: Config, logger: Logger, overridesIn: ServiceOverrides = {}): Promise<RunningService> {
  const clock = serviceClock(config);
  const markets = followedMarkets(config, overridesIn);
  const cache = new MarketCache(clock, config.STALE_AFTER_S, config.MARKET_SOURCE === 'replay' ? [] : markets.followed);
  const history = await startServiceHistory(config, cache, logger);
  const kafka = startKafka(config, cache, logger, history);
  const source = await startMarketSource(config, clock, markets, logger);
  const events$: Observable<MarketEvent> = merge(...source.feeds.map((f) => f.events$));
  const stream = startStreamHub(config, cache);
  const pool = startCalibrationPool(config);
  const monitoring = startMonitoring(config, { clock, cache, history, kafka, source, events$, stream, pool, logger });
  const historyWorker = source.simHistory ? await startSimulatedPast(config, clock, source.simHistory, { cache, history, logger }) : null;
  const pipelines = startCalibration(config, { clock, cache, events$, pool, monitoring, logger });
  refitWhenReplayed(source, pipelines);
  const metricsAuth = metricsAuthOf(config, monitoring);
  const app = await buildServiceApp(config, { cache, monitoring, stream, history, logger }, metricsAuth);
  const started: Started = { clock, cache, history, kafka, source, stream, pool, monitoring, historyWorker, pipelines, app, metricsApp: null, logger };
  const { url, metricsUrl } = await listenOrStop(config, started, metricsAuth);
  startFeeds(monitoring, source.feeds);
  return runningService(started, url, metricsUrl);
}

/**
 * The service's clock: in replay the recorded messages' time; simulated with SIM_START_TIME, a clock from that start
 * (tests run the same market at any hour); otherwise the wall clock. Every part of the service and the simulators read it.
 */
function serviceClock(config: Config): Clock {
  if (config.MARKET_SOURCE === 'replay') return new MarketClock();
  return config.MARKET_SOURCE === 'simulated' && config.SIM_START_TIME !== undefined ? new SimulatedClock(config.SIM_START_TIME) : systemClock;
}

/** The markets this instance follows: PAIRS (sharding) narrows the pairs followed, and the sources connected to those of the pairs. */
interface FollowedMarkets {
  readonly sources: Source[];
  readonly followed: SourcePair[];
  /** The followed pairs of one source. */
  pairsOf(source: Source): Pair[];
  /** The test and embedding overrides (each feed's pairs are the followed ones, unless its overrides name others). */
  readonly overrides: ServiceOverrides;
}

/** The followed sources and pairs of `config`, with the overrides. */
function followedMarkets(config: Config, overrides: ServiceOverrides): FollowedMarkets {
  const sources = followedSources(config);
  const followed = followedPairs(config);
  const pairsOf = (source: Source): Pair[] => followed.filter((p) => p.source === source).map((p) => p.pair);
  return { sources, followed, pairsOf, overrides };
}

/** The history store, recording every cache write from here on (a calibrator serves no as-of queries: none there). */
function startServiceHistory(config: Config, cache: MarketCache, logger: Logger): Promise<ServiceHistory> {
  return startHistory(config.ROLE === 'calibrator' ? { ...config, HISTORY_DIR: 'off' } : config, cache, logger.child({ component: 'history' }));
}

/**
 * The Kafka role (publisher, replica, ownership; docs/events.md), started before the feeds so that the publisher
 * sees every cache write (ROLE=api: the replica fills the cache); the history store rebuilds from its topic.
 */
function startKafka(config: Config, cache: MarketCache, logger: Logger, history: ServiceHistory): KafkaWiring {
  const kafka = startKafkaRole(config, cache, logger, { onPastSurface: (s) => history.recordMissing(s) });
  if (kafka.role !== 'calibrator' && config.KAFKA_BROKERS) history.rebuilding(kafka.historyRestored, 'the Kafka surface-history topic');
  return kafka;
}

/** Where the market data comes from: the feeds (not started yet) and what serves them. */
interface MarketSource {
  readonly feeds: MarketFeed[];
  /** The simulated exchanges in this process (SIMULATOR_PROCESS=inprocess), or null. */
  readonly exchanges: SimulatedExchanges | null;
  /** The simulators' own process (SIMULATOR_PROCESS=separate), or null. */
  readonly simProcess: SimulatorProcess | null;
  /** The simulated market's pre-run history (SIM_HISTORY_HOURS, with Deribit), or null. */
  readonly simHistory: SimulatedHistory | null;
  /** Resolves when the replay files have been read completely (replay mode), else null. */
  readonly replayDone: Promise<void> | null;
}

/** The market source of `config`: none for an API replica (the cache is filled from Kafka), the simulators, live, or replay. */
async function startMarketSource(config: Config, clock: Clock, markets: FollowedMarkets, logger: Logger): Promise<MarketSource> {
  const none: MarketSource = { feeds: [], exchanges: null, simProcess: null, simHistory: null, replayDone: null };
  const feedLogger = logger.child({ component: 'feed' });
  if (config.ROLE === 'api') return none;
  if (config.MARKET_SOURCE === 'simulated') return startSimulatedSource(config, clock, markets, logger, feedLogger);
  if (config.MARKET_SOURCE === 'live') return { ...none, feeds: liveFeeds(config, clock, markets, feedLogger) };
  const replays: ReplayFeed[] = replayFeeds(config, clock as MarketClock, feedLogger);
  return { ...none, feeds: [...replays], replayDone: Promise.all(replays.map((f) => f.done)).then(() => undefined) };
}

/** The live exchanges' feeds: one loop over the registered exchanges (./marketSources.ts EXCHANGE_FEEDS). */
function liveFeeds(config: Config, clock: Clock, markets: FollowedMarkets, feedLogger: Logger): MarketFeed[] {
  return exchangeFeeds({ live: config }, markets.sources, { clock, logger: feedLogger, pairsOf: markets.pairsOf }, markets.overrides);
}

/**
 * Simulated mode: the simulated exchanges (in their own process or in this one) and the real feeds connected to them.
 * Simulator code is loaded only here (dynamic imports): a live or replay service never loads it.
 */
async function startSimulatedSource(config: Config, clock: Clock, markets: FollowedMarkets, logger: Logger, feedLogger: Logger): Promise<MarketSource> {
  const { overrides } = markets;
  const separate = config.SIMULATOR_PROCESS === 'separate';
  const simHistory = await prepareSimulatorHistory(config, clock, markets, separate);
  const started = separate ? await startSimulatorProcessOf(config, clock, markets, simHistory, logger) : await startSimulatorsInProcess(config, clock, markets, simHistory, logger);
  // the same loop over the registered exchanges as live, at the simulators' endpoints
  const feeds = exchangeFeeds({ simulated: started.endpoints }, markets.sources, { clock, logger: feedLogger, pairsOf: markets.pairsOf }, overrides);
  return { feeds, exchanges: started.exchanges, simProcess: started.simProcess, simHistory, replayDone: null };
}

/** The service's clock in milliseconds, as the simulators read it. */
const clockMsOf =
  (clock: Clock) =>
  (): number =>
    clock.now() * 1000;

/**
 * SIM_HISTORY_HOURS of market history before now (with Deribit, and no market or clock of the overrides): the
 * simulator serves its continuation and the iVSummary 24 h changes are seeded from it (adapters/simulator/history.ts).
 */
async function prepareSimulatorHistory(config: Config, clock: Clock, markets: FollowedMarkets, separate: boolean): Promise<SimulatedHistory | null> {
  const { sources, overrides } = markets;
  if (!(sources.includes('DERIBIT') && config.SIM_HISTORY_HOURS > 0 && !overrides.simulator?.market && !overrides.simulator?.clock)) return null;
  const { prepareSimulatedHistory } = await import('../adapters/simulator/history.js');
  return prepareSimulatedHistory({ seed: overrides.simulator?.seed ?? config.SIM_SEED, hours: config.SIM_HISTORY_HOURS, sources, buildMarket: !separate, clock: clockMsOf(clock) });
}

/** The simulated exchanges just started: their endpoints, and the process or in-process exchanges that serve them. */
interface StartedSimulators {
  readonly endpoints: SimulatorEndpoints;
  readonly exchanges: SimulatedExchanges | null;
  readonly simProcess: SimulatorProcess | null;
}

/** The simulator port of the overrides, when they set one (default: any free port). */
const simulatorPortOf = (overrides: ServiceOverrides) => (overrides.simulatorPort !== undefined ? { port: overrides.simulatorPort } : {});

/** SIMULATOR_PROCESS=separate: the simulated exchanges in their own child process, on this service's clock. */
async function startSimulatorProcessOf(config: Config, clock: Clock, markets: FollowedMarkets, simHistory: SimulatedHistory | null, logger: Logger): Promise<StartedSimulators> {
  const { sources, overrides } = markets;
  const { startSimulatorProcess } = await import('../adapters/simulator/processClient.js');
  const opts: SimulatorProcessOptions = {
    sources,
    seed: config.SIM_SEED,
    // the child runs on this service's clock: the same offset from the machine's wall clock
    clockOffsetMs: clockMsOf(clock)() - Date.now(),
    ...(simHistory ? { history: { spec: simHistory.spec, steps: simHistory.steps } } : {}),
    deribit: { ...simulatorPortOf(overrides), ...plain(overrides.simulator) },
    okx: plain(overrides.okxSimulator),
    bybit: plain(overrides.bybitSimulator),
  };
  const simProcess = await startSimulatorProcess(opts);
  logger.info({ pid: simProcess.pid, ...simProcess.endpoints }, 'simulated exchanges listening in their own process');
  return { endpoints: simProcess.endpoints, exchanges: null, simProcess };
}

/** SIMULATOR_PROCESS=inprocess: the simulated exchanges in this process (their fault hooks reachable, for tests). */
async function startSimulatorsInProcess(config: Config, clock: Clock, markets: FollowedMarkets, simHistory: SimulatedHistory | null, logger: Logger): Promise<StartedSimulators> {
  const { sources, overrides } = markets;
  const { startSimulatedExchanges } = await import('../adapters/simulator/exchanges.js');
  const exchanges = await startSimulatedExchanges({
    sources,
    seed: config.SIM_SEED,
    clock: clockMsOf(clock),
    ...(simHistory?.market ? { market: simHistory.market } : {}),
    deribit: { ...simulatorPortOf(overrides), ...overrides.simulator },
    okx: overrides.okxSimulator ?? {},
    bybit: overrides.bybitSimulator ?? {},
  });
  logger.info({ ...exchanges.endpoints }, 'simulated exchanges listening in this process');
  return { endpoints: exchanges.endpoints, exchanges, simProcess: null };
}

/** The streaming API's hub (WebSocket /api/v1/ws, SSE /api/v1/stream), made before the monitoring so that /metrics shows its series; none for a calibrator. */
function startStreamHub(config: Config, cache: MarketCache): StreamHub | null {
  return config.ROLE === 'calibrator' ? null : new StreamHub(cache, { limits: streamLimitsFromConfig(config) });
}

/** The calibration worker pool: CALIBRATION_WORKERS threads, or the default size for this machine. */
function startCalibrationPool(config: Config): CalibrationPool {
  return new CalibrationPool({ sabrBeta: config.SABR_BETA }, config.CALIBRATION_WORKERS > 0 ? config.CALIBRATION_WORKERS : defaultPoolSize());
}

/** What the monitoring reads. */
interface MonitoredParts {
  readonly clock: Clock;
  readonly cache: MarketCache;
  readonly history: ServiceHistory;
  readonly kafka: KafkaWiring;
  readonly source: MarketSource;
  readonly events$: Observable<MarketEvent>;
  readonly stream: StreamHub | null;
  readonly pool: CalibrationPool;
  readonly logger: Logger;
}

/** Prometheus metrics, feed health and the dashboard's data (src/metrics/monitoring.ts), over every part of the service. */
function startMonitoring(config: Config, parts: MonitoredParts): Monitoring {
  const { clock, cache, history, kafka, source, events$, stream, pool, logger } = parts;
  const replay = config.MARKET_SOURCE === 'replay';
  let replayFinished = false;
  void source.replayDone?.then(() => {
    replayFinished = true;
  });
  return new Monitoring({
    cache,
    feeds: source.feeds,
    clock,
    // feed message ages: on a simulated clock the feeds stamp messages with it, so the ages are read on it too
    ...(clock instanceof SimulatedClock ? { wallNowS: () => clock.now() } : {}),
    events$,
    logger,
    // an API replica never publishes: no publisher series; its own consumer series instead
    ...(config.ROLE === 'api' ? {} : { publisher: () => kafka.publisher }),
    // the replica's consumer series (ROLE=api), the ownership series of a sharded calibrator
    registries: () => [kafka.replica?.metrics.registry, kafka.ownership?.registry, stream?.registry].filter((r) => r !== undefined && r !== null),
    // an API replica fits nothing
    ...(config.ROLE === 'api' ? {} : { calibrationPool: () => pool.stats() }),
    history: () => (history.recorder ? { ...history.recorder.stats, seriesCache: history.store?.renderedDays.stats() } : null),
    market: () => (config.ROLE === 'api' ? { mode: 'replica' } : replay ? { mode: 'replay', finished: replayFinished } : { mode: config.MARKET_SOURCE }),
  });
}

/**
 * The simulator's pre-run past: fitted by the twin market's history worker (simulator code, loaded only in simulated
 * mode) and recorded in the store too, unless the store already holds that time (a restart).
 * @returns the history worker, for the stop
 */
async function startSimulatedPast(
  config: Config,
  clock: Clock,
  simHistory: SimulatedHistory,
  parts: { readonly cache: MarketCache; readonly history: ServiceHistory; readonly logger: Logger },
): Promise<HistoryWorker> {
  const { cache, history: serviceHistory, logger } = parts;
  const historyWorker = new (await import('../adapters/simulator/historyPool.js')).HistoryWorker({ sabrBeta: config.SABR_BETA });
  const recordPast = await serviceHistory.pastRecorder(clock.now() - config.SIM_HISTORY_HOURS * 3600);
  simHistory.start({
    fitAt: (spec, step) => historyWorker.fitHistory(spec, step),
    // with a store that already holds that time (a restart), the 24 h changes come from the store's points (restored
    // at start): the pre-run's own points would be a second past the store never had
    onSnapshot: (s) => {
      if (recordPast) recordPast(s);
      if (recordPast || !serviceHistory.store) cache.history.record(s);
    },
    logger: logger.child({ component: 'history' }),
  });
  return historyWorker;
}

/** What the calibration pipelines read and feed. */
interface CalibrationParts {
  readonly clock: Clock;
  readonly cache: MarketCache;
  readonly events$: Observable<MarketEvent>;
  readonly pool: CalibrationPool;
  readonly monitoring: Monitoring;
  readonly logger: Logger;
}

/** The calibration pipelines (streams/pipeline.ts): market events -> chain states -> fits in the pool -> the cache. */
function startCalibration(config: Config, parts: CalibrationParts): Pipelines {
  const { clock, cache, events$, pool, monitoring, logger } = parts;
  const replay = config.MARKET_SOURCE === 'replay';
  const seenPairs = new Set<string>();
  return startPipelines(events$, {
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
}

/**
 * Replay: once the files are read, every pair is fitted cold from its final state, so that the surfaces served at the
 * end do not depend on which intermediate states the timing of the reading let the warm refits start from.
 */
function refitWhenReplayed(source: MarketSource, pipelines: Pipelines): void {
  void source.replayDone?.then(() => pipelines.refitAllFull());
}

/** How /metrics is guarded: by METRICS_KEY, else by the API keys (src/api/plugins/metricsAuth.ts); a rejection is counted. */
function metricsAuthOf(config: Config, monitoring: Monitoring): MetricsAuthOptions {
  return {
    metricsKey: metricsKeyFromConfig(config),
    apiKeys: apiKeysFromConfig(config),
    onReject: () => monitoring.metrics.observeRejection('unauthorized'),
  };
}

/** What the HTTP app serves. */
interface ServedParts {
  readonly cache: MarketCache;
  readonly monitoring: Monitoring;
  readonly stream: StreamHub | null;
  readonly history: ServiceHistory;
  readonly logger: Logger;
}

/**
 * The HTTP app: the REST API (with /metrics on the API port unless METRICS_PORT gives it a listener of its own), or
 * for a calibrator the health-only app, which gets /metrics too (calibration happens there).
 */
async function buildServiceApp(config: Config, parts: ServedParts, metricsAuth: MetricsAuthOptions): Promise<FastifyInstance> {
  const { cache, monitoring, stream, history, logger } = parts;
  const ownMetricsListener = config.METRICS_PORT !== undefined;
  if (config.ROLE === 'calibrator') {
    const app = await buildHealthApp(cache, logger.child({ component: 'http' }));
    installMetrics(app, monitoring.metrics, { auth: metricsAuth, route: !ownMetricsListener });
    return app;
  }
  return buildApp({
    cache,
    monitoring,
    logger: logger.child({ component: 'http' }),
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    security: securityOptionsFromConfig(config),
    metricsKey: metricsAuth.metricsKey,
    metricsRoute: !ownMetricsListener,
    ...(stream ? { stream } : {}),
    history,
  });
}

/** Everything startService has started, for the stop and the RunningService. */
interface Started {
  readonly clock: Clock;
  readonly cache: MarketCache;
  readonly history: ServiceHistory;
  readonly kafka: KafkaWiring;
  readonly source: MarketSource;
  readonly stream: StreamHub | null;
  readonly pool: CalibrationPool;
  readonly monitoring: Monitoring;
  readonly historyWorker: HistoryWorker | null;
  readonly pipelines: Pipelines;
  readonly app: FastifyInstance;
  /** The metrics-only listener (METRICS_PORT), once built. */
  metricsApp: FastifyInstance | null;
  readonly logger: Logger;
}

/**
 * The API's listener, and the metrics-only one on METRICS_HOST:METRICS_PORT when configured. A port that cannot be
 * bound stops everything started so far (worker threads, the simulators' process, Kafka clients) before the error
 * reaches the caller (main.ts prints it as one line).
 */
async function listenOrStop(config: Config, started: Started, metricsAuth: MetricsAuthOptions): Promise<{ url: string; metricsUrl: string | null }> {
  const { app, monitoring, logger } = started;
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
    const url = baseUrl(app, config.HOST, config.PORT);
    if (config.METRICS_PORT === undefined) return { url, metricsUrl: null };
    const host = config.METRICS_HOST ?? DEFAULT_METRICS_HOST;
    const metricsApp = await buildMetricsApp(monitoring.metrics, metricsAuth, logger.child({ component: 'metrics-http' }));
    started.metricsApp = metricsApp;
    await metricsApp.listen({ port: config.METRICS_PORT, host });
    return { url, metricsUrl: baseUrl(metricsApp, host, config.METRICS_PORT) };
  } catch (err) {
    await stopStarted(started).catch(() => undefined);
    throw err;
  }
}

/** Stops what has been started (the feeds are started last), in the order of `stop()`: HTTP first, then feeds, then the simulators. */
async function stopStarted(started: Started): Promise<void> {
  const { app, stream, metricsApp, monitoring, source, pipelines, pool, historyWorker, kafka, history, cache, logger } = started;
  await app.close();
  stream?.close();
  if (metricsApp) await metricsApp.close();
  monitoring.close();
  await Promise.all(source.feeds.map((f) => f.stop()));
  pipelines.subscription.unsubscribe();
  source.simHistory?.stop();
  await pool.close();
  await historyWorker?.close();
  await kafka.close();
  await history.close().catch((err: unknown) => logger.error({ err: (err as Error).message }, 'history store close failed'));
  cache.updates$.complete();
  await source.exchanges?.close();
  await source.simProcess?.close();
}

/** The feeds connect, once the service listens: the monitoring marks the start of their connection. */
function startFeeds(monitoring: Monitoring, feeds: readonly MarketFeed[]): void {
  monitoring.feedsStarting();
  for (const f of feeds) f.start();
}

/** The running service's handle over what was started; its `stop()` stops it once. */
function runningService(started: Started, url: string, metricsUrl: string | null): RunningService {
  const { app, cache, clock, source, pool, pipelines, kafka, monitoring, stream, history } = started;
  const { exchanges, simProcess } = source;
  let stopped = false;
  return {
    app,
    cache,
    clock,
    feeds: source.feeds,
    url,
    metricsUrl,
    simulatorUrl: exchanges?.endpoints.deribit?.url ?? simProcess?.endpoints.deribit?.url ?? null,
    simulator: exchanges?.deribit ?? null,
    simulators: { okx: exchanges?.okx ?? null, bybit: exchanges?.bybit ?? null },
    simulatorProcess: simProcess,
    calibration: pool,
    replayDone: source.replayDone,
    settled: () => pipelines.isSettled(),
    kafka,
    monitoring,
    stream,
    history,
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopStarted(started);
    },
  };
}

/** `http://host:port` of a listening app (IPv6 hosts bracketed). */
function baseUrl(app: FastifyInstance, host: string, configuredPort: number): string {
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : configuredPort;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
