/**
 * The ONE list of the volatility models the service serves, as the API, Kafka and the dashboard name them
 * (`volatilityModel`). Every model is one module in src/quant/models registered under its name in
 * src/quant/models/index.ts (MODEL_REGISTRY, typed by this list: a name without a module does not compile); every
 * listed model is fitted on every recalibration (src/quant/chain/chainFit.ts fitChain), in this order.
 * test/architecture/layers.test.ts fails when model names are listed anywhere else in the production code.
 */
export const VOLATILITY_MODELS = ['SVI', 'SABR', 'VANNA_VOLGA', 'ESSVI'] as const;

/** One of {@link VOLATILITY_MODELS}. */
export type VolatilityModel = (typeof VOLATILITY_MODELS)[number];
