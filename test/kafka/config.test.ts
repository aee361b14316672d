/**
 * Kafka and ROLE variables of the service configuration (src/kafka/config.ts spread into src/config.ts):
 * defaults, the broker list format, and ROLE=api needing KAFKA_BROKERS. No broker needed.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { followedPairs, followedSources } from '../../src/config.js';
import { parseBrokers } from '../../src/kafka/config.js';

describe('Kafka configuration', () => {
  it('defaults: no Kafka, ROLE=all, 3 partitions, replication 1, empty prefix', () => {
    const c = loadConfig({});
    expect(c.KAFKA_BROKERS).toBeUndefined();
    expect([c.ROLE, c.KAFKA_PARTITIONS, c.KAFKA_REPLICATION_FACTOR, c.KAFKA_TOPIC_PREFIX, c.KAFKA_CLIENT_ID, c.KAFKA_FUNDING_QUEUE_ALARM]).toEqual([
      'all', 3, 1, '', 'vol-surface-service', 100_000,
    ]);
  });

  it('parses a comma list of host:port and rejects anything else with one line naming the variable', () => {
    const c = loadConfig({ KAFKA_BROKERS: '127.0.0.1:19092, kafka-2:9092', ROLE: 'api', KAFKA_PARTITIONS: '6', KAFKA_TOPIC_PREFIX: 'dev.' });
    expect(parseBrokers(c.KAFKA_BROKERS)).toEqual(['127.0.0.1:19092', 'kafka-2:9092']);
    expect([c.ROLE, c.KAFKA_PARTITIONS, c.KAFKA_TOPIC_PREFIX]).toEqual(['api', 6, 'dev.']);
    for (const bad of ['127.0.0.1', 'host:port', 'h:0', 'h:70000', 'a:1,,b']) {
      expect(() => loadConfig({ KAFKA_BROKERS: bad }), bad).toThrow(/^invalid configuration: KAFKA_BROKERS: must be a comma list of host:port/);
    }
    expect(() => loadConfig({ KAFKA_BROKERS: 'h:0' })).toThrow(ConfigError);
    expect(parseBrokers('a:1,,b:2 ')).toEqual(['a:1', 'b:2']); // empty items are ignored
  });

  it('ROLE=api needs KAFKA_BROKERS; an unknown role is refused', () => {
    expect(() => loadConfig({ ROLE: 'api' })).toThrow('invalid configuration: KAFKA_BROKERS: is required when ROLE=api');
    expect(() => loadConfig({ ROLE: 'replica' })).toThrow(/^invalid configuration: ROLE: /);
    expect(loadConfig({ ROLE: 'calibrator' }).ROLE).toBe('calibrator');
  });

  it('PAIRS: SOURCE:BASE/QUOTE list (aliases, any case, duplicates once) narrowing the pairs and sources followed', () => {
    const c = loadConfig({ PAIRS: 'deribit:btc/usd, XCHG_B:ETH/USD,DERIBIT:BTC/USD' });
    const labels = (ps: ReturnType<typeof followedPairs>) => ps.map((p) => `${p.source}:${p.pair.base}/${p.pair.quote}`);
    expect(labels(followedPairs(c))).toEqual(['DERIBIT:BTC/USD', 'OKX:ETH/USD']);
    expect(followedSources(c)).toEqual(['DERIBIT', 'OKX']);
    // default: every pair of SOURCES
    const d = loadConfig({ SOURCES: 'OKX' });
    expect(d.PAIRS).toBeUndefined();
    expect(labels(followedPairs(d))).toEqual(['OKX:BTC/USD', 'OKX:ETH/USD']);
  });

  it('PAIRS: a bad entry is refused with one line naming it and what is allowed', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ PAIRS: 'DERIBIT-BTC/USD' }, /PAIRS: "DERIBIT-BTC\/USD" is not SOURCE:BASE\/QUOTE \(e\.g\. DERIBIT:BTC\/USD\)/],
      [{ PAIRS: 'KRAKEN:BTC/USD' }, /PAIRS: "KRAKEN:BTC\/USD": unknown source KRAKEN \(expected DERIBIT, OKX, BYBIT\)/],
      [{ PAIRS: 'OKX:SOL/USDC' }, /PAIRS: "OKX:SOL\/USDC": OKX has no pair SOL\/USDC \(it lists BTC\/USD, ETH\/USD\)/],
      [{ PAIRS: ' , ' }, /PAIRS: must name at least one SOURCE:BASE\/QUOTE pair/],
      [{ PAIRS: 'OKX:BTC/USD', SOURCES: 'DERIBIT' }, /PAIRS: names OKX:BTC\/USD but SOURCES is DERIBIT/],
      [{ PAIRS: 'DERIBIT:BTC/USD', MARKET_SOURCE: 'replay', REPLAY_FILE: 'x.jsonl' }, /PAIRS: is not supported with MARKET_SOURCE=replay/],
    ];
    for (const [env, re] of cases) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(re);
    }
  });
});
