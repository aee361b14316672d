/**
 * Start the whole service in-process for integration tests: config from a partial env, silent
 * logs, port 0 (any free port), the embedded simulators on 127.0.0.1 (Deribit only unless the env
 * names SOURCES), on the test file's fixed simulated timeline (./simClock.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService, type ServiceOverrides } from '../../src/service.js';
import { simStartEnv } from './simClock.js';

export async function startTestService(env: Record<string, string> = {}, overrides: ServiceOverrides = {}): Promise<RunningService> {
  // Tests connect only Deribit unless they ask for more (SOURCES): the default service connects all three.
  // Overload shedding off: on a loaded test machine a stalled event loop would answer 503 to tests that are
  // not about it (test/security/security.test.ts tests the shedding itself).
  // The simulated market runs on the test file's fixed timeline (./simClock.ts), never on the wall clock.
  const simulated = (env.MARKET_SOURCE ?? 'simulated') === 'simulated';
  // every test service records into a history store of its own (a temporary folder, removed at stop)
  const historyDir = env.HISTORY_DIR === undefined ? mkdtempSync(join(tmpdir(), 'volsurf-history-')) : null;
  const config = loadConfig({
    ...(historyDir ? { HISTORY_DIR: historyDir } : {}),
    PORT: '0',
    LOG_LEVEL: 'silent',
    CALIBRATION_THROTTLE_MS: '150',
    SOURCES: 'DERIBIT',
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
    // the simulators in the test's process (SIMULATOR_PROCESS=inprocess) so that tests reach their fault hooks
    SIMULATOR_PROCESS: 'inprocess',
    ...(simulated ? simStartEnv() : {}),
    ...env,
  });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const svc = await startService(config, logger, overrides);
  if (!historyDir) return svc;
  return {
    ...svc,
    async stop() {
      await svc.stop();
      rmSync(historyDir, { recursive: true, force: true });
    },
  };
}

/**
 * The REST base URL of a service started in a child process (stdout and stderr piped): the first `http://` url of
 * its JSON log (src/main.ts; feed urls are ws://).
 * @throws Error (rejects) when it exits first or does not listen within `timeoutMs`, with the end of its output
 */
export function listeningUrl(child: ChildProcess, what = 'child service', timeoutMs = 120_000): Promise<string> {
  const lines: string[] = [];
  child.stderr!.on('data', (d: Buffer) => lines.push(d.toString('utf8')));
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`${what} did not listen within ${timeoutMs / 1000} s:\n${lines.join('').slice(-3000)}`)), timeoutMs);
    child.on('exit', (code) => reject(new Error(`${what} exited with ${code}:\n${lines.join('').slice(-3000)}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      try {
        const j = JSON.parse(line) as { url?: string };
        if (j.url?.startsWith('http://')) {
          clearTimeout(guard);
          resolve(j.url);
        }
      } catch {
        /* not JSON */
      }
    });
  });
}

/** Poll `check` every `everyMs` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs: number, what: string, everyMs = 100): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** fetch JSON helper: returns status and parsed body. */
export async function http(method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
