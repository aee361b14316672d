/**
 * Decimal rounding and printing the OKX and Bybit simulators share (their messages print numbers as strings the way
 * both exchanges do).
 */

/** x rounded to `dp` decimals (Math.round: halves up); -0 becomes 0. Every simulator prints its numbers through it. */
export function roundTo(x: number, dp: number): number {
  const f = Math.pow(10, dp);
  const r = Math.round(x * f) / f;
  return r === 0 ? 0 : r;
}

/** A number as OKX and Bybit print it: at most `dp` decimals, trailing zeros and a trailing point cut, `-0` as `0`; "" when not finite. */
export function decimalText(x: number, dp: number): string {
  if (!Number.isFinite(x)) return '';
  let s = x.toFixed(dp);
  if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return s === '-0' ? '0' : s;
}
