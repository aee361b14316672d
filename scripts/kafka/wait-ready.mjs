#!/usr/bin/env node
// Readiness probe for the project's local Kafka broker: succeeds only when a REAL Kafka client
// (kafkajs 2.2.4 admin) connects and lists topics (Metadata request), retrying until a deadline.
//
// Usage: node scripts/kafka/wait-ready.mjs <host:port> [timeoutSeconds=60] [pid]
//   host:port       the PLAINTEXT broker listener (never the CONTROLLER port, kafkajs issue #1651)
//   timeoutSeconds  overall deadline in seconds
//   pid             optional: give up at once if this process (the broker JVM) has exited
// Exit codes: 0 ready, 1 timed out or broker process died, 2 bad usage.
// Source: /work/shared/kafka-local.md section 6.
import { Kafka, logLevel } from 'kafkajs';

const [broker, timeoutArg = '60', pidArg] = process.argv.slice(2);
if (!broker || !/^[^:\s]+:\d+$/.test(broker) || !(Number(timeoutArg) > 0)) {
  console.error('usage: node scripts/kafka/wait-ready.mjs <host:port> [timeoutSeconds] [pid]');
  process.exit(2);
}
const deadline = Date.now() + Number(timeoutArg) * 1000;
const pid = pidArg ? Number(pidArg) : undefined;

/** True when process `p` exists (signal 0 probes without sending anything). */
function alive(p) {
  try {
    process.kill(p, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

const kafka = new Kafka({
  clientId: 'kafka-wait-ready',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 1000,
  requestTimeout: 3000,
  retry: { retries: 0 },
});

let lastError = 'no attempt made';
for (;;) {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
    await admin.disconnect();
    process.exit(0);
  } catch (e) {
    lastError = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    await admin.disconnect().catch(() => {});
  }
  if (pid !== undefined && !alive(pid)) {
    console.error(`wait-ready: broker process ${pid} exited before ${broker} answered (last error: ${lastError})`);
    process.exit(1);
  }
  if (Date.now() > deadline) {
    console.error(`wait-ready: ${broker} did not answer within ${timeoutArg} s (last error: ${lastError})`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 250));
}
