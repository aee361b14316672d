/**
 * Entry files of worker threads and child processes. They are started by file, not imported, so the build
 * (scripts/build.mjs: every TypeScript module compiled one to one into dist/, imports unchanged) does not rewrite
 * their names: a module finds its sibling entry as `.ts` when it runs from the TypeScript sources (through tsx: the
 * tests, `npm run dev`) and as `.js` when it runs from the build (`npm start`).
 */

/**
 * The file URL of the module `name` (relative, without extension, e.g. `./calibrationWorker`) beside `base`.
 * @param name relative path of the module, no extension
 * @param base the caller's `import.meta.url`
 * @returns `name.ts` when `base` is a `.ts` file, else `name.js`, resolved against `base`
 */
export function siblingModule(name: string, base: string): URL {
  return new URL(`${name}${isTypeScript(new URL(base)) ? '.ts' : '.js'}`, base);
}

/** True when the module at `url` is TypeScript source, which needs the tsx loader to run. */
export function isTypeScript(url: URL): boolean {
  return url.pathname.endsWith('.ts');
}
