/**
 * The production build (scripts/build.mjs, run by `npm start`): the service compiled to JavaScript runs with the node
 * flags of the start script and without tsx, its simulators' process and calibration worker started from the built
 * files (src/domain/moduleFile.ts siblingModule), and serves: /ready, a calibrated surface, the dashboard's page.
 * Real processes, real sockets on 127.0.0.1, the simulated timeline of test/helpers/simClock.ts.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { listeningUrl } from '../helpers/service.js';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startNodeFlags } from '../../scripts/startFlags.mjs';
import { simStartEnv } from '../helpers/simClock.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = '.cache/build-test';
let child: ChildProcess | null = null;

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(join(ROOT, OUT), { recursive: true, force: true });
});

describe('the production build', () => {
  it('compiles every module, and the built service runs with the start flags, without tsx, and serves', async () => {
    execFileSync(process.execPath, ['scripts/build.mjs', OUT], { cwd: ROOT, stdio: 'pipe' });
    for (const f of ['src/main.js', 'streams/calibrationWorker.js', 'streams/workerBoot.mjs', 'adapters/simulator/process.js', 'src/dashboard/public/index.html']) {
      expect(existsSync(join(ROOT, OUT, f)), f).toBe(true);
    }
    // no module of the build asks for TypeScript at run time
    expect(readFileSync(join(ROOT, OUT, 'streams/calibrationPool.js'), 'utf8')).not.toMatch(/calibrationWorker\.ts/);
    const flags = startNodeFlags();
    expect(flags).toContain('--heap-growing-percent=100');
    const c = spawn(process.execPath, [...flags, join(OUT, 'src/main.js')], {
      cwd: ROOT,
      env: { ...process.env, ...simStartEnv(), PORT: '0', HOST: '127.0.0.1', LOG_PRETTY: 'false', SIM_HISTORY_HOURS: '0', SIMULATOR_PROCESS: 'separate', NODE_OPTIONS: '', HISTORY_DIR: join(ROOT, OUT, 'history') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = c;
    const url = await listeningUrl(c, 'built service');
    // every pair calibrated (the worker runs dist/streams/calibrationWorker.js, the simulators dist/.../process.js)
    const until = Date.now() + 180_000;
    let ready = await fetch(`${url}/ready`);
    while (ready.status !== 200 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 500));
      ready = await fetch(`${url}/ready`);
    }
    expect(ready.status, await ready.clone().text()).toBe(200);
    // the first surface after /ready may predate the feed's later subscription batches (3 BTC expiries seen on a
    // loaded machine): poll until the whole listing is fitted
    const surfaceUrl = `${url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`;
    let body = { expiries: [] as Array<{ forwardPrice: number }> };
    const listedBy = Date.now() + 60_000;
    for (;;) {
      const surface = await fetch(surfaceUrl);
      expect(surface.status).toBe(200);
      body = (await surface.json()) as typeof body;
      if (body.expiries.length > 5 || Date.now() > listedBy) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(body.expiries.length).toBeGreaterThan(5);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    // the start flags and no TypeScript loader: the process's own command line
    const cmdline = readFileSync(`/proc/${c.pid}/cmdline`, 'utf8').split('\0');
    for (const f of flags) expect(cmdline).toContain(f);
    expect(cmdline.join(' ')).not.toContain('tsx');
  }, 300_000);
});
