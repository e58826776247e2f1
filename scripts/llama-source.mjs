// Locates llama.cpp as the pinned dev dependency node-llama-cpp@3.21.1 ships it: its source, as a git
// bundle (llama/gitRelease.bundle). The source is cloned once into build/llama.cpp, which the native
// build compiles (statically, into the addon) and reads headers from.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));

/** The folder of an installed package, found the way Node finds it (exports maps ignored). */
export function packageDir(name) {
  for (const base of require.resolve.paths(name) ?? []) {
    const dir = join(base, name);
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  throw new Error(`package ${name} is not installed: run npm install`);
}

export function llamaBundlePath() {
  const bundle = join(packageDir("node-llama-cpp"), "llama", "gitRelease.bundle");
  if (!existsSync(bundle)) throw new Error(`llama.cpp source bundle not found at ${bundle}: run npm install (node-llama-cpp is a dev dependency)`);
  return bundle;
}

/** Clones the bundled llama.cpp source into build/llama.cpp once and returns its path. */
export function llamaSourceDir(dest = join(root, "build", "llama.cpp")) {
  if (!existsSync(join(dest, "include", "llama.h"))) {
    mkdirSync(dirname(dest), { recursive: true });
    execFileSync("git", ["-c", "advice.detachedHead=false", "clone", "-q", llamaBundlePath(), dest], { stdio: "inherit" });
  }
  return dest;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify({ source: llamaSourceDir() }));
}
