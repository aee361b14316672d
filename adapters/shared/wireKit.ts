/**
 * Building blocks of the exchanges' zod wire schemas (adapters/<exchange>/wire.ts): the strict parser of the numeric
 * strings OKX and Bybit print, and the entries of a schema's fields that share one parser, so that each exchange's
 * schema still reads as its documented field list.
 *
 * No unit is converted here (wire units are converted in each exchange's normalize.ts). Source: OKX API v5 and
 * Bybit V5 docs (every market value is a JSON string, `""` when missing; the pages are cited in okx/wire.ts and
 * bybit/wire.ts); the decimal expression is the one of the fast paths (adapters/shared/fastFields.ts DECIMAL_RE).
 */
import { z } from 'zod';
import { DECIMAL_RE } from './fastFields.js';

/**
 * A numeric STRING field, parsed strictly (OKX's and Bybit's convention): `""` -> null (missing); a plain decimal
 * (optional exponent, {@link DECIMAL_RE}) -> a finite number; anything else (an actual JSON number, whitespace,
 * `NaN`, `Infinity`, hex, a decimal that overflows to Infinity) fails validation. An absent field fails too (see
 * {@link absentAsNull}).
 */
export const decimalStringSchema = z.union([z.literal('').transform(() => null), z.string().regex(DECIMAL_RE).transform(Number).pipe(z.number())]);

/**
 * `schema`, also accepting an absent field, which parses as null (as `""` does for {@link decimalStringSchema}).
 * Errors: those of `schema` for a present value.
 */
export function absentAsNull<S extends z.ZodType<number | null, string>>(schema: S) {
  return schema.optional().transform((v): number | null => v ?? null);
}

/**
 * The entries `{ [name]: schema }` of a zod object shape for fields that share one parser (an exchange's number
 * parser, an optional text), in the order of `names` (zod builds its output and reports issues in shape order), to
 * be spread into the exchange's schema so that it still reads as the documented field list:
 * `z.looseObject({ symbol: z.string(), ...fieldsOf(bybitOptNum, ['bidPrice', 'bidSize']) })`. Pure; the one
 * `schema` serves every field (zod schemas are immutable).
 */
export function fieldsOf<const K extends string, S extends z.ZodType>(schema: S, names: readonly K[]): { [P in K]: S } {
  return Object.fromEntries(names.map((n) => [n, schema])) as { [P in K]: S };
}
