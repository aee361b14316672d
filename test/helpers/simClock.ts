/**
 * The simulated market's timeline in tests: every test file runs the simulators and the service on a clock
 * that starts at a FIXED time instead of the wall clock, so the listed expiries, the distance to the first
 * one and the funding hours that pass are the same at whatever hour the suite runs (issue 14 section 1).
 *
 * The default start, Friday 2026-11-27 07:59:40 UTC, holds the hard cases on purpose: Deribit's daily,
 * weekly AND monthly 08:00 expiry is 20 s away and passes during the test, and the 08:00 funding settlement
 * of OKX and Bybit (8-hourly) and Deribit (hourly) happens during it. `TEST_SIM_START_TIME` (Unix seconds or
 * ISO 8601 with a zone) picks another start: `scripts/clock-matrix.sh` runs the integration suites at several.
 *
 * One timeline per test file (module instance): services and simulators started later in the same file
 * continue it, so they agree with each other.
 */
import { parseStartTime } from '../../src/domain/clock.js';

/** Default simulated start of a test file, Unix seconds: 2026-11-27T07:59:40Z (a Friday, month-end expiry at 08:00). */
export const DEFAULT_TEST_SIM_START_S = Date.UTC(2026, 10, 27, 7, 59, 40) / 1000;

function startFromEnv(): number {
  const v = process.env.TEST_SIM_START_TIME;
  if (v === undefined || v === '') return DEFAULT_TEST_SIM_START_S;
  const s = parseStartTime(v);
  if (s === null) throw new Error(`TEST_SIM_START_TIME: not Unix seconds or ISO 8601 with a zone: ${JSON.stringify(v)}`);
  return s;
}

/** The simulated start of this test file, Unix seconds. */
export const TEST_SIM_START_S = startFromEnv();
const loadedAtMs = Date.now();

/** Current time on this file's simulated timeline, Unix seconds. */
export function testNowS(): number {
  return TEST_SIM_START_S + (Date.now() - loadedAtMs) / 1000;
}

/** Current time on this file's simulated timeline, Unix ms (the simulators' `clock` option). */
export function testClockMs(): number {
  return testNowS() * 1000;
}

/** `SIM_START_TIME` for a service started now on this file's timeline. */
export function simStartEnv(): { SIM_START_TIME: string } {
  return { SIM_START_TIME: testNowS().toFixed(3) };
}
