/** One measured function (scripts/function-lengths.mjs): file relative to the root, start line, name, body lines. */
export interface FunctionLength {
  readonly file: string;
  readonly line: number;
  readonly name: string;
  readonly length: number;
}
/** The folders measured by default: src, streams, adapters. */
export const MEASURED_FOLDERS: string[];
/** The functions of one file. */
export function functionsOf(file: string, text?: string): FunctionLength[];
/** Every function of the given folders (default: src, streams, adapters), longest first. */
export function functionLengths(folders?: string[]): FunctionLength[];
