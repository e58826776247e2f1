// Places a CUDA addon built on the GPU machine (scripts/device/gpu-build.sh: CUDA_ARCHS "80;90a",
// llama.cpp/ggml and the CUDA runtime static, libcuda/libcublas/libcublasLt dynamic) into the opt-in
// package npm/linux-x64-cuda/ (gavel-router-linux-x64-cuda), and checks it:
//   node scripts/cuda-package.mjs <built gavel.node> [--pack DIR] [--no-strip]
// The binary goes to npm/linux-x64-cuda/prebuilds/linux-x64-cuda/gavel-router.node (stripped of its
// local symbols with --strip-unneeded, as the CPU prebuilds; --no-strip keeps it as built) beside this
// tree's native sources hash (gavel-router.sources.sha256): the binary must have been built from this
// checkout's native sources. Then the package's manifest and the binary are checked (ELF x86-64,
// N-API's two entry points only, libcuda.so.1 needed, no libcudart/libllama/libggml), and with --pack
// the package is packed into DIR and its tarball checked (checkCudaTarball). Neither the binary nor the
// tarball is committed (npm/*/prebuilds/ and *.tgz are ignored). Exit 1 on any problem.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { nativeSourcesHash } from "./native-sources.mjs";
import { CUDA_PACKAGE, CUDA_PLATFORM, binaryKind, checkCudaTarball, inspectAddon, manifestProblems, packFolder, platformAddon, platformDir } from "./platform-packages.mjs";

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  if (i === -1) return undefined;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const packDir = flag("--pack");
const strip = !args.includes("--no-strip");
const positional = args.filter((a) => a !== "--no-strip");
if (positional.length !== 1 || positional[0].startsWith("-")) {
  console.error("usage: node scripts/cuda-package.mjs <built gavel.node> [--pack DIR] [--no-strip]");
  process.exit(2);
}
const built = resolve(positional[0]);
if (!existsSync(built)) {
  console.error(`${built}: no such file`);
  process.exit(2);
}

const problems = [];
const kind = binaryKind(readFileSync(built));
if (kind?.format !== "elf" || kind.arch !== "x64") {
  console.error(`${built} is ${kind ? `${kind.format} ${kind.arch}` : "no known binary"}, not elf x64: not placed`);
  process.exit(1);
}

const dest = platformAddon(CUDA_PLATFORM);
mkdirSync(dirname(dest), { recursive: true });
copyFileSync(built, dest);
if (strip) {
  try {
    execFileSync("strip", ["--strip-unneeded", dest], { stdio: "inherit" });
  } catch (e) {
    console.warn(`strip unavailable (${e.message.split("\n")[0]}): placed unstripped`);
  }
}
const hash = nativeSourcesHash();
writeFileSync(resolve(dirname(dest), "gavel-router.sources.sha256"), hash + "\n");
console.log(`placed ${dest} (${(readFileSync(dest).length / 1048576).toFixed(1)} MB${strip ? ", stripped" : ""}), sources hash ${hash}`);

problems.push(...manifestProblems(CUDA_PLATFORM).map((p) => `npm/${CUDA_PLATFORM}/package.json: ${p}`));
const { facts, problems: binaryProblems } = inspectAddon(CUDA_PLATFORM, dest);
for (const f of facts) console.log(`  ${f}`);
problems.push(...binaryProblems);
if (facts.some((f) => f.startsWith("not inspected"))) problems.push("readelf could not inspect the binary");

if (packDir && problems.length === 0) {
  const out = resolve(packDir);
  mkdirSync(out, { recursive: true });
  const tarball = packFolder(platformDir(CUDA_PLATFORM), out);
  const tarProblems = checkCudaTarball(tarball, hash);
  console.log(`pack: ${tarball}${tarProblems.length ? "" : " (binary, what it needs and exports, sources hash: checked)"}`);
  problems.push(...tarProblems);
}

if (problems.length) {
  console.error(`${CUDA_PACKAGE}: ${problems.length} problem(s):\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`${CUDA_PACKAGE}: ready${packDir ? "" : " (--pack DIR to pack it)"}`);
