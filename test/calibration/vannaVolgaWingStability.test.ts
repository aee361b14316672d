/**
 * Stability of the served Vanna-Volga far wing under mark noise (issue 26, found by an outside review on 2026-11-27):
 * the real 2020 Deribit chain (schepal, 2020-05-14) is refitted 30 times with every mark moved by an independent
 * uniform +-0.1 vol pt (seeded), and the served Vanna-Volga implied vol of the 29MAY20 expiry (15 days) is read at
 * k = ln(K/F) = 1, beyond its last quote (k 0.37), and at k = 0.3, among its quotes. Reference in the test: the same
 * expiry's served SVI at k = 1 on the unperturbed chain (a second model as the yardstick of a plausible far wing).
 *
 * Found (2026-11-27): the wing fit (src/quant/vannaVolga.ts fitWing) fitted its scale only with 3 or more quotes beyond
 * the 10-delta strike, else the curvature at the default scale from the 1 or 2 quotes there; the 10-delta call strike
 * of this expiry lies near the 12500 call, so 0.1 vp of noise moved it across that strike and the far wing jumped
 * between two wings, 190.7 and 223.0 % at k = 1 (SVI 192.0 %; 13 of 30 refits on the high wing). Since 2026-11-28 the
 * wing is a penalized fit (a prior on its curvature, scaled by the junction's total standard deviation) with no
 * quote-count threshold: measured 186.9 to 188.3 % (SVI 192.0, SABR 194.6). Goal asserted: spread at k = 1 under 5 vp,
 * within 15 vp of SVI; the quoted range within 2 vp. And across the three real Deribit chains, 0.3 and 0.6 beyond each
 * expiry's outermost quotes, Vanna-Volga's spread under the same noise (median, 90th percentile and largest over the
 * wings) is at most SVI's (the yardstick, computed here).
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../adapters/simulator/rng.js';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import type { ChainView } from '../../streams/chainState.js';
import { replayChainView } from './chainQuality.js';

/** Expiry 2020-05-29 08:00 UTC, Unix s. */
const EXPIRY = Date.UTC(2020, 4, 29, 8) / 1000;

/** The served implied vol (%) of `model` at the expiry, at log-moneyness k. */
function servedAt(view: ChainView, model: 'SVI' | 'VANNA_VOLGA', ks: readonly number[]): number[] {
  const m = fitChain(view).models.find((x) => x.model === model)!;
  const s = m.slices.find((x) => x.expirationTimestamp === EXPIRY)!;
  const surface = buildModelSurface(m.model, m.slices);
  return ks.map((k) => 100 * surface.impliedVolAtLogMoneyness(s.T, k));
}

describe('Vanna-Volga far wing under +-0.1 vol pt of mark noise (schepal 29MAY20, 15 days)', () => {
  it('stays on one wing at k = 1 (spread under 5 vp, within 15 vp of SVI); the quoted range stays put', () => {
    const base = replayChainView('schepal');
    const [sviFar] = servedAt(base, 'SVI', [1]);
    const rng = new Rng(20261127);
    const far: number[] = [];
    const near: number[] = [];
    for (let i = 0; i < 30; i++) {
      const view: ChainView = { ...base, options: base.options.map((o) => ({ ...o, markIv: o.markIv + 0.001 * (2 * rng.uniform() - 1) })) };
      const [a, b] = servedAt(view, 'VANNA_VOLGA', [1, 0.3]);
      far.push(a!);
      near.push(b!);
    }
    const spread = (xs: number[]) => Math.max(...xs) - Math.min(...xs);
    console.log(
      `VV 29MAY20 under +-0.1 vp noise, 30 refits: k = 1 from ${Math.min(...far).toFixed(1)} to ${Math.max(...far).toFixed(1)} % (SVI unperturbed ${sviFar!.toFixed(1)} %); ` +
        `k = 0.3 from ${Math.min(...near).toFixed(2)} to ${Math.max(...near).toFixed(2)} %`,
    );
    // among the quotes the served smile follows the noise, no more (the 12500 and 13000 calls' spreads are ~4.5 vp)
    expect(spread(near)).toBeLessThan(2);
    // one wing: 0.2 vp of mark noise moves it by a few vol points at most, near the other model's far wing
    expect(spread(far)).toBeLessThan(5);
    for (const x of far) expect(Math.abs(x - sviFar!)).toBeLessThan(15);
  }, 120_000);

  it('0.3 and 0.6 beyond the outermost quotes of every expiry of the three real Deribit chains: Vanna-Volga moves no more than SVI under the same noise', () => {
    const spreads = new Map<string, number[]>();
    for (const id of ['maksm05', 'pitspa', 'schepal'] as const) {
      const base = replayChainView(id);
      const rng = new Rng(7);
      const at = new Map<string, number[]>();
      for (let i = 0; i < 6; i++) {
        const view: ChainView = i === 0 ? base : { ...base, options: base.options.map((o) => ({ ...o, markIv: o.markIv + 0.001 * (2 * rng.uniform() - 1) })) };
        for (const m of fitChain(view).models) {
          if (m.model !== 'SVI' && m.model !== 'VANNA_VOLGA') continue;
          const surface = buildModelSurface(m.model, m.slices);
          for (const s of m.slices) {
            const ks = base.options.filter((o) => o.expirationTimestamp === s.expirationTimestamp).map((o) => Math.log(o.strike / s.forward));
            if (ks.length < 5) continue;
            for (const beyond of [0.3, 0.6]) {
              for (const [side, k] of [['P', Math.min(...ks) - beyond], ['C', Math.max(...ks) + beyond]] as const) {
                const key = `${m.model} ${beyond} ${s.expirationTimestamp} ${side}`;
                at.set(key, [...(at.get(key) ?? []), 100 * surface.impliedVolAtLogMoneyness(s.T, k)]);
              }
            }
          }
        }
      }
      for (const [key, xs] of at) {
        const [model, beyond] = key.split(' ');
        const group = `${model} ${beyond}`;
        spreads.set(group, [...(spreads.get(group) ?? []), Math.max(...xs) - Math.min(...xs)]);
      }
    }
    const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;
    for (const beyond of ['0.3', '0.6']) {
      const svi = spreads.get(`SVI ${beyond}`)!;
      const vv = spreads.get(`VANNA_VOLGA ${beyond}`)!;
      const fig = (xs: number[]) => [pct(xs, 0.5), pct(xs, 0.9), Math.max(...xs)];
      console.log(`${beyond} beyond the quotes, +-0.1 vp, 6 refits, ${svi.length} wings: spread median / p90 / max SVI ${fig(svi).map((x) => x.toFixed(2)).join(' / ')}, VV ${fig(vv).map((x) => x.toFixed(2)).join(' / ')} vp`);
      expect(vv.length).toBe(svi.length);
      fig(vv).forEach((x, i) => expect(x, `${beyond} ${['median', 'p90', 'max'][i]}`).toBeLessThanOrEqual(fig(svi)[i]!));
    }
  }, 300_000);
});
