/**
 * The simulated clock (config SIM_START_TIME): starts where it is told, advances at the injected real rate;
 * start-time parsing and its configuration errors.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock, parseStartTime } from '../../src/domain/clock.js';
import { loadConfig } from '../../src/config.js';

describe('SimulatedClock', () => {
  it('starts at the given Unix seconds and advances with the real clock', () => {
    let wall = 1_000_000;
    const c = new SimulatedClock(1_795_766_380, () => wall);
    expect(c.now()).toBe(1_795_766_380);
    wall += 2_500;
    expect(c.now()).toBe(1_795_766_382.5);
    expect(c.nowMs()).toBe(1_795_766_382_500);
  });
  it('rejects a start that is not finite', () => {
    expect(() => new SimulatedClock(Number.NaN)).toThrow(RangeError);
  });
});

describe('parseStartTime', () => {
  it('reads Unix seconds and ISO 8601 with a zone', () => {
    expect(parseStartTime('1795766380')).toBe(1_795_766_380);
    expect(parseStartTime('1795766380.25')).toBe(1_795_766_380.25);
    expect(parseStartTime('2026-11-27T07:59:40Z')).toBe(Date.UTC(2026, 10, 27, 7, 59, 40) / 1000);
    expect(parseStartTime('2026-11-27T09:59:40+02:00')).toBe(Date.UTC(2026, 10, 27, 7, 59, 40) / 1000);
  });
  it('refuses text without a zone or that is no time', () => {
    expect(parseStartTime('2026-11-27T07:59:40')).toBeNull();
    expect(parseStartTime('friday')).toBeNull();
    expect(parseStartTime('')).toBeNull();
  });
});

describe('SIM_START_TIME configuration', () => {
  it('parses to Unix seconds; unset means the wall clock', () => {
    expect(loadConfig({ SIM_START_TIME: '2026-12-31T23:59:30Z' }).SIM_START_TIME).toBe(Date.UTC(2026, 11, 31, 23, 59, 30) / 1000);
    expect(loadConfig({}).SIM_START_TIME).toBeUndefined();
  });
  it('a bad value or a replay start is one clear line naming the variable', () => {
    expect(() => loadConfig({ SIM_START_TIME: 'tomorrow' })).toThrow(/SIM_START_TIME: must be Unix seconds or an ISO 8601/);
    expect(() => loadConfig({ SIM_START_TIME: '1e12' })).toThrow(/SIM_START_TIME/);
    expect(() => loadConfig({ SIM_START_TIME: '5000000000' })).toThrow(/between 2000-01-01 and 2100-01-01/);
    expect(() => loadConfig({ MARKET_SOURCE: 'replay', REPLAY_FILE: 'x.jsonl', SIM_START_TIME: '1795766380' })).toThrow(/SIM_START_TIME: applies only to MARKET_SOURCE=simulated/);
  });
});
