// The hash of everything the addon is compiled from (native/src/** and CMakeLists.txt). The prebuilt
// addon records it beside itself, and a test fails when the sources moved on without a new prebuild.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function walk(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

export function nativeSourcesHash() {
  const h = createHash("sha256");
  for (const file of [join(root, "CMakeLists.txt"), ...walk(join(root, "native", "src"), [])]) {
    h.update(relative(root, file) + "\0");
    h.update(readFileSync(file));
    h.update("\0");
  }
  return h.digest("hex");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(nativeSourcesHash());
