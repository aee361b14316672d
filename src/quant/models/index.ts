/**
 * The model registry (issue 11 item 5): every served model by name, all behind {@link SmileModel}. Code that needs a
 * model's smile, stored parameters, carry-forward rule, arbitrage check or wing rule asks here instead of branching
 * on the name.
 */
import { essviModel } from './essvi.js';
import { sabrModel } from './sabr.js';
import { sviModel } from './svi.js';
import type { ModelName, SmileModel } from './types.js';
import { vannaVolgaModel } from './vannaVolga.js';

export type { FitContext, ModelName, SliceFit, SliceFitOptions, SliceInput, SliceQuote, SmileModel } from './types.js';

/**
 * Every served model by name (src/domain/volatilityModels.ts VOLATILITY_MODELS: a listed name without a module does not
 * compile). Typed `SmileModel<unknown>`: a caller holds a model's parameters only as that model's own `fit`,
 * `carryForward` or `fromRecord` made them, opaque, and hands them back to the same model (each module is typed by its
 * own parameters, e.g. `SmileModel<SviParams>`).
 */
export const MODEL_REGISTRY: { readonly [M in ModelName]: SmileModel<unknown> } = {
  SVI: sviModel,
  SABR: sabrModel,
  VANNA_VOLGA: vannaVolgaModel,
  ESSVI: essviModel,
};

/** The module of `name`. @throws RangeError for an unknown name */
export function modelOf(name: ModelName): SmileModel<unknown> {
  const m = MODEL_REGISTRY[name];
  if (!m) throw new RangeError(`unknown volatility model ${String(name)}`);
  return m;
}
