/**
 * SIMULATOR_PROCESS=separate (the default of simulated mode, issue 12 item 3): the three simulated exchanges run
 * in their own child process; the service connects to them over real sockets, serves every pair (with the
 * market pre-run through 1 h of history in the child), reports the child's figures apart from its own,
 * and stops the child with itself.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { simStartEnv, testNowS } from '../helpers/simClock.js';

let svc: RunningService;

beforeAll(async () => {
  svc = await startTestService({ SIMULATOR_PROCESS: 'separate', SOURCES: 'DERIBIT,OKX,BYBIT', SIM_HISTORY_HOURS: '1' }, { simulator: { optionUpdatesPerSecond: 2 } });
  await waitFor(async () => (await http('GET', `${svc.url}/ready`)).status === 200, 240_000, '/ready 200', 500);
}, 300_000);

afterAll(async () => {
  await svc?.stop();
});

describe('simulated exchanges in their own process', () => {
  it('runs them in a child process, with no simulator object in the service process', () => {
    const p = svc.simulatorProcess!;
    expect(p).not.toBeNull();
    expect(p.pid).not.toBe(process.pid);
    expect(svc.simulator).toBeNull();
    expect(svc.simulators).toEqual({ okx: null, bybit: null });
    expect(svc.simulatorUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/ws\/api\/v2$/);
    expect(p.endpoints.okx!.restUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+/);
    expect(p.endpoints.bybit!.optionUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+/);
  });

  it('serves every pair of the three exchanges', async () => {
    const ready = await http('GET', `${svc.url}/ready`);
    expect(ready.body.missing).toEqual([]);
    expect(ready.body.pairs.length).toBe(9);
  });

  it("the child runs on the service's simulated clock (SIM_START_TIME crosses the process boundary)", async () => {
    // the fixed test timeline is days away from the wall clock; exchange timestamps and listings follow it
    for (const source of ['DERIBIT', 'OKX', 'BYBIT']) {
      const pair = source === 'BYBIT' ? 'baseCurrency=BTC&quoteCurrency=USDC' : 'baseCurrency=BTC&quoteCurrency=USD';
      const r = await http('GET', `${svc.url}/api/v1/global/data/surface?source=${source}&${pair}&volatilityModel=SVI`);
      expect(r.status, source).toBe(200);
      expect(Math.abs(r.body.observationTimestamp - testNowS()), source).toBeLessThan(60);
      expect(r.body.expiries[0].expirationTimestamp, source).toBeGreaterThan(testNowS());
    }
  });

  it("reports the child's own CPU, memory and counters (it is the one publishing the market)", async () => {
    const s1 = await svc.simulatorProcess!.stats();
    await new Promise((r) => setTimeout(r, 1_500));
    const s2 = await svc.simulatorProcess!.stats();
    expect(s2.memory.rss).toBeGreaterThan(10 * 1024 * 1024);
    expect(s2.cpu.user + s2.cpu.system).toBeGreaterThan(s1.cpu.user + s1.cpu.system);
    const d1 = s1.deribit as { notificationsSent: number };
    const d2 = s2.deribit as { notificationsSent: number };
    expect(d2.notificationsSent).toBeGreaterThan(d1.notificationsSent);
    expect(s2.okx).not.toBeNull();
    expect(s2.bybit).not.toBeNull();
  });

  it('stops the child with the service', async () => {
    const pid = svc.simulatorProcess!.pid;
    await svc.stop();
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(), 10_000, 'simulator process exit');
    expect(alive()).toBe(false);
  });
});

describe('npm start on a port already taken', () => {
  it('exits with code 2 and one clear line, and leaves no simulator process behind', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        cwd: fileURLToPath(new URL('../../', import.meta.url)),
        env: { ...process.env, ...simStartEnv(), PORT: String(port), HOST: '127.0.0.1', LOG_PRETTY: 'false', SIM_HISTORY_HOURS: '0', SIMULATOR_PROCESS: 'separate', HISTORY_DIR: 'off' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code, stderr).toBe(2);
      const lines = stderr.split('\n').filter((l) => l.trim() !== '' && !l.includes('npm warn'));
      expect(lines).toEqual([`cannot listen on 127.0.0.1:${port}: already in use (EADDRINUSE); choose another PORT/HOST (or METRICS_PORT/METRICS_HOST)`]);
      // the simulators' child process had started (its pid is logged) and is gone with the service
      const started = stdout
        .split('\n')
        .map((l) => {
          try {
            return JSON.parse(l) as { msg?: string; pid?: number };
          } catch {
            return {};
          }
        })
        .find((j) => j.msg === 'simulated exchanges listening in their own process');
      expect(started?.pid).toBeGreaterThan(0);
      const alive = () => {
        try {
          process.kill(started!.pid!, 0);
          return true;
        } catch {
          return false;
        }
      };
      await waitFor(() => !alive(), 10_000, 'simulator process exit');
    } finally {
      blocker.close();
    }
  }, 120_000);
});
