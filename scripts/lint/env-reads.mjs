// The one-configuration rule of docs/configuration.md: the environment is read in one place. No
// `process.env` in src/ or lab/ outside the configuration module (src/config.ts), and no `getenv` in
// native/src (native code gets its settings as arguments: configure(), common/settings.h).
// The addon loader (src/native/binding.ts, src/native/cpu.ts) reads its variables (GAVEL_ADDON,
// GAVEL_CPU_VARIANT) through src/config.ts as well, so it needs no exception.
// Usage: node scripts/lint/env-reads.mjs [root]   (exit 1 and one line per read)
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Files that may read the environment, relative to the root, each with its reason. */
export const ALLOWED = new Map([["src/config.ts", "the configuration module: every variable is declared and resolved there"]]);

function* files(dir, exts) {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "node_modules") yield* files(p, exts);
    } else if (exts.some((x) => e.name.endsWith(x))) yield p;
  }
}

const isProcess = (n) => ts.isIdentifier(n) && n.text === "process";

/** The lines (1-based) of a TS/JS text that read the environment: process.env, process["env"], `{ env } = process`, env imported from node:process. */
export function envReadLines(text, fileName = "x.ts") {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true);
  const lines = [];
  const at = (node) => lines.push(sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1);
  const visit = (node) => {
    if (ts.isPropertyAccessExpression(node) && node.name.text === "env" && isProcess(node.expression)) at(node);
    else if (ts.isElementAccessExpression(node) && isProcess(node.expression) && ts.isStringLiteralLike(node.argumentExpression) && node.argumentExpression.text === "env") at(node);
    else if (ts.isVariableDeclaration(node) && node.initializer && isProcess(node.initializer) && ts.isObjectBindingPattern(node.name)) {
      if (node.name.elements.some((el) => (el.propertyName ?? el.name).getText(sf) === "env")) at(node);
    } else if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && /^(node:)?process$/.test(node.moduleSpecifier.text)) {
      const named = node.importClause?.namedBindings;
      if (named && ts.isNamedImports(named) && named.elements.some((el) => (el.propertyName ?? el.name).text === "env")) at(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return lines;
}

/** The lines (1-based) of a C/C++/CUDA text that call getenv (std::getenv, secure_getenv), comments and strings aside. */
export function getenvLines(text) {
  // blank out comments and string literals, keeping the line breaks
  const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, (m) => m.replace(/[^\n]/g, " "));
  const out = [];
  code.split("\n").forEach((l, i) => {
    if (/\b(?:secure_)?getenv\s*\(/.test(l)) out.push(i + 1);
  });
  return out;
}

/** Every read of the environment outside {@link ALLOWED}, as "file:line: what". */
export function checkEnvReads(rootDir = root) {
  const breaches = [];
  for (const top of ["src", "lab"]) {
    for (const file of files(join(rootDir, top), [".ts", ".mts", ".cts", ".js", ".mjs"])) {
      const rel = relative(rootDir, file).split("\\").join("/");
      if (ALLOWED.has(rel)) continue;
      for (const line of envReadLines(readFileSync(file, "utf8"), file)) {
        breaches.push(`${rel}:${line}: reads process.env (use src/config.ts: config(), bankDir(), …)`);
      }
    }
  }
  for (const file of files(join(rootDir, "native", "src"), [".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".inc"])) {
    const rel = relative(rootDir, file).split("\\").join("/");
    for (const line of getenvLines(readFileSync(file, "utf8"))) {
      breaches.push(`${rel}:${line}: calls getenv (take the setting as an argument: configure(), common/settings.h)`);
    }
  }
  return breaches;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const breaches = checkEnvReads(process.argv[2] ? resolve(process.argv[2]) : undefined);
  for (const b of breaches) console.error(b);
  if (breaches.length) {
    console.error(`${breaches.length} reads of the environment outside src/config.ts (docs/configuration.md)`);
    process.exit(1);
  }
  console.log("env reads: only src/config.ts reads the environment");
}
