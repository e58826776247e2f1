// The hash of everything the addon is compiled from: native/src/**, CMakeLists.txt and
// scripts/build-native.mjs (the build flags: static llama.cpp, hidden symbols, the CPU levels), and the
// node-llama-cpp version package.json pins (whose bundled llama.cpp source is compiled in). The
// prebuilt addons record it beside themselves, and a test fails when the sources moved on without a
// new prebuild.
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
  const pinned = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).devDependencies?.["node-llama-cpp"];
  h.update(`node-llama-cpp@${pinned}\0`);
  const files = [join(root, "CMakeLists.txt"), join(root, "scripts", "build-native.mjs"), ...walk(join(root, "native", "src"), [])];
  for (const file of files) {
    h.update(relative(root, file) + "\0");
    h.update(readFileSync(file));
    h.update("\0");
  }
  return h.digest("hex");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(nativeSourcesHash());
