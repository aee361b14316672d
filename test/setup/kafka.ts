/**
 * Test helper: a REAL Apache Kafka broker for vitest integration tests.
 *
 * Order of preference (first that applies wins):
 *  1. `KAFKA_BROKERS` env (comma-separated host:port list, e.g. a broker started by `.ci/run` or
 *     `npm run kafka:start`): used as is, `stop()` is a no-op.
 *  2. The broker provided by the vitest globalSetup `test/setup/kafkaGlobal.ts` (`inject('kafkaBrokers')`),
 *     when that globalSetup is wired: shared by the whole run, `stop()` is a no-op (teardown stops it).
 *  3. Otherwise a private broker started with `scripts/kafka/start.sh` (Apache Kafka 3.9.1, KRaft, jars from
 *     Maven Central, recipe /work/shared/kafka-local.md) on the first free test port pair from
 *     `KAFKA_TEST_PORT` (default 19192, controller 19193; then 19194/19195, ...), so a developer's broker on
 *     19092 is never touched and parallel workers / parallel vitest runs each get their own broker.
 *     `stop()` stops it (scripts/kafka/stop.sh) and deletes its data dir and log. A watchdog started with
 *     `KAFKA_OWNER_PID` also stops it if this process dies without calling `stop()`.
 *
 * When Java (or Maven with no cached jars) is missing: with `REQUIRE_KAFKA=1` it throws, so CI fails instead
 * of silently skipping; otherwise it prints a loud "KAFKA TESTS SKIPPED" banner and returns null, and the
 * test file uses `describe.skipIf(!kafka)`.
 *
 * Usage in a test file:
 * ```ts
 * const kafka = await ensureKafka();
 * describe.skipIf(!kafka)('...', () => {
 *   afterAll(() => kafka?.stop());
 *   // new Kafka({ brokers: kafka!.brokers, ... })
 * });
 * ```
 */
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Broker list from test/setup/kafkaGlobal.ts; null when that setup found no Java (tests skip). */
    kafkaBrokers: string[] | null;
  }
}

/** A reachable Kafka cluster for a test file or a whole test run. */
export interface KafkaHandle {
  /** Bootstrap brokers as `host:port` (PLAINTEXT listener, never the KRaft controller port). */
  brokers: string[];
  /** Stops the broker if this handle started it (idempotent); no-op for an external or shared broker. */
  stop(): Promise<void>;
}

/** Absolute path of the repository root (this file is test/setup/kafka.ts). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const START_SH = fileURLToPath(new URL('../../scripts/kafka/start.sh', import.meta.url));
const STOP_SH = fileURLToPath(new URL('../../scripts/kafka/stop.sh', import.meta.url));

/** Exit codes of scripts/kafka/start.sh (see scripts/kafka/common.sh). */
const EXIT_PREREQ = 3;
const EXIT_BUSY = 4;
/** How many client/controller port pairs (step 2) are tried before giving up. */
const PORT_ATTEMPTS = 20;

/** Thrown (or turned into a skip) when the machine cannot run the broker: no java, no mvn and no cached jars. */
export class KafkaUnavailableError extends Error {
  override readonly name = 'KafkaUnavailableError';
}

interface ScriptResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a bash script with extra env; resolves with its exit code and output (never rejects on exit code). */
function runScript(script: string, env: Record<string, string>): Promise<ScriptResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [script],
      { cwd: REPO_ROOT, env: { ...process.env, ...env }, timeout: 10 * 60_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          reject(new Error(`${script} could not run: ${error.message}\n${stderr}`));
          return;
        }
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}

/** Parses `KAFKA_BROKERS` ("h1:p1,h2:p2"); returns undefined when unset or blank. */
export function brokersFromEnv(value = process.env['KAFKA_BROKERS']): string[] | undefined {
  const brokers = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return brokers.length > 0 ? brokers : undefined;
}

/** True when `java -version` runs (the broker's only hard system dependency besides node). */
export function javaAvailable(): boolean {
  const r = spawnSync('java', ['-version'], { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

/**
 * With REQUIRE_KAFKA=1: throws KafkaUnavailableError(reason). Otherwise prints a loud skip banner on stderr
 * and returns null.
 */
function skipOrThrow(reason: string): null {
  if (process.env['REQUIRE_KAFKA'] === '1') {
    throw new KafkaUnavailableError(`REQUIRE_KAFKA=1 but the Kafka broker cannot run here: ${reason}`);
  }
  const line = '#'.repeat(100);
  console.warn(
    `\n${line}\n### KAFKA TESTS SKIPPED: ${reason}\n### Install a JRE (java 17) and Maven, or set KAFKA_BROKERS=host:port; ` +
      `set REQUIRE_KAFKA=1 to make this an error.\n${line}\n`,
  );
  return null;
}

/**
 * Starts a private broker with scripts/kafka/start.sh on the first free port pair from `basePort`
 * (client port p, controller p+1; p += 2 on "busy"). The broker is owned by this process
 * (`KAFKA_OWNER_PID`): it is stopped by the returned `stop()` or, failing that, when this process exits.
 *
 * @returns the handle, or null when java/mvn are missing and REQUIRE_KAFKA is not 1.
 * @throws KafkaUnavailableError (REQUIRE_KAFKA=1 and prerequisites missing); Error when the broker does not
 *   come up (message holds start.sh's output, including the broker log tail) or no port pair is free.
 */
export async function startLocalKafka(basePort = Number(process.env['KAFKA_TEST_PORT'] ?? 19192)): Promise<KafkaHandle | null> {
  if (!javaAvailable()) return skipOrThrow('no java on PATH (the Apache Kafka broker is a JVM program)');
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = basePort + 2 * attempt;
    const env = {
      KAFKA_PORT: String(port),
      KAFKA_CONTROLLER_PORT: String(port + 1),
      KAFKA_EXCLUSIVE: '1',
      KAFKA_OWNER_PID: String(process.pid),
    };
    const r = await runScript(START_SH, env);
    if (r.code === EXIT_BUSY) continue;
    if (r.code === EXIT_PREREQ) return skipOrThrow(r.stderr.trim());
    if (r.code !== 0) {
      throw new Error(`scripts/kafka/start.sh failed (exit ${r.code}) on port ${port}:\n${r.stdout}${r.stderr}`);
    }
    let stopping: Promise<void> | undefined;
    return {
      brokers: [`127.0.0.1:${port}`],
      stop: () =>
        (stopping ??= runScript(STOP_SH, { KAFKA_PORT: String(port), KAFKA_CLEAN: '1' }).then((s) => {
          if (s.code !== 0) throw new Error(`scripts/kafka/stop.sh failed (exit ${s.code}):\n${s.stdout}${s.stderr}`);
        })),
    };
  }
  throw new Error(`no free Kafka test port pair in ${basePort}..${basePort + 2 * PORT_ATTEMPTS - 1}`);
}

/** Broker list from the globalSetup (`undefined` outside a vitest worker or when the globalSetup is not wired). */
function injectedBrokers(): string[] | null | undefined {
  try {
    return inject('kafkaBrokers');
  } catch {
    return undefined;
  }
}

/**
 * A real Kafka broker for the calling test file: `KAFKA_BROKERS`, else the globalSetup's broker, else a
 * private broker started now (see the module docstring). Call it at the top level of the test file
 * (`const kafka = await ensureKafka()`) so `describe.skipIf(!kafka)` can use the result.
 *
 * @returns the handle, or null (tests skip, loud banner printed) when Java is missing and REQUIRE_KAFKA != 1.
 * @throws KafkaUnavailableError when REQUIRE_KAFKA=1 and the broker cannot run; Error when it fails to start.
 */
export async function ensureKafka(): Promise<KafkaHandle | null> {
  const fromEnv = brokersFromEnv();
  if (fromEnv) return { brokers: fromEnv, stop: async () => {} };
  const injected = injectedBrokers();
  if (injected === null) return null; // globalSetup already reported the skip (or threw under REQUIRE_KAFKA=1)
  if (injected && injected.length > 0) return { brokers: injected, stop: async () => {} };
  return startLocalKafka();
}
