import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { pointerToPath } from '../../src/api/errors.js';
import { streamLimitsFromConfig } from '../../src/api/stream/config.js';

describe('configuration', () => {
  it('defaults to the embedded simulated market on 127.0.0.1:8080', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ PORT: 8080, HOST: '127.0.0.1', MARKET_SOURCE: 'simulated', REPLAY_SPEED: 0, STALE_AFTER_S: 30, LOG_LEVEL: 'info' });
  });
  it('rejects a bad value with one line naming the variable and the value', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: '70000', STALE_AFTER_S: '-1' });
    } catch (e) {
      const m = (e as Error).message;
      expect(m).not.toContain('\n');
      expect(m).toContain('PORT');
      expect(m).toContain('"70000"');
      expect(m).toContain('STALE_AFTER_S');
    }
  });
  it('STREAM_FLUSH_MS reaches the stream hub (default 0: each update at the next turn of the event loop); out of range is refused', () => {
    expect(streamLimitsFromConfig(loadConfig({})).flushMs).toBe(0);
    expect(streamLimitsFromConfig(loadConfig({ STREAM_FLUSH_MS: '25' })).flushMs).toBe(25);
    for (const bad of ['-1', '1001', '2.5', 'soon']) expect(() => loadConfig({ STREAM_FLUSH_MS: bad }), bad).toThrow(/STREAM_FLUSH_MS/);
  });
  it('requires REPLAY_FILE in replay', () => {
    expect(() => loadConfig({ MARKET_SOURCE: 'replay' })).toThrow(/REPLAY_FILE/);
    expect(loadConfig({ MARKET_SOURCE: 'replay', REPLAY_FILE: 'x.jsonl', REPLAY_SPEED: '10' }).REPLAY_SPEED).toBe(10);
  });
});

describe('error paths', () => {
  it('turns validator pointers into item paths', () => {
    expect(pointerToPath('/3/strike', true)).toBe('[3].strike');
    expect(pointerToPath('/startTime', false)).toBe('startTime');
    expect(pointerToPath('', true)).toBe('body');
  });
});
