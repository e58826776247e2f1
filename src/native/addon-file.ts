/**
 * Which addon file the loader (./binding.ts) requires, and the check each file passes first. The file
 * is found from process.platform and process.arch and the package's own folders only: GAVEL_ADDON; a
 * local build (build/Release/gavel.node, build/Debug/gavel.node: ./platform.ts hasLocalBuild); on
 * linux-x64 the AVX-512 prebuild where ./cpu.ts picks it, else prebuilds/linux-x64/; elsewhere this
 * platform's optional package, else the package's prebuilds/<platform>-<arch>/. No other environment
 * variable steers it (npm_config_arch, which npm sets from an .npmrc, LIBC and PREBUILDS_ONLY are not read).
 *
 * On Linux every file is checked from its ELF headers before dlopen ({@link elfProblem}): a truncated
 * addon would be mapped whole and kill the process with SIGBUS when its missing pages are touched.
 * The AVX-512 prebuild falls back to the avx2 one, with a warning GAVEL_CPU_FALLBACK, when it fails
 * that check or refuses the CPU at load (its own CPUID/XCR0 check, stricter than /proc/cpuinfo under
 * some virtual machines and valgrind).
 */
import { closeSync, existsSync, fstatSync, openSync, readSync, statSync } from "node:fs";
import { join, resolve as resolvePath } from "node:path";
import { CLIP_CHARS, clip } from "../errors.js";
import type { CpuVariant } from "./cpu.js";
import { localBuildFile, platformPackageDir } from "./platform.js";

/** Where the loaded addon came from (see loadBinding for the order). */
export type AddonSource = "GAVEL_ADDON" | "local-build" | "cuda-package" | "platform-package" | "prebuild";

/** ELF e_machine of each architecture with a prebuilt addon on Linux. */
const ELF_MACHINE: Readonly<Record<string, number>> = { x64: 62, arm64: 183 };

/**
 * Why `file` cannot be a whole 64-bit little-endian ELF shared object of `arch`, as a phrase after its
 * name ("is truncated: …"), or null when its headers fit: a file shorter than what its program headers
 * load (or than its section header table) is refused before dlopen, which would map the missing pages
 * and kill the process with SIGBUS when they are touched (a partial download or copy). Reads the
 * headers only; never throws (a file that cannot be read says so).
 */
export function elfProblem(file: string, arch: string = process.arch): string | null {
  let fd: number | undefined;
  try {
    if (!statSync(file).isFile()) return "is not a file"; // before open: a FIFO would block it
    fd = openSync(file, "r");
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(64);
    if (readSync(fd, head, 0, 64, 0) < 64 || head.readUInt32BE(0) !== 0x7f454c46) return "is not an ELF file";
    const machine = ELF_MACHINE[arch];
    if (head[4] !== 2 || head[5] !== 1 || (machine !== undefined && head.readUInt16LE(18) !== machine)) return `is not a 64-bit little-endian ${arch} ELF file`;
    const phoff = Number(head.readBigUInt64LE(0x20));
    const shoff = Number(head.readBigUInt64LE(0x28));
    const phentsize = head.readUInt16LE(0x36);
    const phnum = head.readUInt16LE(0x38);
    let need = shoff + head.readUInt16LE(0x3a) * head.readUInt16LE(0x3c);
    // (sized against the file before anything is allocated: damaged headers may name gigabytes)
    if (phentsize < 56 || phoff + phentsize * phnum > size) return `is truncated (${size} bytes, shorter than its program headers)`;
    const ph = Buffer.alloc(phentsize * phnum);
    if (readSync(fd, ph, 0, ph.length, phoff) < ph.length) return `is truncated (${size} bytes, shorter than its program headers)`;
    for (let i = 0; i < phnum; i++) {
      const at = i * phentsize;
      if (ph.readUInt32LE(at) === 1) need = Math.max(need, Number(ph.readBigUInt64LE(at + 8) + ph.readBigUInt64LE(at + 32))); // PT_LOAD: p_offset + p_filesz
    }
    return size < need ? `is truncated: ${size} bytes of the ${need} its ELF headers describe` : null;
  } catch (err) {
    return `cannot be read (${clip((err as NodeJS.ErrnoException).code ?? (err as Error).message)})`;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** An addon file refused by {@link elfProblem} before it was loaded. */
export class DamagedAddonError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`${clip(file)} ${problem}`);
  }
}

/** The addon file to load: where it came from, and the avx2 prebuild to take when the AVX-512 one cannot serve. */
export interface AddonChoice {
  file: string;
  source: AddonSource;
  /** Only for the AVX-512 prebuild, unless GAVEL_CPU_VARIANT=avx512 asked for it. */
  fallback?: string;
  /** Why GAVEL_CPU_VARIANT=avx512 is not honoured, when it is set and the file is not the AVX-512 prebuild. */
  notHonoured?: string;
}

/** A prebuild under `root`: prebuilds/<folder>/gavel-router.node. */
function prebuild(root: string, folder: string): string {
  return join(root, "prebuilds", folder, "gavel-router.node");
}

/**
 * The addon the loader takes under package root `root` after the CUDA package (see the module's
 * comment), for CPU `variant` (./cpu.ts selectCpuVariant) and the GAVEL_ADDON and GAVEL_CPU_VARIANT
 * settings. The file may be missing: loading it says so.
 */
export function chooseAddon(
  root: string,
  variant: CpuVariant,
  settings: { addon?: string; cpuVariant?: string },
  platform: string = process.platform,
  arch: string = process.arch,
): AddonChoice {
  const here = `${platform}-${arch}`;
  const choice = ((): AddonChoice => {
    if (settings.addon) return { file: resolvePath(settings.addon), source: "GAVEL_ADDON" }; // relative: to the working folder, as typed
    const local = localBuildFile(root);
    if (local !== null) return { file: local, source: "local-build" };
    if (here === "linux-x64") {
      const avx512 = prebuild(root, "linux-x64-avx512");
      if (variant === "avx512" && existsSync(avx512)) {
        return { file: avx512, source: "prebuild", ...(settings.cpuVariant === "avx512" ? {} : { fallback: prebuild(root, here) }) };
      }
      return { file: prebuild(root, here), source: "prebuild" };
    }
    const pkg = platformPackageDir(root, platform, arch);
    if (pkg !== null) return { file: prebuild(pkg, here), source: "platform-package" };
    return { file: prebuild(root, here), source: "prebuild" };
  })();
  if (settings.cpuVariant === "avx512" && choice.file !== prebuild(root, "linux-x64-avx512")) {
    choice.notHonoured =
      choice.source === "GAVEL_ADDON"
        ? "GAVEL_ADDON names the addon to load"
        : choice.source === "local-build"
          ? `a local build (${clip(choice.file)}) is loaded first`
          : here !== "linux-x64"
            ? `there is no AVX-512 prebuild for ${here}`
            : variant !== "avx512"
              ? "/proc/cpuinfo could not be read or lists no CPU flags to check it against"
              : `${clip(prebuild(root, "linux-x64-avx512"))} is missing`;
  }
  return choice;
}

/** Requires `file` through `load` once it exists and, on Linux, its ELF headers fit ({@link elfProblem}). */
function loadChecked<T>(file: string, load: (file: string) => T, platform: string, arch: string): T {
  if (!existsSync(file)) throw new Error(`${clip(file)} does not exist`);
  const problem = platform === "linux" ? elfProblem(file, arch) : null;
  if (problem !== null) throw new DamagedAddonError(file, problem);
  return load(file);
}

/**
 * Loads the chosen addon through `load` (require and ready it): the file is checked first; the AVX-512
 * prebuild that fails the check, or refuses the CPU at load ("this CPU lacks …", its own CPUID/XCR0
 * check), gives way to the avx2 prebuild with `warn`'s warning. Returns what `load` returned and the
 * file loaded; throws {@link DamagedAddonError} for a file the check refuses, else `load`'s error.
 */
export function loadAddon<T>(
  choice: AddonChoice,
  load: (file: string) => T,
  warn: (message: string) => void,
  platform: string = process.platform,
  arch: string = process.arch,
): { value: T; file: string } {
  if (choice.fallback === undefined) return { value: loadChecked(choice.file, load, platform, arch), file: choice.file };
  try {
    return { value: loadChecked(choice.file, load, platform, arch), file: choice.file };
  } catch (err) {
    const why =
      err instanceof DamagedAddonError
        ? `${err.message} (reinstall gavel-router to restore it)`
        : err instanceof Error && /^this CPU lacks/.test(err.message)
          ? `refused this CPU, though /proc/cpuinfo lists every feature it needs (a virtual machine or valgrind can hide them from its own check): ${clip(err.message.split("\n")[0], 2 * CLIP_CHARS)}`
          : null;
    if (why === null) throw err;
    warn(`the AVX-512 prebuild ${why}; the avx2 prebuild runs instead (GAVEL_CPU_VARIANT=avx2 selects it and silences this)`);
    return { value: loadChecked(choice.fallback, load, platform, arch), file: choice.fallback };
  }
}

/** The message of an addon file refused before dlopen, with what to do for where it came from. */
export function damagedAddonMessage(err: DamagedAddonError, source: AddonSource): string {
  const todo =
    source === "local-build"
      ? "rebuild it (npm run build:native) or remove the build/ folder to use the prebuilt addon"
      : source === "platform-package"
        ? "reinstall gavel-router and its platform package (a partial download or copy leaves such a file)"
        : "reinstall gavel-router (a partial download or copy leaves such a file)";
  const sigbus = /^is truncated/.test(err.problem) ? " (dlopen would stop the process with SIGBUS on its missing pages)" : "";
  return `gavel-router's native addon ${err.message}, so it was not loaded${sigbus}. What you can do: ${todo}.`;
}
