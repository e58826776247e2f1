// A child process for test/e2e/coexist-node-llama-cpp.test.ts: loads gavel-router (dist/) and/or a
// node-llama-cpp version in one process, in the order given, does real work in each, and prints one
// JSON line with the results. Usage:
//   node coexist-child.mjs <steps> <node-llama-cpp package name> <model.gguf>
// steps: "gavel", "nlc", "gavel,nlc" or "nlc,gavel"; the package name is "node-llama-cpp" (3.21.1) or
// the alias "node-llama-cpp-3-22". The line also lists every llama.cpp/ggml library mapped in the
// process at the end (libggml*, libllama*, llama-addon.node), by real path.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [stepsArg, nlcName, modelPath] = process.argv.slice(2);
const TEXT = "Once upon a time, there was a little dog named Max. He liked to play in the park.";
const sha = (a) => createHash("sha256").update(Buffer.from(a.buffer, a.byteOffset, a.byteLength)).digest("hex");

async function gavel() {
  const { Model } = await import(pathToFileURL(join(root, "dist", "index.js")).href);
  const model = await Model.load(modelPath, { contextSize: 128, threads: 1 });
  const tokens = model.tokenize(TEXT, { addBos: true });
  const [l1, last] = await model.hiddenStatesAt(tokens, [1, model.info.nLayer - 1]);
  await model.dispose();
  return { tokens: Array.from(tokens), layer1: sha(l1), last: sha(last), sample: Array.from(last.subarray(0, 4)) };
}

async function nlc() {
  const dir = join(root, "node_modules", nlcName);
  const version = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version;
  const { getLlama } = await import(nlcName);
  const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: 128 });
  const tokens = model.tokenize(TEXT);
  const greedy = [];
  for await (const token of context.getSequence().evaluate(tokens, { temperature: 0 })) {
    greedy.push(token);
    if (greedy.length === 6) break;
  }
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  return { version, tokens: Array.from(tokens), greedy: Array.from(greedy) };
}

const out = {};
for (const step of stepsArg.split(",")) {
  if (step === "gavel") out.gavel = await gavel();
  else if (step === "nlc") out.nlc = await nlc();
  else throw new Error(`unknown step ${step}`);
}
out.libs = [...new Set(readFileSync("/proc/self/maps", "utf8").split("\n").map((l) => l.split(/\s+/)[5] ?? ""))]
  .filter((p) => /\/(lib(ggml|llama)[^/]*\.so[^/]*|llama-addon\.node)$/.test(p))
  .sort();
// a CUDA build's child maps the driver (libcuda) once its glance or model touched the device
out.cuda = readFileSync("/proc/self/maps", "utf8").includes("libcuda.so");
console.log(JSON.stringify(out));
