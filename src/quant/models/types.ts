/**
 * One interface for every volatility model the service serves (issue 11 item 5): how a model's per-expiry
 * parameters become a smile in total implied variance, how they are stored (numbers only: snapshots, Kafka
 * documents), how a slice is carried to a later observation when its new fit is rejected, which arbitrage check
 * and which wing rule apply. Each model is one module in this folder (svi.ts, sabr.ts, vannaVolga.ts) registered in
 * index.ts; adding a model is one file plus its tests. The per-expiry FIT itself still runs in streams/calibrate.ts
 * (fitExpiry, the calibration worker's entry point), dispatching on the same names.
 *
 * Units: k = ln(K/F) against the expiry's forward F; T in years ACT/365; w(k) = sigma(k)^2 T.
 */

/** The served models, as the API names them (`volatilityModel`). */
export type ModelName = 'SVI' | 'SABR' | 'VANNA_VOLGA';

/** A volatility model: typed parameters `P`, their stored form, the served smile and the rules around it. */
export interface SmileModel<P> {
  readonly name: ModelName;
  /** Stored parameter names, in order (the `parameters` of the surface endpoint). */
  readonly parameterNames: readonly string[];
  /** Stored names that may be absent in older documents (defaults apply). */
  readonly optionalParameterNames: readonly string[];
  /**
   * Typed parameters from their stored form.
   * @throws RangeError when a parameter is missing, not finite or invalid for the model
   */
  fromRecord(r: Readonly<Record<string, number>>, T: number, forward: number): P;
  /** The stored form (numbers only). */
  toRecord(p: P): Record<string, number>;
  /** The SERVED smile in total variance w(k) (wing rule included); NaN where the model has no value. */
  totalVariance(p: P, T: number, forward: number): (k: number) => number;
  /** Analytic dw/dk of the served smile when the model has one (else absent: callers difference numerically). */
  totalVarianceDk?(p: P, T: number, forward: number): (k: number) => number;
  /** Parameters of a slice fitted at (oldT, oldForward) carried to (newT, newForward), implied vol at each k kept. */
  carryForward(p: P, oldT: number, newT: number, oldForward: number, newForward: number): P;
  /** The butterfly check used (diagnostics.arbitrageCheck). */
  readonly arbitrageCheck: string;
  /** The wing rule beyond the quoted/core range, as documented. */
  readonly wingRule: string;
}

/** Reads a finite number named `name` from a stored record. @throws RangeError when missing or not finite */
export function need(model: ModelName, r: Readonly<Record<string, number>>, name: string): number {
  const v = r[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`${model} parameter ${name} missing or not finite (${String(v)})`);
  return v;
}
