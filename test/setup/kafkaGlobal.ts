/**
 * vitest globalSetup: one real Apache Kafka broker for the whole test run, shared by every test file.
 *
 * Wire it in vitest.config.ts (`test.globalSetup: ['test/setup/kafkaGlobal.ts']`, ideally only in a
 * project whose include covers the Kafka integration tests, so unit-only runs do not start a JVM).
 * setup() resolves brokers exactly like `ensureKafka()` minus the inject step: `KAFKA_BROKERS` if set,
 * else a private broker via scripts/kafka/start.sh on the first free pair from KAFKA_TEST_PORT (19192/19193).
 * It provides the list as `inject('kafkaBrokers')` (null = no Java, tests skip; REQUIRE_KAFKA=1 throws
 * instead); `ensureKafka()` in test files picks it up and returns a no-op `stop()`. teardown() stops the broker.
 */
import type { TestProject } from 'vitest/node';
import { brokersFromEnv, startLocalKafka, type KafkaHandle } from './kafka.js';

let handle: KafkaHandle | null = null;

/** Starts (or adopts via KAFKA_BROKERS) the broker and provides `kafkaBrokers` to all test files. */
export async function setup(project: TestProject): Promise<void> {
  const fromEnv = brokersFromEnv();
  handle = fromEnv ? { brokers: fromEnv, stop: async () => {} } : await startLocalKafka();
  project.provide('kafkaBrokers', handle ? handle.brokers : null);
}

/** Stops the broker started by setup() (no-op for KAFKA_BROKERS or when skipped). */
export async function teardown(): Promise<void> {
  const h = handle;
  handle = null;
  await h?.stop();
}
