/**
 * The 24 h changes of iVSummary survive a restart (issue 24): a service started on a store that holds an iVSummary
 * point of 24 h before its first surface answers its first iVSummary with the changes against that point (before the
 * store, they stayed null for a day in live and replay mode); and the as-of answer of the same instant measures
 * them against the same point.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HistoryStore } from '../../src/history/store.js';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { testNowS } from '../helpers/simClock.js';

const dir = mkdtempSync(join(tmpdir(), 'history-restart-'));
let svc: RunningService | null = null;
afterAll(async () => {
  await svc?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('24 h changes after a restart', () => {
  it('are there from the first answer, against the stored point', async () => {
    const dayAgo = testNowS() - 86400 + 20;
    const store = await HistoryStore.open(join(dir, 'history.duckdb'));
    await store.write({
      surfaces: [],
      fits: [],
      curves: [],
      funding: [],
      ivSummary: [
        {
          source: 'DERIBIT',
          pair: 'BTC/USD',
          model: 'SVI',
          sequence: 7,
          summary: {
            observationTimestamp: dayAgo,
            listed: [],
            constMat: (['1W', '1M', '3M'] as const).map((constMat, i) => ({
              expirationTimestamp: dayAgo + [7, 30, 91][i]! * 86400,
              constMat,
              atmVol: 0.41 + i / 100,
              delta25Skew: -0.02,
              delta10Skew: -0.035,
              delta25Bfly: 0.004,
              delta10Bfly: 0.012,
            })),
          },
        },
      ],
    });
    await store.close();

    svc = await startTestService({ HISTORY_DIR: dir, PAIRS: 'DERIBIT:BTC/USD', SIM_HISTORY_HOURS: '0' });
    const q = `${svc.url}/api/v1/global/data/iVSummary?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`;
    const first = await waitFor(async () => {
      const r = await http('GET', q);
      return r.status === 200 ? r.body : null;
    }, 60_000, 'the first iVSummary');
    expect(first.diffReferenceTimestamp).toBe(dayAgo);
    const byLabel = new Map(first.volatilityConstMat.map((e: any) => [e.constMat, e]));
    (['1W', '1M', '3M'] as const).forEach((label, i) => {
      const e = byLabel.get(label) as any;
      expect(e.diffAtmVol).toBe(e.atmVol - (0.41 + i / 100));
      expect(e.diffDelta25Skew).toBe(e.delta25Skew - -0.02);
      expect(e.diffDelta10Bfly).toBe(e.delta10Bfly - 0.012);
    });
    expect((byLabel.get('2W') as any).diffAtmVol).toBeNull();
    // as of the instant it answered: the same answer, changes included
    await svc.history.recorder!.flush();
    const published = (await svc.history.store!.query('SELECT max(published) AS p FROM surfaces WHERE model = $1 AND obs = $2', ['SVI', first.observationTimestamp]))[0]?.p as number;
    const again = await http('GET', `${q}&asOf=${published}`);
    expect(again.body).toEqual(first);
  }, 120_000);
});
