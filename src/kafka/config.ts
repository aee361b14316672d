/**
 * Kafka and role settings of the service configuration (spread into src/config.ts's ConfigSchema; documented in
 * docs/events.md "Configuration"). Values come from the environment as strings; zod coerces and validates them.
 */
import { z } from 'zod';

/** `host:port` with a non-empty host and a port 1..65535. */
const HOST_PORT = /^[^\s:,]+:(\d{1,5})$/;

/** The process roles (docs/events.md "API replicas"). */
export const ROLES = ['all', 'api', 'calibrator'] as const;
export type Role = (typeof ROLES)[number];

/** Zod shape of the Kafka/role variables. */
export const KAFKA_CONFIG_SHAPE = {
  /** Comma list of bootstrap brokers `host:port`; unset = no Kafka. */
  KAFKA_BROKERS: z
    .string()
    .refine(
      (s) => s.split(',').map((x) => x.trim()).filter((x) => x.length > 0).every((x) => HOST_PORT.test(x) && Number(HOST_PORT.exec(x)![1]) >= 1 && Number(HOST_PORT.exec(x)![1]) <= 65535),
      'must be a comma list of host:port',
    )
    .optional(),
  /** kafkajs client id (and stem of the replica's consumer group ids). */
  KAFKA_CLIENT_ID: z.string().min(1).default('vol-surface-service'),
  /** Prepended to every topic name (tests use a unique one). */
  KAFKA_TOPIC_PREFIX: z.string().default(''),
  /** Partitions of the topics the service creates. */
  KAFKA_PARTITIONS: z.coerce.number().int().min(1).max(10_000).default(3),
  /** Replication factor of the topics the service creates. */
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(32).default(1),
  /** Funding points waiting for the broker above which the alarm is raised (nothing is dropped). */
  KAFKA_FUNDING_QUEUE_ALARM: z.coerce.number().int().min(1).default(100_000),
  /**
   * Hours the `surface-history` topic keeps (retention.ms of the topic when the service creates it; default 25, the
   * 24 h changes). Longer (e.g. 168) lets an API replica rebuild that much of its history store from the topic.
   */
  KAFKA_HISTORY_RETENTION_H: z.coerce.number().positive().max(24 * 3650).default(25),
  /** all: calibrate, publish, serve REST; calibrator: calibrate and publish (health only); api: consume and serve REST. */
  ROLE: z.enum(ROLES).default('all'),
};

/** The parsed Kafka/role settings. */
export interface KafkaRoleConfig {
  readonly KAFKA_BROKERS?: string | undefined;
  readonly KAFKA_CLIENT_ID: string;
  readonly KAFKA_TOPIC_PREFIX: string;
  readonly KAFKA_PARTITIONS: number;
  readonly KAFKA_REPLICATION_FACTOR: number;
  readonly KAFKA_FUNDING_QUEUE_ALARM: number;
  readonly KAFKA_HISTORY_RETENTION_H: number;
  readonly ROLE: Role;
}

/** Cross-field rule: ROLE=api reads everything from Kafka, so it needs KAFKA_BROKERS (message for ConfigError). */
export function kafkaConfigIssue(c: Pick<KafkaRoleConfig, 'ROLE' | 'KAFKA_BROKERS'>): { path: string; message: string } | null {
  if (c.ROLE === 'api' && !parseBrokers(c.KAFKA_BROKERS)) return { path: 'KAFKA_BROKERS', message: 'is required when ROLE=api' };
  return null;
}

/** Broker list of KAFKA_BROKERS ("h1:p1, h2:p2"); undefined when unset or blank. */
export function parseBrokers(value: string | undefined): string[] | undefined {
  const list = (value ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  return list.length > 0 ? list : undefined;
}
