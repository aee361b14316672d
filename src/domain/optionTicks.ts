/**
 * Option price ticks: the smallest price step of an option's premium, for judging a fitted smile in the exchange's own
 * price units (issue 26: a quote without a bid is honoured when the model price is at or below its ask and within 2
 * ticks of its mark).
 *
 * Sources (the exchanges' instrument listings, recorded in the project's exchange samples):
 * - Deribit BTC and ETH options (inverse, premium in coin): `tick_size` 0.0001 coin, `tick_size_steps`
 *   `[{above_price: 0.005, tick_size: 0.0005}]`, i.e. 0.0005 coin from a premium of 0.005 coin (public/get_instruments,
 *   2025-05-08: 714 BTC and 554 ETH options, all alike);
 * - OKX BTC-USD and ETH-USD options (inverse): `tickSz` 0.0001 coin (public/instruments, 2025-05-08: 720 and 640
 *   options, all alike; a 2022 listing had 0.0005 for BTC, so the rule is as of 2025).
 * Elsewhere (linear USDC options of Deribit and Bybit) the listings recorded here give no option tick: no rule (null).
 */
import type { Pair, Source } from './markets.js';
import { optionsAreInverse } from './markets.js';

/**
 * The price tick of an option at a premium, both in the pair's quote currency (USD for inverse options, whose coin
 * premium is premium / forward): `(premium, forward) -> tick`, > 0.
 */
export type OptionPriceTick = (premium: number, forward: number) => number;

/** Deribit inverse options: 0.0001 coin below a premium of 0.005 coin, 0.0005 coin from there (module docstring). */
const deribitInverseTick: OptionPriceTick = (premium, forward) => (premium / forward < 0.005 ? 0.0001 : 0.0005) * forward;

/** OKX inverse options: 0.0001 coin (module docstring). */
const okxInverseTick: OptionPriceTick = (_premium, forward) => 0.0001 * forward;

/**
 * The option price tick rule of (source, pair), or null where none is known (module docstring).
 * @param source the exchange (wire value)
 * @param pair the pair; only inverse (coin-settled) option markets have a rule
 */
export function optionPriceTick(source: Source, pair: Pair): OptionPriceTick | null {
  if (!optionsAreInverse(source, pair)) return null;
  return source === 'DERIBIT' ? deribitInverseTick : source === 'OKX' ? okxInverseTick : null;
}
