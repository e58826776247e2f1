// The size rules of docs/ARCHITECTURE.md, checked on every test run: no file in src/ (the runtime) or
// lab/ (training, evaluation, calibration) over 450 lines, and no function over 80 lines unless a
// comment right above it (or above its doc comment) says `long function: <why>` (kept for parsers,
// whose one long switch reads better whole).
// Usage: node scripts/lint/structure.mjs [dir…]   (default src and lab; exit 1 and one line per breach)
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The folders checked when none is named: the runtime and the lab. */
export const CHECKED_DIRS = ["src", "lab"];
export const MAX_FILE_LINES = 450;
export const MAX_FUNCTION_LINES = 80;

function* tsFiles(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

function isFunction(node) {
  return ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node);
}

/** The name a reader would search for: the function's own, or the variable / property it is bound to. */
function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const p = node.parent;
  if (p && (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) && ts.isIdentifier(p.name)) return p.name.text;
  return "(anonymous)";
}

/** Whether one of the 4 lines above the function's statement says `long function:` with a reason. */
function excused(lines, startLine) {
  for (let l = startLine - 1; l >= Math.max(0, startLine - 40); l--) {
    const text = lines[l].trim();
    if (/long function:\s*\S/.test(text)) return true;
    // walk up through a doc comment and decorators only
    if (!(text.startsWith("*") || text.startsWith("/**") || text.startsWith("//") || text === "")) return false;
  }
  return false;
}

export function checkStructure(srcDir = join(root, "src")) {
  const breaches = [];
  for (const file of tsFiles(srcDir)) {
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n");
    const rel = relative(root, file);
    if (lines.length > MAX_FILE_LINES) breaches.push(`${rel}: ${lines.length} lines (at most ${MAX_FILE_LINES})`);
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const visit = (node) => {
      if (isFunction(node) && node.body) {
        // the statement the function belongs to, so that a comment above `const f = () => …` counts
        let stmt = node;
        while (stmt.parent && !ts.isSourceFile(stmt.parent) && !ts.isBlock(stmt.parent) && !ts.isClassLike(stmt.parent)) stmt = stmt.parent;
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const n = end - start + 1;
        const stmtStart = sf.getLineAndCharacterOfPosition(stmt.getStart(sf, false)).line;
        if (n > MAX_FUNCTION_LINES && !excused(lines, stmtStart)) {
          breaches.push(`${rel}:${start + 1}: function ${nameOf(node)} has ${n} lines (at most ${MAX_FUNCTION_LINES}, or a "long function: <why>" comment)`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return breaches;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dirs = process.argv.length > 2 ? process.argv.slice(2).map((d) => resolve(d)) : CHECKED_DIRS.map((d) => join(root, d));
  const breaches = dirs.flatMap((d) => checkStructure(d));
  for (const b of breaches) console.error(b);
  if (breaches.length) {
    console.error(`${breaches.length} size breaches (docs/ARCHITECTURE.md, "Size rules")`);
    process.exit(1);
  }
  console.log("structure: every file and function within its size");
}
