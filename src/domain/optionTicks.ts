/**
 * Option price ticks: the smallest price step of an option's premium, for judging a fitted smile in the exchange's own
 * price units (issue 26: a quote without a bid is honoured when the model price is at or below its ask and within 2
 * ticks of its mark). The ticks changed over time, so a rule is taken at the chain's observation time.
 *
 * Sources:
 * - Deribit BTC and ETH options (inverse, premium in coin): 0.0005 coin at every price until the on-screen tick
 *   reduction of 6 July 2023 (Deribit support, "6 July 2023 (TS)": "Up to 0.0050: 0.0001 BTC or ETH; > 0.0050:
 *   0.0005"), 0.0001 coin from then for a premium up to 0.005 coin. The announcement gives the day; the rule changes
 *   here at 08:00 UTC, Deribit's daily settlement. Recorded listings agree: public/get_instruments 2021-07-22 (390 BTC,
 *   418 ETH options) a flat `tick_size` 0.0005, the 2020-05-14 book's prices all on the 0.0005 grid; 2025-05-08 (714
 *   BTC, 554 ETH options) `tick_size` 0.0001 with `tick_size_steps` `[{above_price: 0.005, tick_size: 0.0005}]`.
 * - OKX BTC-USD and ETH-USD options (inverse): 0.0005 coin until 31 August 2023 08:00 UTC, then 0.0001 coin up to a
 *   premium of 0.005 coin and 0.0005 above (OKX, "OKX to change options tick size", 24 August 2023). Recorded listings:
 *   public/instruments 2022-05-13 `tickSz` 0.0005 (346 BTC options), 2025-05-08 `tickSz` 0.0001 (720 BTC, 640 ETH).
 * Elsewhere (linear USDC options of Deribit and Bybit) no option tick is recorded here: no rule (null).
 */
import type { Pair, Source } from './markets.js';
import { optionsAreInverse } from './markets.js';

/**
 * The price tick of an option at a premium, both in the pair's quote currency (USD for inverse options, whose coin
 * premium is premium / forward): `(premium, forward) -> tick`, > 0.
 */
export type OptionPriceTick = (premium: number, forward: number) => number;

/** Deribit's on-screen option tick reduction, Unix s (module docstring). */
export const DERIBIT_TICK_STEPS_FROM = Date.UTC(2023, 6, 6, 8) / 1000;
/** OKX's option tick reduction, Unix s (module docstring). */
export const OKX_TICK_STEPS_FROM = Date.UTC(2023, 7, 31, 8) / 1000;

/** Inverse options with a tick step: 0.0001 coin for a premium up to 0.005 coin, 0.0005 coin above. */
const steppedInverseTick: OptionPriceTick = (premium, forward) => (premium / forward <= 0.005 ? 0.0001 : 0.0005) * forward;
/** Inverse options before the steps: 0.0005 coin at every price. */
const flatInverseTick: OptionPriceTick = (_premium, forward) => 0.0005 * forward;

/**
 * The option price tick rule of (source, pair) at a time, or null where none is known (module docstring).
 * @param source the exchange (wire value)
 * @param pair the pair; only inverse (coin-settled) option markets have a rule
 * @param atUnixSeconds the chain's observation time (Unix s)
 */
export function optionPriceTick(source: Source, pair: Pair, atUnixSeconds: number): OptionPriceTick | null {
  if (!optionsAreInverse(source, pair) || !Number.isFinite(atUnixSeconds)) return null;
  if (source === 'DERIBIT') return atUnixSeconds >= DERIBIT_TICK_STEPS_FROM ? steppedInverseTick : flatInverseTick;
  if (source === 'OKX') return atUnixSeconds >= OKX_TICK_STEPS_FROM ? steppedInverseTick : flatInverseTick;
  return null;
}
