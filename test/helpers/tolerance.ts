/**
 * How far a served implied vol may lie from an exchange's mark IV in the simulated-market tests (issue 14 section 1:
 * tolerances come from a documented rule, not from a number that happened to pass).
 *
 * The simulated marks are Merton jump-diffusion prices with per-strike mark noise (adapters/simulator/market.ts
 * markIv), outside every fitted model's family, so a served smile cannot go through every mark. The market's own
 * uncertainty about a strike's vol is its bid-ask IV interval: the rule is that a served IV lies within one full
 * bid-ask IV width of the mark (i.e. inside the quote's interval widened by half a spread on each side when the mark
 * is mid). A one-sided quote (far wings: no bid) bounds the vol on one side only: the served IV may then lie as far
 * from the mark as the printed side does. Never less than 1 vol point.
 *
 * @param q a quote: mark IV and bid/ask IV as fractions (null where the exchange has no side)
 * @returns the largest accepted |served IV - mark IV|, as a fraction (0.01 = 1 vol point)
 */
export function markTolerance(q: { readonly markIv: number; readonly bidIv: number | null; readonly askIv: number | null }): number {
  let width = 0;
  if (q.bidIv !== null && q.askIv !== null) width = Math.max(0, q.askIv - q.bidIv);
  else if (q.askIv !== null) width = Math.max(0, q.askIv - q.markIv);
  else if (q.bidIv !== null) width = Math.max(0, q.markIv - q.bidIv);
  return Math.max(0.01, width);
}
