// The one configuration module (src/config.ts): how each variable resolves, the bank folder's one
// meaning of "empty", typed errors naming the variable, the lint rule that keeps the environment in
// that module, and the generated page that lists every variable.
import { afterEach, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { bankDir, config, DEFAULT_BANK_DIR, nativeSettings, resetConfig, resolveConfig, SETTINGS } from "../../src/config.js";
import { resolveModelPath } from "../../src/defaults.js";
import { GavelError } from "../../src/errors.js";
import { loadBinding } from "../../src/native/binding.js";
import { runNode } from "../helpers/run.js";
import { defaultSocketPath, resolveBankDir } from "../../src/serve/protocol.js";
// @ts-expect-error plain .mjs script without types
import { checkEnvReads, envReadLines, getenvLines } from "../../scripts/lint/env-reads.mjs";
import { CONFIG_PAGE, renderConfigTable } from "../../scripts/gen/config-table.js";

/** Runs `body` with process.env's `vars` set (undefined: deleted), the configuration resolved afresh, then puts both back. */
function withEnv<T>(vars: Record<string, string | undefined>, body: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const put = (v: Record<string, string | undefined>) => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) delete process.env[k];
      else process.env[k] = x;
    }
  };
  put(vars);
  resetConfig();
  try {
    return body();
  } finally {
    put(saved);
    resetConfig();
  }
}

function thrown(f: () => unknown): GavelError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(GavelError);
    return e as GavelError;
  }
  throw new Error("expected a GavelError");
}

afterEach(() => resetConfig());

describe("resolveConfig", () => {
  it("gives the defaults for an empty environment", () => {
    const c = resolveConfig({});
    expect(c).toMatchObject({ glanceDevice: "auto", glanceKernel: "auto", glanceTopK: "auto", glanceLoader: "tma", log: false });
    expect(c.model).toBeUndefined();
    expect(c.bank).toBeUndefined();
    expect(c.kernelIsa).toBeUndefined();
    expect(nativeSettings(c)).toEqual({ logEcho: false, kernelIsa: null, glanceDevice: "auto", glanceKernel: "auto", glanceTopK: "auto", glanceLoader: "tma", glanceExact8: "off" });
  });

  it("reads each variable, typed", () => {
    const c = resolveConfig({
      GAVEL_MODEL: "/m.gguf", GAVEL_BANK: "b", GAVEL_KERNEL_ISA: "avx2", GAVEL_GLANCE_DEVICE: "cpu", GAVEL_GLANCE_KERNEL: "wmma",
      GAVEL_GLANCE_TOPK: "passes", GAVEL_GLANCE_LOADER: "cp.async", GAVEL_LOG: "1", UV_THREADPOOL_SIZE: "12", GAVEL_RESIDENT_ROWS: "4096",
      GAVEL_GLANCE_EXACT8: "on", GAVEL_GLANCE_ROW_WEIGHTS: "idf", GAVEL_GLANCE_VOTE_SHARE: "0.01",
      GAVEL_LIVE_ROW_WEIGHTS: "idf-decay", GAVEL_LIVE_VOTE_SHARE: "on", GAVEL_LIVE_LEXICAL: "window",
    });
    expect(c).toMatchObject({ glanceRowWeights: "idf", glanceVoteShare: 0.01, liveRowWeights: "idf-decay", liveVoteShare: "on", liveLexical: "window" });
    expect(resolveConfig({})).toMatchObject({ liveRowWeights: "decay", liveVoteShare: "off", liveLexical: "latest" });
    expect(() => resolveConfig({ GAVEL_LIVE_LEXICAL: "recent" })).toThrow(/GAVEL_LIVE_LEXICAL/);
    expect(() => resolveConfig({ GAVEL_LIVE_ROW_WEIGHTS: "uniform" })).toThrow(/GAVEL_LIVE_ROW_WEIGHTS/);
    for (const [v, n] of [["0", 0], ["1", 1], [".5", 0.5], ["1e-3", 0.001], [" 0.25 ", 0.25]] as const) expect(resolveConfig({ GAVEL_GLANCE_VOTE_SHARE: v }).glanceVoteShare).toBe(n);
    expect(resolveConfig({}).glanceVoteShare).toBeUndefined();
    expect(resolveConfig({}).glanceRowWeights).toBeUndefined();
    expect(c).toMatchObject({ model: "/m.gguf", bank: "b", kernelIsa: "avx2", glanceDevice: "cpu", glanceKernel: "wmma", glanceTopK: "passes", glanceLoader: "cp.async", log: true, threadPoolSize: 12, residentRows: 4096 });
    expect(nativeSettings(c)).toEqual({ logEcho: true, kernelIsa: "avx2", glanceDevice: "cpu", glanceKernel: "wmma", glanceTopK: "passes", glanceLoader: "cp.async", glanceExact8: "on" });
  });

  it("leaves libuv's UV_THREADPOOL_SIZE to libuv: a value that is no pool size is not refused, only not used", () => {
    expect(resolveConfig({ UV_THREADPOOL_SIZE: "0" }).threadPoolSize).toBeUndefined();
    expect(resolveConfig({ UV_THREADPOOL_SIZE: "4x" }).threadPoolSize).toBeUndefined();
  });

  it("takes an empty value as unset, for every variable", () => {
    const empty = Object.fromEntries(SETTINGS.map((s) => [s.name, ""]));
    expect(resolveConfig(empty)).toEqual(resolveConfig({}));
  });

  it.each([
    ["GAVEL_KERNEL_ISA", "sse2"], ["GAVEL_GLANCE_DEVICE", "gpu"], ["GAVEL_GLANCE_KERNEL", "mma"], ["GAVEL_GLANCE_TOPK", "onepass"],
    ["GAVEL_GLANCE_LOADER", "dma"], ["GAVEL_LOG", "yes"], ["GAVEL_CPU_VARIANT", "avx"], ["GAVEL_RESIDENT_ROWS", "512"],
    ["GAVEL_RESIDENT_ROWS", "4096x"], ["GAVEL_GLANCE_ROW_WEIGHTS", "bm25"], ["GAVEL_GLANCE_VOTE_SHARE", "1.5"],
    ["GAVEL_GLANCE_VOTE_SHARE", "-0.1"], ["GAVEL_GLANCE_VOTE_SHARE", "0x10"], ["GAVEL_GLANCE_VOTE_SHARE", "1%"], ["GAVEL_GLANCE_VOTE_SHARE", "NaN"],
  ])("%s=%s is an INVALID_ARGUMENT naming the variable", (name, value) => {
    const e = thrown(() => resolveConfig({ [name]: value }));
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toContain(name);
    expect(e.message).toContain(JSON.stringify(value));
  });
});

describe("config(): once per process", () => {
  it("is resolved once and kept until resetConfig", () => {
    withEnv({ GAVEL_BANK: "first" }, () => {
      expect(config().bank).toBe("first");
      process.env.GAVEL_BANK = "second";
      expect(config().bank).toBe("first");
      resetConfig();
      expect(config().bank).toBe("second");
    });
  });

  it("fails typed on the first use when a variable is bad", () => {
    withEnv({ GAVEL_GLANCE_DEVICE: "tpu" }, () => {
      expect(thrown(() => config()).message).toContain("GAVEL_GLANCE_DEVICE");
    });
  });
});

describe("the bank folder: one meaning for every command", () => {
  it("takes the argument, else GAVEL_BANK, else .gavel/bank; empty counts as not given", () => {
    withEnv({ GAVEL_BANK: undefined }, () => {
      expect(bankDir()).toBe(DEFAULT_BANK_DIR);
      expect(bankDir("")).toBe(DEFAULT_BANK_DIR);
      expect(bankDir("x")).toBe("x");
      expect(bankDir(undefined, "/proj")).toBe(join("/proj", DEFAULT_BANK_DIR));
    });
    withEnv({ GAVEL_BANK: "" }, () => {
      expect(bankDir()).toBe(DEFAULT_BANK_DIR);
      expect(bankDir(undefined, "/proj")).toBe(join("/proj", DEFAULT_BANK_DIR));
    });
    withEnv({ GAVEL_BANK: "/env/bank" }, () => {
      expect(bankDir()).toBe("/env/bank");
      expect(bankDir("", "/proj")).toBe("/env/bank");
      expect(bankDir("flag")).toBe("flag");
      expect(resolveBankDir(undefined, "/cwd")).toBe("/env/bank");
    });
    withEnv({ GAVEL_BANK: "rel" }, () => expect(resolveBankDir(undefined, "/cwd")).toBe("/cwd/rel"));
  });

  it("model and socket defaults follow the same rules", () => {
    withEnv({ GAVEL_MODEL: "", XDG_RUNTIME_DIR: "/run/u" }, () => {
      expect(resolveModelPath().source).not.toBe("env");
      expect(resolveModelPath(undefined, { GAVEL_MODEL: "/x.gguf" })).toEqual({ path: "/x.gguf", source: "env" });
      const long = "/" + "d".repeat(120);
      expect(defaultSocketPath(long)).toMatch(/^\/run\/u\/gavel-[0-9a-f]{16}\.sock$/);
    });
  });
});

describe("native settings: from the environment through configure(), never getenv", () => {
  it("the loader hands GAVEL_KERNEL_ISA and GAVEL_GLANCE_DEVICE to the addon; a bad variable fails the load, typed", async () => {
    const script = [
      `import { loadBinding, glanceDevice } from ${JSON.stringify(new URL("../../dist/index.js", import.meta.url).href)};`,
      "try { const b = loadBinding(); console.log(b.kernelIsa(), glanceDevice().device); } catch (e) { console.log(e.code, e.message); }",
    ].join("\n");
    const env = { ...process.env, GAVEL_KERNEL_ISA: "generic", GAVEL_GLANCE_DEVICE: "cpu" };
    const ok = await runNode(["--input-type=module", "-e", script], { env });
    expect(ok.out.trim()).toBe("generic cpu");
    const bad = await runNode(["--input-type=module", "-e", script], { env: { ...env, GAVEL_GLANCE_KERNEL: "mma" } });
    expect(bad.out.trim()).toMatch(/^INVALID_ARGUMENT GAVEL_GLANCE_KERNEL must be auto or wmma/);
  });

  it("configure sets the keys given, refuses a bad value typed and then changes nothing", () => {
    const b = loadBinding();
    const best = (() => {
      b.configure({ kernelIsa: null });
      return b.kernelIsa();
    })();
    try {
      b.configure({ kernelIsa: "generic" });
      expect(b.kernelIsa()).toBe("generic");
      let err: unknown;
      try {
        b.configure({ kernelIsa: null, glanceDevice: "gpu" as never });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GavelError);
      expect((err as GavelError).code).toBe("INVALID_ARGUMENT");
      expect((err as GavelError).message).toMatch(/glanceDevice must be one of auto \| cpu \| cuda/);
      expect(b.kernelIsa()).toBe("generic"); // the valid key of the refused call was not applied
      expect(() => b.configure(null as never)).toThrow(GavelError);
    } finally {
      b.configure({ kernelIsa: config().kernelIsa ?? null });
    }
    expect(b.kernelIsa()).toBe(config().kernelIsa ?? best);
  });
});

describe("lint: the environment is read only in src/config.ts", () => {
  function tree(files: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), "gavel-env-"));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return dir;
  }
  const clean = {
    "src/config.ts": "export const X = process.env.GAVEL_X;\n",
    "src/a.ts": 'import { X } from "./config.js";\n// process.env in a comment is fine\nexport const A = X ?? "process.env";\n',
    "native/src/a.cpp": '// std::getenv("X") in a comment\nconst char* s = "getenv(";\nint f(int getenv_count) { return getenv_count; }\n',
  };

  it("accepts a tree whose only read is in the configuration module", () => {
    expect(checkEnvReads(tree(clean))).toEqual([]);
  });

  it("catches a planted process.env read in src/ and lab/, and a getenv in native/src", () => {
    const dir = tree({
      ...clean,
      "src/cli/x.ts": "export const b = process.env.GAVEL_BANK;\n",
      "lab/train/y.ts": 'export const e = process["env"];\n',
      "native/src/kernels/k.cu": 'const char* v = std::getenv("GAVEL_GLANCE_KERNEL");\n',
    });
    const got: string[] = checkEnvReads(dir);
    expect(got).toHaveLength(3);
    expect(got[0]).toMatch(/^src\/cli\/x\.ts:1: reads process\.env/);
    expect(got[1]).toMatch(/^lab\/train\/y\.ts:1: reads process\.env/);
    expect(got[2]).toMatch(/^native\/src\/kernels\/k\.cu:1: calls getenv/);
  });

  it("sees the other spellings of a read", () => {
    expect(envReadLines("const { env } = process;\n")).toEqual([1]);
    expect(envReadLines('import { env } from "node:process";\nexport const a = env.A;\n')).toEqual([1]);
    expect(envReadLines("export const a = 1;\n\nexport const b = process.env.B;\n")).toEqual([3]);
    expect(getenvLines("int a;\nauto v = secure_getenv (\"X\");\n")).toEqual([2]);
  });
});

describe("docs/configuration.md", () => {
  it("is the generated table of every declared variable (npm run gen:config when this fails)", () => {
    expect(readFileSync(CONFIG_PAGE, "utf8")).toBe(renderConfigTable());
    for (const s of SETTINGS) expect(renderConfigTable()).toContain(`| \`${s.name}\` |`);
  });

  it("declares every variable the package resolves", () => {
    const names = new Set(SETTINGS.map((s) => s.name));
    const source = readFileSync(new URL("../../src/config.ts", import.meta.url), "utf8");
    for (const m of source.matchAll(/\(env, "([A-Z_]+)"/g)) expect(names.has(m[1]!)).toBe(true);
  });
});
