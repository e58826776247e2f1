/**
 * The native addon's whole surface, typed once. Everything that crosses into C++ goes through here;
 * vectors cross as typed arrays, never number[]. The rest of the package talks to the addon only via
 * `loadBinding()`.
 */
import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { CLIP_CHARS, GavelError, clip } from "../errors.js";
import { findPackageRoot } from "../util/package-root.js";
import type { NativeGeneration, NativeSamplerParams } from "./generation.js";
import { AVX512_CPU_FEATURES, REQUIRED_CPU_FEATURES, selectCpuVariant } from "./cpu.js";
import { chooseAddon, damagedAddonMessage, DamagedAddonError, loadAddon, type AddonSource } from "./addon-file.js";
export type { AddonSource } from "./addon-file.js";
import { PREBUILT_PLATFORMS, platformPackageName } from "./platform.js";
import { loadCudaPackage, type CudaAddonStatus } from "./cuda-package.js";

export type { NativeGeneration, NativeGenerationStep, NativeSamplerParams } from "./generation.js";
import type { NativeTrainer, NativeTrainerOptions } from "./trainer-binding.js";
import type { NativeLiveConstructor } from "./live-binding.js";
import type { NativeGlanceExact8Extra } from "./exact8-binding.js";
import type { NativeCacheStats, NativeModelInfo, NativeModelParams, NativeScoreRequest, NativeScoreResult } from "./model-binding.js";
import { config, nativeSettings, type Config } from "../config.js";
export type * from "./trainer-binding.js";
export type * from "./live-binding.js";
export type * from "./exact8-binding.js";
export type * from "./model-binding.js";

export interface NativeModel {
  load(path: string, params: NativeModelParams): Promise<void>;
  info(): NativeModelInfo;
  /** A GGUF metadata value as llama.cpp reads it, or null. */
  meta(key: string): string | null;
  tokenize(text: string, special: boolean, addBos: boolean): Int32Array;
  /** The same off the JS thread (a libuv worker, beside any decode). */
  tokenizeAsync(text: string, special: boolean, addBos: boolean): Promise<Int32Array>;
  detokenize(tokens: Int32Array, special: boolean): string;
  /** One token's text piece (special tokens rendered). */
  tokenPiece(token: number): string;
  /** One Float32Array (tokens × nEmbd) per requested layer, from a single decode. */
  hiddenStates(tokens: Int32Array, layers: Int32Array): Promise<Float32Array[]>;
  /**
   * {@link NativeModel.hiddenStates} of several tasks, each a sequence of the same decodes: per task,
   * one Float32Array (tokens × nEmbd) per requested layer. Absent from addons built before it.
   */
  hiddenStatesMany?(tasks: Int32Array[], layers: Int32Array): Promise<Float32Array[][]>;
  score(requests: NativeScoreRequest[], readIds: Int32Array): Promise<NativeScoreResult[]>;
  /** Logits (tokens × nVocab) of one fresh decode, no cache involved. */
  logits(tokens: Int32Array): Promise<Float32Array>;
  clearCache(): void;
  cacheStats(): NativeCacheStats;
  /**
   * A streaming generation over a sequence of this model's context held until its close(), capturing
   * the residual stream after block `layer` of every token it decodes, and with `finalState` the last
   * block's output at each append's last token. Parameters re-checked natively.
   */
  generation(layer: number, params: NativeSamplerParams, finalState?: boolean): NativeGeneration;
  /** Makes the running operation stop at its next check and reject with ABORTED. */
  abort(): void;
  /**
   * Drops this wrapper's engine: a call in flight is told to abort and keeps the engine alive until it
   * ends. Idempotent; every other method then throws DISPOSED (abort stays a no-op).
   */
  dispose(): void;
}

/** Results of the glance kernel for a set of query tokens against every skill's bank. */
export interface NativeGlanceResult {
  /** g(s|x) per skill, length nSkills. */
  g: Float32Array;
  /** m_i(s), row-major nQuery × nSkills. */
  m: Float32Array;
  /** Index (within the skill's own bank) of the key that attained m_i(s), nQuery × nSkills. */
  argmax: Int32Array;
}

export interface NativeKernels {
  /**
   * Farthest-first traversal of unit keys (n × dim, row-major): returns the indices retained, the
   * first key first, until every key lies within eps (Euclidean) of a retained one.
   */
  coverFarthestFirst(keys: Float32Array, dim: number, eps: number): Int32Array;
  /**
   * The glance: m_i(s) = max_j <q_i, d^s_j> over each skill's keys (bank rows offsets[s]..offsets[s+1]),
   * each query token votes m_i(s) into its top-k skills, weighted by weights[i], normalised by Σw.
   */
  glance(queries: Float32Array, bank: Float32Array, offsets: Int32Array, dim: number,
         weights: Float32Array, k: number): Promise<NativeGlanceResult>;
  /** The glance through the int8 prefilter (kernels/i8_glance.h; `exact`: the plain one), f32 or f16 keys. Tests, benches. */
  glanceExact8(queries: Float32Array, bank: Float32Array | Uint16Array, offsets: Int32Array, dim: number, weights: Float32Array, k: number, detail: number, exact?: boolean): Promise<NativeGlanceResult & NativeGlanceExact8Extra>;
  /** The prefilter's stage 1 alone: L ≤ m ≤ U of every row and skill (nq × nSkills, row-major). For tests. */
  glanceI8Bounds(queries: Float32Array, bank: Float32Array | Uint16Array, offsets: Int32Array, dim: number): Promise<{ lower: Float32Array; upper: Float32Array; isa: string }>;
  /**
   * The key IVF's refined scores (native/src/kivf/kivf_i8.h): one list coded from `keys` (n × dim,
   * at most 4,096), then every row's refined score of every key (rows × n) and each row's refined and
   * int8 bounds (half-widths). For tests.
   */
  kivfRefined(keys: Float32Array, dim: number, rows: Float32Array): { scores8: Float32Array; scores8Plain: Float32Array; refined: Float32Array; bound: Float32Array; int8Bound: Float32Array; isa: string };
  /**
   * The key IVF's centroid scores (native/src/kivf/kivf_core.h, CentroidScores): `scores[i·nc + c]` =
   * ⟨queries_i, centroids_c⟩ (nq × nc), and the same product by the addon's GEMM (`gemm`), which they
   * equal bit for bit; `isa` the kernels' instruction set. At most 2²⁴ scores. For tests.
   */
  kivfCentroidScores(queries: Float32Array, centroids: Float32Array, dim: number): { scores: Float32Array; gemm: Float32Array; isa: string };
  /**
   * The n best of `values` (finite float32) by (value desc, index asc): the indices valued above the
   * n-th best value θ (ascending), then the lowest valued θ; how a key IVF row picks its probed lists
   * (native/src/kivf/kivf_core.h, SelectBest). For tests.
   */
  kivfSelectBest(values: Float32Array, n: number): Int32Array;
  /**
   * The instruction set the kernels' inner loops run with ("avx512" | "avx2" | "generic"): the best
   * the CPU supports, capped by the kernelIsa setting ({@link NativeBinding.configure}; GAVEL_KERNEL_ISA).
   */
  kernelIsa(): string;
  /** log Σ exp of each n-long row of rows (the scorer's log-normaliser kernel), float64 results. */
  logSumExp(rows: Float32Array, n: number): Float64Array;
  /** x rounded to f16 in place, its bits into `half` (same length): round to nearest even, F16C where the CPU has it. */
  roundToHalf(x: Float32Array, half: Uint16Array): void;
  /** f16 bits to float32 (exact), into `x` (same length). */
  halfToFloat(half: Uint16Array, x: Float32Array): void;
  /** x's f16 bits into `half` while every value fits f16 (finite, |x| < 65520): the first index that does not, else -1. */
  floatsToHalf(x: Float32Array, half: Uint16Array): number;
  /**
   * Where {@link NativeBank.glance} runs (max-sim and top-k selection; over the whole bank or a
   * handle subset): "cuda" when the addon was built with CUDA and a device answers (or
   * GAVEL_GLANCE_DEVICE=cuda), else "cpu" (GAVEL_GLANCE_DEVICE=cpu forces it): the glanceDevice
   * setting ({@link NativeBinding.configure}); whether a device answers is asked once per process.
   */
  glanceDevice(): { device: "cuda" | "cpu"; cudaAvailable: boolean; reason?: string };
  /** {@link NativeKernels.coverFarthestFirst} on a worker thread, over a copy of the keys. */
  coverFarthestFirstAsync(keys: Float32Array, dim: number, eps: number): Promise<Int32Array>;
  /**
   * y = normalize(W h) for each row h of states (n × inDim), W row-major outDim × inDim: n × outDim.
   * A row whose product is exactly zero stays zero. Blocked GEMM on worker threads.
   */
  projectNormalize(states: Float32Array, inDim: number, W: Float32Array, outDim: number): Promise<Float32Array>;
  /** Skills' keys held natively across glances (copy-on-write snapshots; see NativeBank). */
  NativeBank: new (dim: number, keyType?: "f32" | "f16") => NativeBank;
}

/** {@link NativeGlanceResult} plus the handle of each result column. */
export interface NativeBankGlanceResult extends NativeGlanceResult {
  /** handles[s]: the skill of column s of g (and of m and argmax without `detail`). */
  handles: Int32Array;
  /** With `detail` n: the n best columns by g (ties to the lower); m, argmax are nQuery × n of them. */
  columns?: Int32Array;
  /** Only for a glance that ran on the device: its phases' device time (CUDA events), in ms. */
  device?: { maxSimMs: number; topKMs: number; copyMs: number };
}

/**
 * Every installed skill's keys (float32, dim each), held in native memory so a glance does not copy
 * the library from JS. Methods run on the JS thread; glance's work runs on worker threads over the
 * snapshot of the bank taken when it is called (copy-on-write: add/remove/clear during a glance
 * neither wait for it nor affect it).
 */
export interface NativeBank {
  /** Copies in one skill's n × dim keys (n may be 0); returns its handle (≥ 1, never reused). */
  add(keys: Float32Array): number;
  /** Drops a skill; unknown handles throw INVALID_ARGUMENT. */
  remove(handle: number): void;
  /** Drops every skill. */
  clear(): void;
  /** The handles held, in glance order (ascending = insertion order). */
  handles(): Int32Array;
  /**
   * The glance over every skill held (in handles() order) or over `handles` (in that order), with
   * the same semantics, conventions and tie rules as {@link NativeKernels.glance}. `ticket` (integer
   * ≥ 0, default 0) tags the call for {@link NativeBank.abort}.
   */
  glance(queries: Float32Array, weights: Float32Array, k: number, handles?: Int32Array | null,
         ticket?: number, detail?: number): Promise<NativeBankGlanceResult>;
  /**
   * Test hook: a device sync's bookkeeping now, on the probe's own layout (no device needed):
   * skills uploaded (positions in handles()) and their rows, rows in use (live + holes), live rows,
   * whether it compacted (holes past a third), each skill's first device row, and whether the
   * whole-bank columns were reused (nothing changed since the last probe).
   */
  _deviceLayoutProbe(): {
    uploads: Int32Array; uploadedRows: number; end: number; live: number; compacted: boolean; rows: Float64Array; columnsReused: boolean;
  };
  /** How the keys are held: "f32" (default) or "f16". */
  readonly keyType: "f32" | "f16";
  /** Makes the running glances with this ticket (all, without one) reject with ABORTED; returns how many. */
  abort(ticket?: number): number;
  /**
   * Frees the keys now. Running glances are aborted (they reject with ABORTED, or resolve if already
   * past their last check); what they read is freed when they end. Idempotent; every other method
   * and accessor then throws DISPOSED.
   */
  dispose(): void;
  readonly dim: number;
  /** Skills held. */
  readonly size: number;
  /** Key rows held, all skills together. */
  readonly keys: number;
  /** Native memory held by the current snapshot: keys plus bookkeeping, in bytes. */
  readonly bytes: number;
}

/**
 * The addon's run-time settings (native/src/common/settings.h): src/config.ts resolves them from the
 * environment once, and {@link loadBinding} passes them in; native code reads no environment variable.
 * configure() sets the keys given and leaves the rest, so benches and tests may switch one.
 */
export interface NativeSettings {
  /** GAVEL_LOG=1: llama.cpp's log to stderr. */
  logEcho?: boolean;
  /** GAVEL_KERNEL_ISA: the most the CPU kernels may use; null: the CPU's best. */
  kernelIsa?: "generic" | "avx2" | "avx512" | null;
  /** GAVEL_GLANCE_DEVICE: where a bank's glance runs. */
  glanceDevice?: "auto" | "cpu" | "cuda";
  /** GAVEL_GLANCE_KERNEL: the CUDA max-sim (auto: wgmma on sm_90a code, else WMMA). */
  glanceKernel?: "auto" | "wmma";
  /** GAVEL_GLANCE_EXACT8: a CPU glance without full m through the int8 prefilter (same result bit for bit). */
  glanceExact8?: "off" | "on";
  /** GAVEL_GLANCE_TOPK: the CUDA top-k (auto: one read for k ≤ 16, else k passes). */
  glanceTopK?: "auto" | "passes";
  /** GAVEL_GLANCE_LOADER: how the wgmma max-sim loads keys. */
  glanceLoader?: "tma" | "cp.async";
}

export interface NativeBinding extends NativeKernels {
  setErrorClass(cls: typeof GavelError): void;
  /** Sets the settings given ({@link NativeSettings}); throws INVALID_ARGUMENT on a bad value, changing nothing. */
  configure(settings: NativeSettings): void;
  /**
   * Initialises llama.cpp once; returns the devices found. Its backends are linked in, so the package
   * passes null; a folder would make ggml dlopen the backend libraries in it (not used).
   */
  init(libDir: string | null): string[];
  systemInfo(): string;
  /**
   * cuda: llama.cpp was compiled with CUDA (GAVEL_CUDA=1). staticLlama: llama.cpp and ggml are
   * linked into the addon statically, their symbols hidden (every build: CPU, CUDA, each platform).
   * cpuFeatures: the x86 features ggml's CPU code was compiled for, comma-separated (empty on arm64).
   */
  buildInfo(): { cuda: boolean; staticLlama: boolean; cpuFeatures: string };
  NativeModel: new () => NativeModel;
  NativeTrainer: new (options: NativeTrainerOptions) => NativeTrainer;
  /** A live context's accumulators held natively ({@link NativeLive}). */
  NativeLive: NativeLiveConstructor;
}

let binding: NativeBinding | undefined;
let devices: readonly string[] = [];

function packageRoot(): string {
  const root = findPackageRoot();
  if (root === null) throw new GavelError("cannot find gavel-router's package root", "NATIVE_UNAVAILABLE");
  return root;
}

/** The NativeModel methods this package calls; an addon built from older sources may lack some. */
const MODEL_METHODS = ["load", "info", "meta", "tokenize", "tokenizeAsync", "detokenize", "tokenPiece", "hiddenStates", "hiddenStatesMany", "score", "logits", "clearCache", "cacheStats", "generation", "abort", "dispose"] as const;

/** Which of {@link MODEL_METHODS} a NativeModel class lacks (an addon older than the package). */
export function missingModelMethods(cls: unknown): string[] {
  const proto = typeof cls === "function" ? (cls as { prototype?: Record<string, unknown> }).prototype : undefined;
  return MODEL_METHODS.filter((m) => typeof proto?.[m] !== "function");
}

/** Why the addon GAVEL_ADDON names did not load: a missing file, not a .node addon, or the loader's reason. */
export function explicitAddonMessage(path: string, err: Error): string {
  const st = statSync(path, { throwIfNoEntry: false });
  const reason = clip(err.message.split("\n")[0], 2 * CLIP_CHARS);
  const what = !st
    ? "no such file"
    : !st.isFile()
      ? "not a file"
      : !path.endsWith(".node")
        ? `not a native addon (a .node file built by \`npm run build:native\`): ${reason}`
        : reason;
  return `GAVEL_ADDON=${clip(path)} could not be loaded: ${what}. Unset GAVEL_ADDON to use the addon the package ships, or point it at an addon you built (build/Release/gavel.node).`;
}

/**
 * Why the addon did not load, and what a user can do: the addon ships prebuilt for linux-x64 (glibc)
 * in the package and for linux-arm64, win32-x64 and darwin-arm64/x64 in one optional package each
 * (./platform.ts); building it needs the repository's dev tools, so a user elsewhere is pointed at a
 * supported machine or container rather than at a build script they cannot run.
 */
export function addonUnavailableMessage(err: Error, platform: string = process.platform, arch: string = process.arch, listed: (pkg: string) => boolean = listsOptional): string {
  const here = `${platform}-${arch}`;
  const base = `gavel-router's native addon could not be loaded on ${here} with Node ${process.versions.node} (${err.message}).`;
  const lacks = /this CPU lacks ([\w.]+(?:,[\w.]+)*)/.exec(err.message);
  if (lacks && lacks[1].split(",").every((f) => f.startsWith("avx512"))) {
    // only the AVX-512 prebuild's extra features (asked for by GAVEL_CPU_VARIANT=avx512): the baseline one runs here
    return (
      `${base} The AVX-512 prebuild (GAVEL_CPU_VARIANT=avx512) needs ${AVX512_CPU_FEATURES.join(", ")} beyond the baseline, and this CPU does not pass its check. ` +
      "What you can do: unset GAVEL_CPU_VARIANT, or set it to avx2, to run the avx2 prebuild."
    );
  }
  if (lacks) {
    return (
      `${base} The addon's llama.cpp is compiled for x86-64 CPUs with ${REQUIRED_CPU_FEATURES.join(", ")} (Intel Haswell / AMD Excavator or newer). ` +
      "What you can do: run gavel-router on a newer x86-64 machine; in a virtual machine, let the guest see the host CPU's features (e.g. QEMU/KVM `-cpu host`)."
    );
  }
  const optional = platformPackageName(platform, arch);
  if (optional !== null && !listed(optional)) {
    // a copy packed from the repository, not a release: no platform package is listed to install
    return (
      `${base} On ${here} the addon comes in the optional package ${optional}, and this copy of gavel-router does not list it ` +
      `(its package.json has no optionalDependencies entry for it: a release build adds them). ` +
      `What you can do: install ${optional} beside it where it is published, run gavel-router on linux-x64, ` +
      "or set GAVEL_ADDON to an addon built for this platform."
    );
  }
  if (optional !== null) {
    return (
      `${base} On ${here} the addon comes in the optional package ${optional}, which npm installs beside gavel-router. ` +
      `What you can do: reinstall gavel-router without --omit=optional / --no-optional, and check that ` +
      `node_modules/${optional}/prebuilds/${here}/gavel-router.node exists` +
      (platform === "linux" ? "; a system C library (glibc) older than the addon needs, or musl (Alpine), is not supported" : "") +
      "; or set GAVEL_ADDON to an addon you built yourself."
    );
  }
  if (here !== "linux-x64") {
    return (
      `${base} gavel-router ships its addon prebuilt for ${PREBUILT_PLATFORMS.join(", ")} only, and ${here} is not supported yet. ` +
      "What you can do: run it on one of those, e.g. in a linux/amd64 container " +
      "(`docker run --platform linux/amd64 -it node:20 bash`, then `npm install gavel-router`), " +
      "or on a server of one of those platforms reached from this machine."
    );
  }
  return (
    `${base} On linux-x64 this usually means an incomplete install or a system C library (glibc) older than the prebuilt addon needs; musl (Alpine) is not supported. ` +
    "What you can do: reinstall gavel-router, and check that `node_modules/gavel-router/prebuilds/linux-x64/gavel-router.node` exists; " +
    "or set GAVEL_ADDON to an addon you built yourself."
  );
}


/**
 * The addon this process loaded: its file, where it came from, and on linux-x64 what became of the
 * opt-in CUDA package ({@link CudaAddonStatus}: its `reason` says why a CUDA package that is installed
 * is not the one loaded). `gavel info --addon` prints it.
 */
export interface AddonStatus {
  file: string;
  source: AddonSource;
  cuda: CudaAddonStatus | null;
}

let status: AddonStatus | undefined;

/** The loaded addon's {@link AddonStatus}, or null before {@link loadBinding}. */
export function addonStatus(): AddonStatus | null {
  return status ?? null;
}

/**
 * Readies a loaded addon: checks it has every method this package calls, gives it its settings and
 * initialises ggml; returns the devices found. With `needsCuda` (the CUDA package), an addon in which
 * no CUDA device answers is refused too, so that the CPU prebuild serves that machine.
 */
function prepare(b: NativeBinding, cfg: Config, needsCuda: boolean): readonly string[] {
  const missing = missingModelMethods(b.NativeModel);
  if (typeof b.configure !== "function") missing.push("configure (the addon's settings)");
  if (missing.length) {
    throw new GavelError(
      `gavel-router's native addon${cfg.addon ? ` (GAVEL_ADDON=${cfg.addon})` : ""} is older than this ` +
        `package: it lacks ${missing.join(", ")}. Rebuild it (npm run build:native, or the CUDA build) or unset GAVEL_ADDON.`,
      "NATIVE_UNAVAILABLE",
    );
  }
  b.setErrorClass(GavelError);
  b.configure(nativeSettings(cfg));
  // Both builds have their ggml backends linked in: nothing is loaded from another folder (and so
  // nothing of another llama.cpp in the process, such as node-llama-cpp's, is picked up or shared).
  const found = Object.freeze(b.init(null));
  if (needsCuda && !found.some((d) => /^CUDA\d/.test(d))) throw new Error(`no CUDA device answered (ggml found ${found.join(", ") || "none"})`);
  return found;
}

/**
 * Loads the addon once (GAVEL_ADDON, else a local build/Release, else on linux-x64 the opt-in CUDA
 * package, else the AVX-512 prebuild where the CPU has it, else this platform's optional package, else
 * the package's prebuilds/), gives it its settings (config.ts's, through configure) and initialises ggml.
 * In detail: GAVEL_ADDON; a local build (build/Release/gavel.node, build/Debug/gavel.node); on
 * linux-x64 the opt-in CUDA package where it is installed and GAVEL_CUDA_ADDON is not off
 * (./cuda-package.ts: one that cannot serve falls back, its reason in {@link addonStatus}, and a
 * warning GAVEL_CUDA_FALLBACK is emitted); the AVX-512 prebuild where the CPU has it (falling back to
 * the avx2 one, with a warning GAVEL_CPU_FALLBACK, when it is damaged or refuses the CPU); this
 * platform's optional package (./platform.ts); the package's prebuilds/<platform>-<arch>/
 * (./addon-file.ts). On Linux a file whose ELF headers do not fit it (truncated) is refused before
 * dlopen. A CPU without the addon's instruction set is refused first (./cpu.ts), with NATIVE_UNAVAILABLE.
 */
export function loadBinding(): NativeBinding {
  if (binding) return binding;
  const root = packageRoot();
  const cfg = config(); // every variable checked before the addon loads: a bad value fails here, typed
  const variant = selectCpuVariant(undefined, undefined, undefined, cfg.cpuVariant);
  const require = createRequire(join(root, "package.json"));
  const cuda = loadCudaPackage(root, cfg, (file) => {
    const b = require(file) as NativeBinding;
    return { b, found: prepare(b, cfg, true) };
  });
  if (cuda.status?.state === "fallback") {
    process.emitWarning(`${cuda.status.package} is installed but not used, ${cuda.status.reason}; the CPU addon runs instead (GAVEL_CUDA_ADDON=off silences this)`, { code: "GAVEL_CUDA_FALLBACK" });
  }
  const choice = chooseAddon(root, variant, cfg);
  if (cfg.cpuVariant === "avx512" && (cuda.addon || choice.notHonoured)) {
    const why = cuda.addon ? "the CUDA package's addon is loaded (GAVEL_CUDA_ADDON=off keeps to the CPU prebuilds)" : choice.notHonoured;
    process.emitWarning(`GAVEL_CPU_VARIANT=avx512 is not honoured: ${why}`, { code: "GAVEL_CPU_VARIANT" });
  }
  if (cuda.addon) {
    devices = cuda.addon.found;
    status = { file: cuda.status!.file!, source: "cuda-package", cuda: cuda.status };
    binding = cuda.addon.b;
    return binding;
  }
  let loaded: { value: NativeBinding; file: string };
  try {
    // require() would run a .js or parse a .json named by GAVEL_ADDON: only an addon is loaded
    if (cfg.addon && !choice.file.endsWith(".node")) throw new Error("its name does not end in .node");
    loaded = loadAddon(choice, (file) => require(file) as NativeBinding, (message) => process.emitWarning(message, { code: "GAVEL_CPU_FALLBACK" }));
  } catch (err) {
    // GAVEL_ADDON names the file: say what is wrong with it, not what an install lacks
    if (cfg.addon) throw new GavelError(explicitAddonMessage(cfg.addon, err instanceof DamagedAddonError ? new Error(`the file ${err.problem}`) : (err as Error)), "NATIVE_UNAVAILABLE", { cause: err });
    if (err instanceof DamagedAddonError) throw new GavelError(damagedAddonMessage(err, choice.source), "NATIVE_UNAVAILABLE", { cause: err });
    throw new GavelError(addonUnavailableMessage(err as Error), "NATIVE_UNAVAILABLE", { cause: err });
  }
  devices = prepare(loaded.value, cfg, false);
  status = { file: loaded.file, source: choice.source, cuda: cuda.status };
  binding = loaded.value;
  return binding;
}

/**
 * The ggml devices the loaded addon found at init, as "NAME (description)": "CPU (…)" always, and
 * "CUDA0 (NVIDIA H100 80GB HBM3)" and so on in a CUDA build with a GPU. Empty before {@link loadBinding}.
 */
export function backendDevices(): readonly string[] {
  return devices;
}

/** Whether gavel-router's own package.json lists `name` among its optionalDependencies (a release build does). */
function listsOptional(name: string): boolean {
  try {
    const pkg = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { optionalDependencies?: Record<string, string> };
    return pkg.optionalDependencies?.[name] !== undefined;
  } catch {
    return true; // unknown: keep the usual advice
  }
}
