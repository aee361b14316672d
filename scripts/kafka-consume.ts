/**
 * Consumer example: print the service's Kafka messages (docs/events.md "Quick start").
 *
 *   npx tsx scripts/kafka-consume.ts <topic> [--brokers h:p[,h:p]] [--prefix p] [--full] [--from-now] [--max N]
 *
 * <topic>: surface-snapshots | forward-curves | funding-updates | surface-history (the prefix is added).
 * Brokers default to KAFKA_BROKERS, else 127.0.0.1:19092 (`npm run kafka:start`); prefix to KAFKA_TOPIC_PREFIX.
 * Reads from the beginning (or only new messages with --from-now) with a throw-away consumer group, validates each
 * value with the service's zod schema, and prints one line per message (the whole JSON with --full). Ctrl-C stops.
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import {
  ForwardCurveMessageSchema,
  FundingUpdateMessageSchema,
  SurfaceSnapshotMessageSchema,
  TOPICS,
  type ForwardCurveMessage,
  type FundingUpdateMessage,
  type SurfaceSnapshotMessage,
} from '../src/kafka/schemas.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const topicArg = args.find((a, i) => !a.startsWith('--') && !['--brokers', '--prefix', '--max'].includes(args[i - 1] ?? ''));
const logical = Object.values(TOPICS) as string[];
if (!topicArg || !logical.includes(topicArg)) {
  process.stderr.write(`usage: npx tsx scripts/kafka-consume.ts <${logical.join('|')}> [--brokers h:p] [--prefix p] [--full] [--from-now] [--max N]\n`);
  process.exit(2);
}
const brokers = (opt('--brokers') ?? process.env['KAFKA_BROKERS'] ?? '127.0.0.1:19092').split(',').map((s) => s.trim()).filter(Boolean);
const prefix = opt('--prefix') ?? process.env['KAFKA_TOPIC_PREFIX'] ?? '';
const full = args.includes('--full');
const max = Number(opt('--max') ?? Infinity);
const topic = `${prefix}${topicArg}`;

const schema =
  topicArg === TOPICS.funding ? FundingUpdateMessageSchema : topicArg === TOPICS.forwardCurves ? ForwardCurveMessageSchema : SurfaceSnapshotMessageSchema;

/** One-line summary of a validated document. */
function summary(v: unknown): string {
  if (topicArg === TOPICS.funding) {
    const m = v as FundingUpdateMessage;
    return `${new Date(m.timestamp * 1000).toISOString()} interest ${m.interest} per ${m.intervalHours} h`;
  }
  if (topicArg === TOPICS.forwardCurves) {
    const m = v as ForwardCurveMessage;
    return `obs ${new Date(m.observationTimestamp * 1000).toISOString()} seq ${m.sequence} spot ${m.spot} points ${m.points.map((p) => p.forward.toFixed(2)).join(' ')}`;
  }
  const m = v as SurfaceSnapshotMessage;
  const atm = m.expiries.map((e) => {
    const p = e.parameters as { a: number; b: number; rho: number; m: number; sigma: number };
    const w = p.a + p.b * (p.rho * -p.m + Math.sqrt(p.m * p.m + p.sigma * p.sigma)); // raw SVI w(k=0)
    return `${(100 * Math.sqrt(Math.max(w, 0) / e.T)).toFixed(1)}%`;
  });
  return `obs ${new Date(m.observationTimestamp * 1000).toISOString()} seq ${m.sequence} spot ${m.spot} ${m.expiries.length} expiries, ${m.inputCount} quotes, ATM vols ${atm.join(' ')}`;
}

const kafka = new Kafka({ clientId: 'kafka-consume-example', brokers, logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `kafka-consume-example-${randomUUID()}`, maxWaitTimeInMs: 200 });
let count = 0;
const stop = async (code = 0): Promise<never> => {
  await consumer.disconnect().catch(() => {});
  process.exit(code);
};
process.on('SIGINT', () => void stop(0));

await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: !args.includes('--from-now') });
process.stderr.write(`reading ${topic} from ${brokers.join(',')} (Ctrl-C to stop)\n`);
await consumer.run({
  eachMessage: async ({ partition, message }) => {
    if (count >= max) return;
    const key = message.key?.toString('utf8') ?? '';
    const text = message.value?.toString('utf8') ?? '';
    let line: string;
    try {
      const r = schema.safeParse(JSON.parse(text));
      line = r.success ? (full ? JSON.stringify(r.data) : summary(r.data)) : `INVALID ${JSON.stringify(r.error.issues.slice(0, 3))}`;
    } catch (err) {
      line = `NOT JSON (${(err as Error).message})`;
    }
    process.stdout.write(`${key} p${partition}@${message.offset} ${line}\n`);
    if (++count >= max) setImmediate(() => void stop(0)); // not from inside the handler: disconnect waits for it
  },
});
