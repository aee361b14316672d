#!/usr/bin/env node
/**
 * The length of every function in the production code (issue 25 item 5, "Small functions"): each function
 * declaration, method, constructor, accessor, arrow function and function expression in src/, streams/ and adapters/
 * (TypeScript files; no tests, no benchmarks), read with the TypeScript compiler API. A function's length is the
 * lines of its body, from the line of its opening brace to the line of its closing one (an arrow function's
 * expression body: its first to its last line); a function nested in another counts in the outer one's length too.
 *
 * Run directly: `node scripts/function-lengths.mjs [--min N] [--all]` prints the functions of N lines or more
 * (default 81, i.e. over 80), longest first, as `length  file:line  name`, and a summary line with the counts of
 * functions over 80 lines and of 60 lines or more. test/architecture/functionLength.test.ts uses `functionLengths`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository's root folder. */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The folders whose functions are measured. */
export const MEASURED_FOLDERS = ['src', 'streams', 'adapters'];

/** The TypeScript source files below `dir` (declaration files and the dashboard's static files aside). */
function sourceFiles(dir, out = []) {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) {
      if (f !== 'node_modules' && f !== 'public') sourceFiles(p, out);
    } else if (/\.(ts|mts)$/.test(f) && !/\.d\.m?ts$/.test(f)) out.push(p);
  }
  return out;
}

/** A readable name for a function node: its own name, or the name it is assigned to, or where it is passed. */
function nameOf(node) {
  const text = (n) => (n && (ts.isIdentifier(n) || ts.isStringLiteral(n) || ts.isPrivateIdentifier(n)) ? n.text : n?.getText());
  if (ts.isConstructorDeclaration(node)) return `${text(node.parent.name) ?? '<class>'}.constructor`;
  if (ts.isMethodDeclaration(node) || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) {
    const owner = ts.isClassLike(node.parent) ? `${text(node.parent.name) ?? '<class>'}.` : '';
    return `${owner}${text(node.name)}`;
  }
  if (node.name) return text(node.name);
  const p = node.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) return text(p.name);
  const kind = ts.isArrowFunction(node) ? 'arrow' : 'function';
  if (ts.isCallExpression(p)) return `<${kind} passed to ${p.expression.getText().slice(0, 40)}>`;
  if (ts.isArrowFunction(p) && p.body === node) return `<${kind} returned by ${nameOf(p)}>`;
  return `<${kind}>`;
}

/** Whether a node is a function with a body (overload signatures and abstract methods have none). */
function isMeasured(node) {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)) &&
    node.body !== undefined
  );
}

/** The functions of one file, each with its line (1-based, where the function starts) and body length in lines. */
export function functionsOf(file, text = readFileSync(file, 'utf8')) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lineOf = (pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const out = [];
  const visit = (node) => {
    if (isMeasured(node)) {
      const length = lineOf(node.body.getEnd()) - lineOf(node.body.getStart(sf)) + 1;
      out.push({ file: relative(ROOT, file), line: lineOf(node.getStart(sf)), name: nameOf(node), length });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/**
 * Every function of the measured folders, longest first.
 * @param folders the folders below the repository's root (default: src, streams, adapters)
 */
export function functionLengths(folders = MEASURED_FOLDERS) {
  return folders
    .flatMap((d) => sourceFiles(join(ROOT, d)))
    .flatMap((f) => functionsOf(f))
    .sort((a, b) => b.length - a.length || a.file.localeCompare(b.file) || a.line - b.line);
}

/** Prints the functions of `--min` lines or more (default 81) and the counts over 80 and of 60 or more. */
function main(argv) {
  const i = argv.indexOf('--min');
  const min = i >= 0 ? Number(argv[i + 1]) : 81;
  const all = functionLengths();
  for (const f of all.filter((x) => x.length >= min)) {
    console.log(`${String(f.length).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
  }
  const over80 = all.filter((x) => x.length > 80).length;
  const atLeast60 = all.filter((x) => x.length >= 60).length;
  console.log(`${all.length} functions; ${over80} over 80 lines; ${atLeast60} of 60 lines or more`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
