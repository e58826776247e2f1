/**
 * The package's configuration: every environment variable gavel-router reads, declared once in
 * {@link SETTINGS} (name, values, default, meaning, who reads it) and resolved once per process by
 * {@link config}. No other module reads `process.env` (`npm run lint` checks it, with the addon
 * loader's one exception); native code gets its settings as arguments (`configure`, called by the
 * loader in src/native/binding.ts). docs/configuration.md is generated from {@link SETTINGS}
 * (`npm run gen:config`: scripts/gen/write-config-table.ts).
 *
 * An empty value means "not set" for every variable, as shells and test harnesses use `VAR=""` to
 * clear one. A value outside a variable's values is a GavelError `INVALID_ARGUMENT` naming it.
 */
import { join } from "node:path";
import { GavelError, clip } from "./errors.js";

/** One environment variable, as docs/configuration.md lists it. */
export interface Setting {
  /** The variable's name. */
  readonly name: string;
  /** Its values: a list, or a word for the kind ("path", "integer ≥ 1024"). */
  readonly values: readonly string[] | string;
  /** What happens when it is unset (or empty). */
  readonly default: string;
  /** What it does. */
  readonly meaning: string;
  /** The component that acts on it. */
  readonly readBy: string;
  /** runtime: the package reads it; lab: training and its tools; build: scripts/build-native.mjs. */
  readonly scope: "runtime" | "lab" | "build";
}

/** The bank folder a command uses when given none and GAVEL_BANK is unset, relative to the working directory. */
export const DEFAULT_BANK_DIR = ".gavel/bank";

/** Every environment variable gavel-router and its build read. */
export const SETTINGS: readonly Setting[] = [
  {
    name: "GAVEL_MODEL",
    values: "path",
    default: "the embedded gavel-mini (models/gavel-mini.gguf)",
    meaning: "The GGUF model a command loads when given no --model.",
    readBy: "defaults.ts (resolveModelPath): every CLI command that loads a model",
    scope: "runtime",
  },
  {
    name: "GAVEL_PROJECTIONS",
    values: "path",
    default: "the embedded projections (models/gavel-mini.projections.gguf)",
    meaning: "The projections file a command loads when given no --projections.",
    readBy: "defaults.ts (resolveProjectionsPath): every CLI command that routes",
    scope: "runtime",
  },
  {
    name: "GAVEL_BANK",
    values: "path",
    default: `${DEFAULT_BANK_DIR} (under the hook's project folder for \`gavel hook\`)`,
    meaning: "The bank folder a command uses when given no --bank, and the serve client's default bank.",
    readBy: "config.ts (bankDir): CLI commands, serve client, hook",
    scope: "runtime",
  },
  {
    name: "GAVEL_ADDON",
    values: "path",
    default: "the prebuilt addon for this CPU (prebuilds/), or build/Release",
    meaning: "A native addon file (`.node`) to load instead of the prebuilt one (a CUDA build, a local build); a relative path is read from the working folder. A path that is missing, not a .node file or (on Linux) a truncated ELF file is NATIVE_UNAVAILABLE naming it.",
    readBy: "native/binding.ts (loadBinding)",
    scope: "runtime",
  },
  {
    name: "GAVEL_CPU_VARIANT",
    values: ["avx2", "avx512"],
    default: "avx512 where the CPU has every AVX-512 feature the prebuild needs, else avx2",
    meaning: "Which prebuilt addon to load; avx2 forces the baseline. Picked, not forced, the avx512 prebuild gives way to the avx2 one with a warning GAVEL_CPU_FALLBACK when it is truncated or refuses the CPU at load (its own CPUID check, stricter under some virtual machines and valgrind). avx512 set but not honoured (GAVEL_ADDON, a local build or the CUDA package loaded, no AVX-512 prebuild on this platform or in the package, no CPU flags in /proc/cpuinfo) is a warning GAVEL_CPU_VARIANT. Also the CPU level scripts/build-native.mjs builds for.",
    readBy: "native/cpu.ts (selectCpuVariant), native/addon-file.ts (chooseAddon), scripts/build-native.mjs",
    scope: "runtime",
  },
  {
    name: "GAVEL_CUDA_ADDON",
    values: ["auto", "off"],
    default: "auto: on linux-x64, the CUDA addon of the package gavel-router-linux-x64-cuda where it is installed and loads, else the CPU prebuild",
    meaning: "Whether the loader takes the opt-in CUDA package (after GAVEL_ADDON and a local build, before the CPU prebuilds); off keeps to the CPU addon. A CUDA addon that cannot load (no NVIDIA driver or cuBLAS, other native sources) falls back to the CPU addon, its reason in addonStatus().",
    readBy: "native/cuda-package.ts (loadCudaPackage)",
    scope: "runtime",
  },
  {
    name: "GAVEL_KERNEL_ISA",
    values: ["generic", "avx2", "avx512"],
    default: "the best the CPU runs",
    meaning: "Caps the instruction set of the addon's CPU kernels (glance, cover, projection, f16 conversion, logsumexp), to compare or test each code path.",
    readBy: "native kernels (configure({ kernelIsa }))",
    scope: "runtime",
  },
  {
    name: "GAVEL_GLANCE_DEVICE",
    values: ["auto", "cpu", "cuda"],
    default: "auto: CUDA where the addon was built with it and a device answers, else the CPU",
    meaning: "Where a bank's glance (max-sim and top-k) runs; cuda without a device fails with CUDA_UNAVAILABLE.",
    readBy: "native bank (configure({ glanceDevice }))",
    scope: "runtime",
  },
  {
    name: "GAVEL_GLANCE_INDEX",
    values: ["auto", "off", "on"],
    default: "auto: the exact glance (the index's top 20 agreed with it on 0.49 of its entries over a real 30.6K-skill bank, docs/BENCHMARKS.md)",
    meaning: "Whether a route's glance reads the bank's glance index (centroids, then the exact max-sim on the surviving skills) or every skill; on prunes at any size, auto and off never.",
    readBy: "src/route/glance.ts",
    scope: "runtime",
  },
  {
    name: "GAVEL_KEY_IVF",
    values: ["auto", "off", "on"],
    default: "auto (on the CPU, a glance over at least GAVEL_KEY_IVF_FROM routable skills reads the key IVF an install wrote)",
    meaning:
      "Whether a route's glance reads the bank's key IVF (src/bank/key-ivf.ts: each task row probes the inverted lists of its nearest key centroids, exact max-sim over the keys found, the vote as the exact glance's) instead of every key; auto reads only the index an install or sync wrote (<bank>/key-ivf.bin; without it the exact glance runs, and a route never trains one); on reads it at any size and device, training it on the first glance that lacks it and writing it when the router can write the bank (a read-only router, as `gavel route` and `gavel glance` open, trains it in memory on each run); off never. Skills a route leaves out (disable-model-invocation, excluded sources or flags) take no part in the glance through the index, as in the exact glance; an addon older than that reads the index only for a glance over every installed skill.",
    readBy: "src/route/glance-index-use.ts",
    scope: "runtime",
  },
  {
    name: "GAVEL_KEY_IVF_I8",
    values: ["on", "off"],
    default: "on",
    meaning:
      "Whether a route's key IVF glance scores each row's lists in int8 first, then refines the keys that may count by their residuals' 4-bit codes before any float32 product (src/bank/key-ivf.ts, `i8` and `prune`): the same g bit for bit, less CPU; the codes add about 0.4× the float32 keys' memory to the process, a list coded when a glance first scans it.",
    readBy: "src/route/glance-index-use.ts",
    scope: "runtime",
  },
  { name: "GAVEL_KEY_TYPE", values: ["f32", "f16"], default: "f32", readBy: "src/route/Router.ts (Router.open): every command that opens a bank", scope: "runtime",
    meaning: "How a router holds its bank's keys in memory (RouterOpenOptions.keyType, which wins over it): f32, or f16 (IEEE half, rounded to nearest even): half the keys' memory (the bank's largest part: 11 GB of float32 keys over 30,593 skills as gavel installs them), each inner product within 2⁻¹¹ of float32's for unit keys, so g can differ in its last digits and near ties can swap. The bank on disk keeps float32 either way." },
  { name: "GAVEL_LIBRARY_CUT", values: ["on", "off"], default: "on", readBy: "src/route/Router.ts, src/route/firing.ts: every command that routes", scope: "runtime",
    meaning: "Whether a route over a library of fewer than 125 skills (the projections' abstention reference's `below`) also abstains at the library's own cut, set by routing the projections' off-domain reference prompts over it (RouteOptions.libraryCut, which wins over it): off routes with the abstention model's cut alone, e.g. over a library of one-line skills, where the library's cut declines more requests (docs/BENCHMARKS.md, \"Small libraries: each library sets its own cut\")." },
  { name: "GAVEL_PASTE_WEIGHT", values: ["on", "off"], default: "on", readBy: "src/lexical/postings.ts, src/route/context.ts", scope: "runtime",
    meaning: "Whether a written task's pasted material (fenced blocks, runs of log lines, stack frames, dumps or code: src/lexical/paste.ts) that outweighs its request is read at the request's weight in all, in BM25's query and in the glance's vote (on), or word for word as the rest of the task (off). docs/BENCHMARKS.md, \"Requests with a paste\"." },
  { name: "GAVEL_GLANCE_ROW_WEIGHTS", values: ["uniform", "idf"], default: "(unset: the projections' own, `gavel.glance_row_weights`)", readBy: "src/route/context.ts", scope: "runtime",
    meaning: "Overrides the vote weight of each task token of a written task in the glance, which the projections file carries (its constants were fitted with it): uniform (the paper's), or idf, ln((N + 1) / (df + 0.5)) of the token over the N routable skills' key tokens (a token in every skill weighs little, one in few much). The shipped projections say idf; files without the key, uniform. Live contexts: GAVEL_LIVE_ROW_WEIGHTS." },

  { name: "GAVEL_GLANCE_VOTE_SHARE", values: "number in [0, 1]", default: "(unset: the projections' own, `gavel.glance_vote_share`)", meaning: "Overrides the glance's vote share s for written tasks, which the projections file carries: each task token votes for its max(k, round(s·N)) best skills (k the paper's 10 from 95 skills on; at most 1,024), so a token's vote reaches the same share of any library; 0 is the paper's k. Live contexts keep the paper's k unless GAVEL_LIVE_VOTE_SHARE=on.", readBy: "src/route/glance.ts", scope: "runtime" },
  { name: "GAVEL_LIVE_ROW_WEIGHTS", values: ["decay", "idf-decay", "idf"], default: "decay", readBy: "src/route/context.ts", scope: "runtime",
    meaning: "The vote weight of each row of a live route's context (chat messages, or `live: true`; a `LiveContext` always decays): decay, the paper's recency 2^(−a/64) with a the tokens to the context's end; idf-decay, that times the token's idf over the routable skills' key tokens (a written task's weight, GAVEL_GLANCE_ROW_WEIGHTS's idf); idf, the idf alone. A chat's system rows weigh 0 under each. docs/EXPERIMENTS.md, \"The live chat's rows weighed by idf\", has what each measured." },
  { name: "GAVEL_LIVE_LEXICAL", values: ["latest", "window", "all"], default: "latest", readBy: "src/route/context.ts", scope: "runtime",
    meaning: "What a live route of chat messages gives its lexical readers (BM25's query, the re-ranker's name features, abstention's word and domain scores): latest, the latest user message's contents and every later message's (all of them where no message is the user's); window, those of the messages the glance's forward pass reaches (its last 768 tokens under the decay, a message the window starts inside whole); all, every message's but the system prompt. Written tasks, strings read live and a LiveContext are read the same under each; the verdict's text is not changed. docs/LIVE.md, \"A conversation that changes subject\", has what each measured." },
  { name: "GAVEL_LIVE_VOTE_SHARE", values: ["off", "on"], default: "off", readBy: "src/route/glance.ts", scope: "runtime",
    meaning: "Whether a live route's glance votes with the written tasks' vote share (on: the projections' `gavel.glance_vote_share`, or GAVEL_GLANCE_VOTE_SHARE over it) or with the paper's k (off)." },
  { name: "GAVEL_KEY_IVF_FROM", values: "integer ≥ 1", default: "3000", meaning: "Routable skills from which GAVEL_KEY_IVF=auto glances through the key IVF (and installs build it).", readBy: "src/route/glance-index-use.ts", scope: "runtime" },
  {
    name: "GAVEL_GLANCE_EXACT8",
    values: ["off", "on"],
    default: "off: the first prefiltered glance of a bank quantises all its keys, about one exact glance's time, which a one-shot process does not earn back",
    meaning: "on: a bank's CPU glance that asks for no full m (a route's) runs through the int8 prefilter: an int8 max-sim with a proven error bound, then the float32 max-sim only for the (row, skill) pairs the bound leaves in a row's top-k; the same result bit for bit, about half the CPU time on a real 3K-skill bank from the second glance on (docs/BENCHMARKS.md). For resident processes (gavel serve).",
    readBy: "native bank (configure({ glanceExact8 }))",
    scope: "runtime",
  },
  {
    name: "GAVEL_GLANCE_KERNEL",
    values: ["auto", "wmma"],
    default: "auto: the wgmma max-sim where the device code is sm_90a's (Hopper) and the dimension fits, else WMMA",
    meaning: "The CUDA max-sim kernel; wmma forces the WMMA kernel (to compare the two).",
    readBy: "native CUDA glance (configure({ glanceKernel }))",
    scope: "runtime",
  },
  {
    name: "GAVEL_GLANCE_TOPK",
    values: ["auto", "passes"],
    default: "auto: the one-read top-k for k ≤ 16, the k-pass one above",
    meaning: "The CUDA top-k kernel; passes forces the k-pass one (the same output bit for bit).",
    readBy: "native CUDA glance (configure({ glanceTopK }))",
    scope: "runtime",
  },
  {
    name: "GAVEL_GLANCE_LOADER",
    values: ["tma", "cp.async"],
    default: "tma where the bank's TMA maps can be made",
    meaning: "How the wgmma max-sim loads keys: by TMA, or by a loader warpgroup's cp.async.",
    readBy: "native CUDA glance (configure({ glanceLoader }))",
    scope: "runtime",
  },
  {
    name: "GAVEL_LOG",
    values: ["0", "1"],
    default: "0: llama.cpp's log is kept quiet (its last warnings still explain a failed load)",
    meaning: "1 prints llama.cpp's log to stderr.",
    readBy: "native model (configure({ logEcho }))",
    scope: "runtime",
  },
  {
    name: "UV_THREADPOOL_SIZE",
    values: "integer ≥ 1",
    default: "4 (libuv's); `gavel` sets it to the cores available, 4 to 16, when unset",
    meaning: "libuv's thread pool, which runs every native call, projection, cover and file write. libuv's own variable: another value is left to libuv, not refused.",
    readBy: "libuv; cli/gavel.ts (ensureThreadPoolSize); training's cover width",
    scope: "runtime",
  },
  {
    name: "XDG_RUNTIME_DIR",
    values: "path",
    default: "a private folder <tmpdir>/gavel-<uid> (0700)",
    meaning: "Where a server's socket goes when <bank>/serve.sock is too long for a Unix socket.",
    readBy: "serve/protocol.ts (defaultSocketPath)",
    scope: "runtime",
  },
  {
    name: "CLAUDE_PROJECT_DIR",
    values: "path",
    default: "the hook input's cwd",
    meaning: "Set by Claude Code for its hooks: the project's root, where `gavel hook claude-code` looks for the bank (and resolves a relative --bank).",
    readBy: "cli/commands/hook-run.ts (runClaudeCodeHook)",
    scope: "runtime",
  },
  {
    name: "GAVEL_START_SERVER",
    values: ["0", "1"],
    default: "0: the hook adds nothing and `gavel mcp` loads its own model when no server runs",
    meaning: "1: `gavel hook claude-code` and `gavel mcp` start a detached `gavel serve --idle-exit-ms` for the bank when none runs (as their --start-server does): the hook's next prompt is served by it, and `gavel mcp` answers through it.",
    readBy: "cli/commands/hook-run.ts (runClaudeCodeHook), cli/commands/mcp.ts",
    scope: "runtime",
  },
  {
    name: "GAVEL_RESIDENT_ROWS",
    values: "integer ≥ 1024",
    default: "2¹⁷ on the CPU, 2¹⁹ for a CUDA trainer",
    meaning: "Skill rows one training scoring call gathers (the trainer's buffers scale with it, ~1.2 GB at nEmbd 384, dim 768).",
    readBy: "training (resident scores)",
    scope: "lab",
  },
  {
    name: "GAVEL_CUDA",
    values: ["0", "1"],
    default: "0: the CPU build",
    meaning: "1 builds the addon with llama.cpp's CUDA backend and the CUDA glance and trainer (into build-cuda/).",
    readBy: "scripts/build-native.mjs",
    scope: "build",
  },
  {
    name: "GAVEL_JOBS",
    values: "integer ≥ 1",
    default: "2",
    meaning: "Parallel compile jobs of the native build.",
    readBy: "scripts/build-native.mjs",
    scope: "build",
  },
  {
    name: "CUDA_ARCHS",
    values: "CMake CUDA architectures",
    default: "90a (Hopper, with the wgmma max-sim)",
    meaning: "The GPU architectures a CUDA build (GAVEL_CUDA=1) compiles for, e.g. `90a;89`; other than 90a the glance runs the WMMA max-sim.",
    readBy: "scripts/build-native.mjs",
    scope: "build",
  },
  {
    name: "GAVEL_DEBUG",
    values: ["0", "1"],
    default: "0: a Release build",
    meaning: "1 builds the addon with debug information.",
    readBy: "scripts/build-native.mjs",
    scope: "build",
  },
];

/** The environment as the package resolved it: each variable's value, typed; absent where unset or empty. */
export interface Config {
  model?: string;
  projections?: string;
  bank?: string;
  addon?: string;
  cpuVariant?: "avx2" | "avx512";
  cudaAddon: "auto" | "off";
  kernelIsa?: "generic" | "avx2" | "avx512";
  glanceDevice: "auto" | "cpu" | "cuda";
  glanceIndex: "auto" | "off" | "on";
  keyIvf: "auto" | "off" | "on";
  keyIvfI8: "on" | "off";
  keyType: "f32" | "f16";
  libraryCut: "on" | "off"; // a small library's own abstention cut by default (RouteOptions.libraryCut wins)
  /** Whether a paste that outweighs the request is read at the request's weight (GAVEL_PASTE_WEIGHT). */
  pasteWeight: "on" | "off";
  /** Overrides the projections' glance row weights; undefined: the projections decide. */
  glanceRowWeights: "uniform" | "idf" | undefined;
  /** Overrides the projections' glance vote share; undefined: the projections decide. */
  glanceVoteShare: number | undefined;
  /** A live route's row weights (GAVEL_LIVE_ROW_WEIGHTS). */
  liveRowWeights: "decay" | "idf-decay" | "idf";
  /** What a live chat's lexical readers read (GAVEL_LIVE_LEXICAL). */
  liveLexical: "latest" | "window" | "all";
  /** Whether a live route's glance votes with the written tasks' share (GAVEL_LIVE_VOTE_SHARE). */
  liveVoteShare: "off" | "on";
  keyIvfFrom: number;
  glanceKernel: "auto" | "wmma";
  glanceExact8: "off" | "on";
  glanceTopK: "auto" | "passes";
  glanceLoader: "tma" | "cp.async";
  log: boolean;
  threadPoolSize?: number;
  runtimeDir?: string;
  /** Claude Code's project root (set for hooks). */
  claudeProjectDir?: string;
  /** The hook and `gavel mcp` start a server on demand (GAVEL_START_SERVER=1). */
  startServer: boolean;
  residentRows?: number;
}

type Env = Readonly<Record<string, string | undefined>>;

function text(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === "" ? undefined : v;
}

function choice<T extends string>(env: Env, name: string, values: readonly T[]): T | undefined {
  const v = text(env, name);
  if (v === undefined) return undefined;
  if (!(values as readonly string[]).includes(v)) {
    throw new GavelError(`${name} must be ${values.join(" or ")} (or unset), not ${JSON.stringify(clip(v))}`, "INVALID_ARGUMENT");
  }
  return v as T;
}

function integer(env: Env, name: string, min: number): number | undefined {
  const v = text(env, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new GavelError(`${name} must be an integer ≥ ${min} (or unset), not ${JSON.stringify(clip(v))}`, "INVALID_ARGUMENT");
  }
  return n;
}

function unitNumber(env: Env, name: string): number | undefined {
  const v = text(env, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\s*(\d+(\.\d*)?|\.\d+)(e-?\d+)?\s*$/i.test(v) || !(n >= 0 && n <= 1)) {
    throw new GavelError(`${name} must be a number in [0, 1] (or unset), not ${JSON.stringify(clip(v))}`, "INVALID_ARGUMENT");
  }
  return n;
}

// libuv's variable, not ours: what libuv makes of another value is libuv's business, so it is not refused.
function lenientInteger(env: Env, name: string): number | undefined {
  const n = Number(text(env, name));
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/**
 * The configuration an environment gives (pure: for tests and tools; the package uses {@link config}).
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the first variable whose value is not one of its values.
 */
export function resolveConfig(env: Env): Config {
  return {
    model: text(env, "GAVEL_MODEL"),
    projections: text(env, "GAVEL_PROJECTIONS"),
    bank: text(env, "GAVEL_BANK"),
    addon: text(env, "GAVEL_ADDON"),
    cpuVariant: choice(env, "GAVEL_CPU_VARIANT", ["avx2", "avx512"] as const),
    cudaAddon: choice(env, "GAVEL_CUDA_ADDON", ["auto", "off"] as const) ?? "auto",
    kernelIsa: choice(env, "GAVEL_KERNEL_ISA", ["generic", "avx2", "avx512"] as const),
    glanceDevice: choice(env, "GAVEL_GLANCE_DEVICE", ["auto", "cpu", "cuda"] as const) ?? "auto",
    glanceIndex: choice(env, "GAVEL_GLANCE_INDEX", ["auto", "off", "on"] as const) ?? "auto",
    keyIvf: choice(env, "GAVEL_KEY_IVF", ["auto", "off", "on"] as const) ?? "auto",
    keyIvfI8: choice(env, "GAVEL_KEY_IVF_I8", ["on", "off"] as const) ?? "on",
    keyType: choice(env, "GAVEL_KEY_TYPE", ["f32", "f16"] as const) ?? "f32",
    libraryCut: choice(env, "GAVEL_LIBRARY_CUT", ["on", "off"] as const) ?? "on",
    pasteWeight: choice(env, "GAVEL_PASTE_WEIGHT", ["on", "off"] as const) ?? "on",
    glanceRowWeights: choice(env, "GAVEL_GLANCE_ROW_WEIGHTS", ["uniform", "idf"] as const),
    glanceVoteShare: unitNumber(env, "GAVEL_GLANCE_VOTE_SHARE"),
    liveRowWeights: choice(env, "GAVEL_LIVE_ROW_WEIGHTS", ["decay", "idf-decay", "idf"] as const) ?? "decay",
    liveVoteShare: choice(env, "GAVEL_LIVE_VOTE_SHARE", ["off", "on"] as const) ?? "off",
    liveLexical: choice(env, "GAVEL_LIVE_LEXICAL", ["latest", "window", "all"] as const) ?? "latest",
    keyIvfFrom: integer(env, "GAVEL_KEY_IVF_FROM", 1) ?? 3000,
    glanceKernel: choice(env, "GAVEL_GLANCE_KERNEL", ["auto", "wmma"] as const) ?? "auto",
    glanceExact8: choice(env, "GAVEL_GLANCE_EXACT8", ["off", "on"] as const) ?? "off",
    glanceTopK: choice(env, "GAVEL_GLANCE_TOPK", ["auto", "passes"] as const) ?? "auto",
    glanceLoader: choice(env, "GAVEL_GLANCE_LOADER", ["tma", "cp.async"] as const) ?? "tma",
    log: choice(env, "GAVEL_LOG", ["0", "1"] as const) === "1",
    threadPoolSize: lenientInteger(env, "UV_THREADPOOL_SIZE"),
    runtimeDir: text(env, "XDG_RUNTIME_DIR"),
    claudeProjectDir: text(env, "CLAUDE_PROJECT_DIR"),
    startServer: choice(env, "GAVEL_START_SERVER", ["0", "1"] as const) === "1",
    residentRows: integer(env, "GAVEL_RESIDENT_ROWS", 1024),
  };
}

let resolved: Config | undefined;

/**
 * The process's configuration, resolved from `process.env` on first use and kept (later changes to
 * the environment are not seen; tests call {@link resetConfig}).
 *
 * @throws GavelError `INVALID_ARGUMENT` naming a variable with a value outside its values.
 */
export function config(): Config {
  resolved ??= Object.freeze(resolveConfig(process.env));
  return resolved;
}

/** Forgets the resolved configuration, so the next {@link config} reads the environment again (for tests). */
export function resetConfig(): void {
  resolved = undefined;
}

/**
 * The bank folder a command means: `given` (a flag or an argument), else GAVEL_BANK, else
 * {@link DEFAULT_BANK_DIR} under `base` (default: as is, relative to the working directory). An
 * empty `given` or GAVEL_BANK counts as not given. Not made absolute: callers that need it resolve it.
 */
export function bankDir(given?: string, base?: string): string {
  if (given) return given;
  const env = config().bank;
  if (env) return env;
  return base === undefined ? DEFAULT_BANK_DIR : join(base, DEFAULT_BANK_DIR);
}

/**
 * Sets UV_THREADPOOL_SIZE to `size` when it is unset, for libuv to read when its pool first starts
 * (so before any native call). The one place the package writes the environment.
 */
export function ensureThreadPoolSize(size: number): void {
  if (process.env.UV_THREADPOOL_SIZE === undefined) {
    process.env.UV_THREADPOOL_SIZE = String(size);
    resolved = undefined;
  }
}

/** libuv's pool size: UV_THREADPOOL_SIZE, else libuv's default of 4. */
export function threadPoolSize(): number {
  return config().threadPoolSize ?? 4;
}

/** The settings the native addon takes (its `configure`), from {@link config}. */
export function nativeSettings(c: Config = config()): {
  logEcho: boolean;
  kernelIsa: "generic" | "avx2" | "avx512" | null;
  glanceDevice: Config["glanceDevice"];
  glanceKernel: Config["glanceKernel"];
  glanceTopK: Config["glanceTopK"];
  glanceLoader: Config["glanceLoader"];
  glanceExact8: Config["glanceExact8"];
} {
  return {
    logEcho: c.log,
    kernelIsa: c.kernelIsa ?? null,
    glanceDevice: c.glanceDevice,
    glanceKernel: c.glanceKernel,
    glanceTopK: c.glanceTopK,
    glanceLoader: c.glanceLoader,
    glanceExact8: c.glanceExact8,
  };
}
