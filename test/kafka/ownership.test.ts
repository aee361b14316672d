/**
 * Pair ownership of sharded calibrators (src/kafka/ownership.ts) on a REAL Apache Kafka broker
 * (test/setup/kafka.ts), without any service around it:
 * - two members with overlapping PAIRS: every pair is owned by at most one member at every sampled instant
 *   (sampled every 10 ms through rebalances), each pair a member names is owned by someone, and the first owner
 *   keeps its pairs when a second member joins (sticky assignment);
 * - a member that leaves (close) hands the shared pairs to the other at once (hot standby); a pair only it named
 *   is owned by nobody;
 * - the assignments topic has one partition per supported pair.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';
import { ownershipNames, PairOwnership } from '../../src/kafka/ownership.js';
import { ALL_SOURCE_PAIRS, parseSourcePairs, type SourcePair } from '../../src/domain/markets.js';
import { eventually } from './helpers.js';

const kafka = await ensureKafka();

function pairs(s: string): readonly SourcePair[] {
  const r = parseSourcePairs(s);
  if ('error' in r) throw new Error(r.error);
  return r.pairs;
}

describe.skipIf(!kafka)('calibrator pair ownership through a Kafka consumer group (real broker)', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-own-${randomUUID().slice(0, 8)}.`;
  const members: PairOwnership[] = [];

  afterAll(async () => {
    for (const m of members) await m.close();
    const admin = new Kafka({ clientId: 'own-test', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [ownershipNames(prefix).topic] }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('one owner per pair at every instant, sticky on join, handed over on leave', async () => {
    const client = new Kafka({ clientId: 'own-test', brokers, logLevel: logLevel.NOTHING });
    const a = new PairOwnership({ kafka: client, prefix, pairs: pairs('DERIBIT:BTC/USD,DERIBIT:ETH/USD,OKX:BTC/USD') });
    const b = new PairOwnership({ kafka: client, prefix, pairs: pairs('DERIBIT:ETH/USD,OKX:BTC/USD,BYBIT:BTC/USDC') });
    members.push(a, b);
    let samples = 0;
    const both: string[] = [];
    const sampler = setInterval(() => {
      samples++;
      for (const p of ALL_SOURCE_PAIRS) if (a.owns(p.source, p.pair) && b.owns(p.source, p.pair)) both.push(`${p.source}:${p.pair.base}/${p.pair.quote}`);
    }, 10);
    try {
      a.start();
      await eventually(() => a.stats().owned.length === 3, 60_000, 'A owns its three pairs');
      expect(a.stats().owned).toEqual(['DERIBIT:BTC/USD', 'DERIBIT:ETH/USD', 'OKX:BTC/USD']);

      b.start();
      await eventually(() => b.stats().assigned && b.stats().owned.length === 1 && a.stats().owned.length === 3, 60_000, 'B joined');
      // sticky: A keeps the shared pairs; B gets only what nobody else holds
      expect(b.stats().owned).toEqual(['BYBIT:BTC/USDC']);
      expect(b.stats().standby).toEqual(['DERIBIT:ETH/USD', 'OKX:BTC/USD']);
      const generations = a.stats().generations;
      expect(generations).toBeGreaterThanOrEqual(2); // A went through the rebalance B's join caused

      const t0 = Date.now();
      await a.close(); // LeaveGroup: B takes the shared pairs at its next heartbeat
      await eventually(() => b.stats().owned.length === 3, 30_000, 'B took over the shared pairs');
      const handoverMs = Date.now() - t0;
      expect(b.stats().owned).toEqual(['DERIBIT:ETH/USD', 'OKX:BTC/USD', 'BYBIT:BTC/USDC']);
      expect(b.owns('DERIBIT', { base: 'BTC', quote: 'USD' })).toBe(false); // only A named it: nobody owns it now
      console.log(`[ownership] hand-over after LeaveGroup: ${handoverMs} ms; ${samples} samples, ${both.length} with a pair owned twice`);
    } finally {
      clearInterval(sampler);
    }
    expect(samples).toBeGreaterThan(50);
    expect(both).toEqual([]);

    const admin = client.admin();
    await admin.connect();
    expect((await admin.fetchTopicOffsets(ownershipNames(prefix).topic)).length).toBe(ALL_SOURCE_PAIRS.length);
    await admin.disconnect();
  }, 180_000);

  it('a pure standby (every pair it names is held) stays in the group without churn, and takes over on leave', async () => {
    const client = new Kafka({ clientId: 'own-test', brokers, logLevel: logLevel.NOTHING });
    const p2 = `${prefix}standby.`;
    const a = new PairOwnership({ kafka: client, prefix: p2, pairs: pairs('DERIBIT:SOL/USDC') });
    const c = new PairOwnership({ kafka: client, prefix: p2, pairs: pairs('DERIBIT:SOL/USDC') });
    members.push(a, c);
    a.start();
    await eventually(() => a.stats().owned.length === 1, 60_000, 'A owns SOL/USDC');
    const genBeforeC = a.stats().generations;
    c.start();
    await eventually(() => c.stats().assigned, 60_000, 'C joined');
    // C's join is a rebalance for A too; A sees its new generation at its next heartbeat, possibly after C's
    await eventually(() => a.stats().generations > genBeforeC, 30_000, 'A went through the rebalance C\'s join caused');
    expect(c.stats().owned).toEqual([]);
    expect(c.stats().standby).toEqual(['DERIBIT:SOL/USDC']);
    // two session timeouts (6 s each): a standby that did not heartbeat would be evicted and rejoin, a rebalance
    // that would show as a new generation on A
    const gen = a.stats().generations;
    await new Promise((r) => setTimeout(r, 13_000));
    expect(a.stats().generations).toBe(gen);
    expect(a.stats().owned).toEqual(['DERIBIT:SOL/USDC']);
    expect(c.stats().owned).toEqual([]);
    await a.close();
    await eventually(() => c.stats().owned.length === 1, 30_000, 'C took SOL/USDC over');
    const admin = client.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [ownershipNames(p2).topic] }).catch(() => {});
    await admin.disconnect();
  }, 120_000);
});
