/**
 * The history store through a crash (issue 24): the service, in a child process, writes its history while a client
 * reads surfaces; it is killed with SIGKILL in the middle of its writes. The file then opens (nothing corrupt), holds
 * every surface served more than HISTORY_FLUSH_MS (+ the commit's own time) before the kill, and a service restarted
 * on it goes on: it answers as-of queries of the time before the crash with the very answers given then.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { HistoryStore } from '../../src/history/store.js';
import { http, listeningUrl, waitFor } from '../helpers/service.js';
import { simStartEnv } from '../helpers/simClock.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'history-crash-'));
const children: ChildProcess[] = [];
const FLUSH_MS = 1000;

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function startChild(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...simStartEnv(),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_PRETTY: 'false',
      SOURCES: 'DERIBIT',
      PAIRS: 'DERIBIT:BTC/USD',
      SIM_HISTORY_HOURS: '0',
      SIMULATOR_PROCESS: 'inprocess',
      CALIBRATION_THROTTLE_MS: '150',
      HISTORY_DIR: dir,
      HISTORY_FLUSH_MS: String(FLUSH_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const url = await listeningUrl(child);
  await waitFor(async () => (await http('GET', `${url}/ready`)).status === 200, 60_000, '/ready 200');
  return { url, child };
}

const surfacePath = '/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI';

describe('history through kill -9', () => {
  it('loses at most the last flush, opens, and a restarted service answers the time before the crash', async () => {
    const first = await startChild();
    const served: Array<{ atMs: number; body: any }> = [];
    const until = Date.now() + 5000;
    while (Date.now() < until) {
      const r = await http('GET', `${first.url}${surfacePath}`);
      if (r.status === 200 && served.at(-1)?.body.sequence !== r.body.sequence) served.push({ atMs: Date.now(), body: r.body });
      await new Promise((res) => setTimeout(res, 50));
    }
    const exited = new Promise((r) => first.child.once('exit', r));
    first.child.kill('SIGKILL');
    const killedAtMs = Date.now();
    await exited;
    expect(served.length).toBeGreaterThan(5);

    const store = await HistoryStore.open(join(dir, 'history.duckdb'));
    const publishedOf = async (b: any): Promise<number | undefined> =>
      (await store.query('SELECT published FROM surfaces WHERE model = $1 AND sequence = $2 AND obs = $3', ['SVI', b.sequence, b.observationTimestamp]))[0]?.published as number | undefined;
    let lostNewestMs = 0;
    for (const s of served) {
      const kept = (await publishedOf(s.body)) !== undefined;
      if (!kept) lostNewestMs = Math.max(lostNewestMs, killedAtMs - s.atMs);
      // everything served a flush interval (and the commit's time) before the kill was committed
      if (killedAtMs - s.atMs > FLUSH_MS + 500) expect(kept, `sequence ${s.body.sequence} served ${killedAtMs - s.atMs} ms before the kill`).toBe(true);
    }
    console.log(`kill -9: ${served.length} surfaces served; the oldest one lost was served ${lostNewestMs} ms before the kill`);
    const old = served[Math.floor(served.length / 2)]!.body;
    const oldPublished = (await publishedOf(old))!;
    const before = Number((await store.query('SELECT count(*) AS n FROM surfaces'))[0]!.n);
    await store.close();

    const second = await startChild();
    const r = await http('GET', `${second.url}${surfacePath}&asOf=${oldPublished}`);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect(r.body).toEqual(old);
    // and it goes on recording: its own surfaces join the file
    await http('GET', `${second.url}${surfacePath}`);
    await new Promise((res) => setTimeout(res, 2 * FLUSH_MS + 500));
    const exited2 = new Promise((r2) => second.child.once('exit', r2));
    second.child.kill('SIGTERM');
    await exited2;
    const reopened = await HistoryStore.open(join(dir, 'history.duckdb'));
    expect(Number((await reopened.query('SELECT count(*) AS n FROM surfaces'))[0]!.n)).toBeGreaterThan(before);
    await reopened.close();
  }, 240_000);
});
