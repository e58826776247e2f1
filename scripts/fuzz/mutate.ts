/**
 * The fuzzer's seeded mutators (issue 17), small and dependency-free. Every mutation draws from one
 * `R` (the package's mulberry32), so a trial's input is a function of its seed alone and replays
 * exactly. Each mutator returns a short description of what it did, printed with a failure.
 *
 * - bytes: bit flips, interesting bytes / u32 / u64 / f32 / f64 values, truncation, extension,
 *   chunk deletion, duplication and insertion;
 * - text (SKILL.md): truncation, huge runs, unicode (surrogates, bidi, zero-width, combining, astral),
 *   control characters and NUL, YAML tricks (aliases, tags, merge keys, deep nesting, duplicate and
 *   odd-typed keys, multi-documents, tabs), front-matter fences moved or removed;
 * - GGUF: a walker of the header (written here, independent of src/gguf) that locates each metadata
 *   value and tensor-info field, so a mutation hits a field: a scalar set to an edge value, a string or
 *   array length made huge, tensor dims / type / offset changed, or a block of NaN in tensor data;
 * - JSON: a field of a parsed document deleted, retyped or set to an edge value.
 */
import { Rng } from "../../src/util/prng.js";

/** A seeded stream of draws. */
export class R {
  readonly #rng: Rng;
  constructor(seed: number) {
    this.#rng = new Rng(seed >>> 0);
  }
  next(): number {
    return this.#rng.next();
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** A 32-bit seed for trial `i` of `target` under the run's `base` seed (murmur3's finaliser). */
export function trialSeed(base: number, target: string, i: number): number {
  let h = (base ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0;
  for (let k = 0; k < target.length; k++) h = Math.imul(h ^ target.charCodeAt(k), 0x01000193) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const U32_EDGES = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const F64_EDGES = [NaN, Infinity, -Infinity, -1, 0, -0, 1e30, -1e30, 5e-324, 1e-30, 3.4e38, 2 ** 53];

/** Writes an edge value of `width` bytes (1, 2, 4 or 8) at `at`; f = float edges (4 or 8 bytes). */
function writeEdge(r: R, buf: Buffer, at: number, width: number, float: boolean): string {
  if (at + width > buf.length) return "edge: no room";
  if (float) {
    const v = r.pick(F64_EDGES);
    if (width === 4) buf.writeFloatLE(v, at);
    else buf.writeDoubleLE(v, at);
    return `f${width * 8}@${at}=${v}`;
  }
  const v = r.pick(U32_EDGES);
  if (width === 1) buf.writeUInt8(v & 0xff, at);
  else if (width === 2) buf.writeUInt16LE(v & 0xffff, at);
  else if (width === 4) buf.writeUInt32LE(v >>> 0, at);
  else buf.writeBigUInt64LE(r.chance(0.3) ? 0xffffffffffffffffn : r.chance(0.5) ? BigInt(v) << 32n : BigInt(v), at);
  return `u${width * 8}@${at}=${v}`;
}

/** One random byte-level mutation of `buf` within [lo, hi) (default the whole buffer). */
export function mutateBytes(r: R, buf: Buffer, lo = 0, hi = buf.length): { out: Buffer; what: string } {
  hi = Math.max(lo + 1, Math.min(hi, buf.length));
  const at = lo + r.int(hi - lo);
  const b = Buffer.from(buf);
  switch (r.int(9)) {
    case 0: {
      const n = 1 + r.int(r.chance(0.8) ? 1 : 16);
      const spots: number[] = [];
      for (let k = 0; k < n; k++) {
        const p = lo + r.int(hi - lo);
        b[p] ^= 1 << r.int(8);
        spots.push(p);
      }
      return { out: b, what: `bitflip@${spots.join(",")}` };
    }
    case 1:
      b[at] = r.pick([0, 0xff, 0x7f, 0x80, 0x20, 0x0a, 0x22, 0x5c, 0x2d]);
      return { out: b, what: `byte@${at}=${b[at]}` };
    case 2:
      return { out: b, what: writeEdge(r, b, at, r.pick([1, 2, 4, 8]), false) };
    case 3:
      return { out: b, what: writeEdge(r, b, at, r.pick([4, 8]), true) };
    case 4:
      return { out: b.subarray(0, at), what: `truncate@${at}` };
    case 5: {
      const n = 1 + r.int(r.chance(0.5) ? 64 : 65536);
      return { out: Buffer.concat([b, r.chance(0.5) ? Buffer.alloc(n) : randomBytes(r, n)]), what: `extend+${n}` };
    }
    case 6: {
      const n = 1 + r.int(Math.min(4096, hi - at));
      return { out: Buffer.concat([b.subarray(0, at), b.subarray(at + n)]), what: `delete@${at}+${n}` };
    }
    case 7: {
      const n = 1 + r.int(Math.min(4096, hi - at));
      return { out: Buffer.concat([b.subarray(0, at + n), b.subarray(at, at + n), b.subarray(at + n)]), what: `duplicate@${at}+${n}` };
    }
    default: {
      const n = 1 + r.int(256);
      return { out: Buffer.concat([b.subarray(0, at), randomBytes(r, n), b.subarray(at)]), what: `insert@${at}+${n}` };
    }
  }
}

export function randomBytes(r: R, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = r.int(256);
  return b;
}

const UNICODE = ["\u0000", "\u0007", "\u001b[2J", "\u007f", "\u0085", "\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\ufffd", "\ud800", "\udfff", "\ud83d\ude00", "e\u0301", "\u0430", "\u2028", "\r", "\r\n", "\t", "\\", "\"", "'", "---", "\n---\n", ":", "#", "&", "*", "!", "|", ">", "{", "[", "%", "@", "`"];

/** A random short string of awkward characters. */
export function awkward(r: R, n = 1 + r.int(12)): string {
  let s = "";
  for (let i = 0; i < n; i++) s += r.chance(0.7) ? r.pick(UNICODE) : String.fromCharCode(r.int(0x3000));
  return s;
}

/** YAML that parsers trip on (each kept small: the caps are the loader's job). */
function yamlTrick(r: R): string {
  const n = 1 + r.int(r.chance(0.5) ? 10 : 2000);
  switch (r.int(14)) {
    case 0: {
      // alias bomb: each level doubles
      let y = "a0: &a0 [x, x]\n";
      for (let k = 1; k <= Math.min(n, 40); k++) y += `a${k}: &a${k} [*a${k - 1}, *a${k - 1}]\n`;
      return y;
    }
    case 1:
      return `deep: ${"[".repeat(n)}${"]".repeat(n)}\n`;
    case 2:
      return `deep:\n${Array.from({ length: Math.min(n, 300) }, (_, k) => `${" ".repeat(k + 1)}k${k}:`).join("\n")} x\n`;
    case 3:
      return Array.from({ length: n }, (_, k) => `key${k}: v${k}`).join("\n") + "\n";
    case 4:
      return "name: a\nname: b\n";
    case 5:
      return r.pick(["name: !!js/function 'function(){}'\n", "name: !!binary aGk=\n", "name: !!set {a, b}\n", "name: !custom x\n", "description: !!timestamp 2001-12-14\n", "name: !!str\n"]);
    case 6:
      return "base: &b {name: x, description: y}\n<<: *b\n";
    case 7:
      return r.pick(["name: [1, 2]\n", "name: {a: b}\n", "name: 12\n", "name: null\n", "name: ~\n", "description: 1e309\n", "name: .nan\n", "description: [*x]\n", "? [a, b]\n: c\n", "name: 0x1F\n", "name: true\n"]);
    case 8:
      return r.pick(["disable-model-invocation: yes\n", "disable-model-invocation: on\n", "disable-model-invocation: 1\n", "disable-model-invocation: [true]\n", "disable-model-invocation: 'false'\n"]);
    case 9:
      return "\tname: tabbed\n";
    case 10:
      return "---\nname: second-doc\n...\n";
    case 11:
      return `description: "${"\\u0000".repeat(Math.min(n, 50))}\\ud800"\n`;
    case 12:
      return `description: |\n${"  line\n".repeat(Math.min(n, 500))}`;
    default:
      return `${awkward(r)}: ${awkward(r)}\n`;
  }
}

/** One random text-level mutation of a SKILL.md. */
export function mutateSkillText(r: R, text: string): { out: string | Buffer; what: string } {
  const fm = text.indexOf("\n---", 3);
  const inFm = () => 4 + r.int(Math.max(1, fm - 4));
  const anywhere = () => r.int(text.length + 1);
  const ins = (at: number, s: string) => text.slice(0, at) + s + text.slice(at);
  switch (r.int(10)) {
    case 0: {
      const at = anywhere();
      return { out: text.slice(0, at), what: `truncate@${at}` };
    }
    case 1: {
      const m = mutateBytes(r, Buffer.from(text, "utf8"));
      return { out: m.out, what: m.what };
    }
    case 2: {
      const at = fm > 0 && r.chance(0.6) ? inFm() : anywhere();
      const s = awkward(r);
      return { out: ins(at, s), what: `unicode@${at}:${JSON.stringify(s)}` };
    }
    case 3: {
      const at = fm > 0 ? fm + 1 : 0;
      const y = yamlTrick(r);
      return { out: ins(at, y), what: `yaml@${at}:${JSON.stringify(y.slice(0, 60))}(${y.length})` };
    }
    case 4: {
      const n = r.pick([1000, 70_000, 1 << 20, (1 << 20) + 1, 3 << 20]);
      const at = r.chance(0.5) && fm > 0 ? inFm() : text.length;
      return { out: ins(at, r.pick(["a", " ", "\u00e9", "\u0000", "word ", "\ud83d\ude00"]).repeat(Math.ceil(n / 2))), what: `huge@${at}:${n}` };
    }
    case 5: {
      const v = r.pick(["", "x", "\u0000", awkward(r), "a".repeat(5000), "Bad Name!", "../../etc", "name-\u202e"]);
      const field = r.pick(["name", "description"]);
      return { out: text.replace(new RegExp(`^${field}:.*$`, "m"), `${field}: ${JSON.stringify(v)}`), what: `${field}=${JSON.stringify(v.slice(0, 40))}` };
    }
    case 6:
      return { out: r.pick([text.replace(/^---\n/, ""), text.replace(/\n---\n/, "\n"), text.replace(/^---/, "--- "), "\ufeff" + text, text.replace(/\n/g, "\r\n"), text.replace(/\n/g, "\r")]), what: "fences" };
    case 7:
      return { out: r.pick(["", "---\n---\n", "---\n", "---\nname: x\n", "\u0000".repeat(100), "---\n" + yamlTrick(r) + "---\nbody\n"]), what: "replace" };
    case 8: {
      const at = anywhere();
      const s = String.fromCharCode(r.int(32));
      return { out: ins(at, s.repeat(1 + r.int(4))), what: `control@${at}:${s.charCodeAt(0)}` };
    }
    default: {
      // UTF-16 or invalid UTF-8
      if (r.chance(0.5)) return { out: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]), what: "utf16le" };
      const b = Buffer.from(text, "utf8");
      const at = r.int(b.length + 1);
      return { out: Buffer.concat([b.subarray(0, at), Buffer.from(r.pick([[0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf], [0xef, 0xbf, 0xbf]])), b.subarray(at)]), what: `badutf8@${at}` };
    }
  }
}

/** A field of a GGUF header: where its bytes are and what they hold. */
export interface GgufField {
  at: number;
  width: number;
  kind: "u" | "f" | "len" | "type" | "count";
  what: string;
}

/** The fields of a GGUF file's header, and where tensor data starts (each tensor's data range). */
export interface GgufLayout {
  fields: GgufField[];
  headerEnd: number;
  dataStart: number;
  tensors: { name: string; type: number; dims: number[]; offset: number }[];
}

const SCALAR_WIDTH = [1, 1, 2, 2, 4, 4, 4, 1, -1, -1, 8, 8, 8];
const FLOAT_TYPES = new Set([6, 12]);

/** Walks a (well-formed) GGUF v2/v3 header. */
export function ggufLayout(buf: Buffer): GgufLayout {
  const fields: GgufField[] = [];
  let at = 8;
  const u64 = (what: string, kind: GgufField["kind"] = "count") => {
    fields.push({ at, width: 8, kind, what });
    const v = Number(buf.readBigUInt64LE(at));
    at += 8;
    return v;
  };
  const u32 = (what: string, kind: GgufField["kind"]) => {
    fields.push({ at, width: 4, kind, what });
    const v = buf.readUInt32LE(at);
    at += 4;
    return v;
  };
  const str = (what: string) => {
    const n = u64(`${what}.len`, "len");
    const s = buf.toString("utf8", at, at + n);
    at += n;
    return s;
  };
  const value = (t: number, what: string) => {
    if (t === 8) return void str(what);
    if (t === 9) {
      const et = u32(`${what}.arrtype`, "type");
      const n = u64(`${what}.arrlen`, "len");
      for (let k = 0; k < n; k++) {
        if (et === 8) str(`${what}[${k}]`);
        else {
          const w = SCALAR_WIDTH[et];
          if (k < 64 || k % 97 === 0) fields.push({ at, width: w, kind: FLOAT_TYPES.has(et) ? "f" : "u", what: `${what}[${k}]` });
          at += w;
        }
      }
      return;
    }
    fields.push({ at, width: SCALAR_WIDTH[t], kind: FLOAT_TYPES.has(t) ? "f" : "u", what });
    at += SCALAR_WIDTH[t];
  };
  const nTensors = u64("n_tensors");
  const nKv = u64("n_kv");
  let alignment = 32;
  for (let k = 0; k < nKv; k++) {
    const key = str(`kv${k}.key`);
    const t = u32(`${key}.type`, "type");
    const valueAt = at;
    value(t, key);
    if (key === "general.alignment") alignment = buf.readUInt32LE(valueAt);
  }
  const tensors: GgufLayout["tensors"] = [];
  for (let k = 0; k < nTensors; k++) {
    const name = str(`tensor${k}.name`);
    const nd = u32(`${name}.n_dims`, "count");
    const dims: number[] = [];
    for (let d = 0; d < nd; d++) dims.push(u64(`${name}.dim${d}`));
    const type = u32(`${name}.type`, "type");
    const offset = u64(`${name}.offset`);
    tensors.push({ name, type, dims, offset });
  }
  const headerEnd = at;
  return { fields, headerEnd, dataStart: Math.ceil(headerEnd / alignment) * alignment, tensors };
}

/** One mutation of a GGUF file: a header field (most often), header bytes, or tensor data. */
export function mutateGguf(r: R, buf: Buffer, layout: GgufLayout, opts: { nanBlocks?: boolean; fieldFilter?: RegExp } = {}): { out: Buffer; what: string } {
  const roll = r.next();
  if (roll < 0.6) {
    const pool = opts.fieldFilter && r.chance(0.5) ? layout.fields.filter((f) => opts.fieldFilter!.test(f.what)) : layout.fields;
    const f = r.pick(pool.length > 0 ? pool : layout.fields);
    const b = Buffer.from(buf);
    let what: string;
    if (f.kind === "f") what = writeEdge(r, b, f.at, f.width, true);
    else if (f.kind === "type") {
      const v = r.pick([0, 1, 2, 4, 6, 7, 8, 9, 10, 12, 13, 30, 0xffffffff]);
      b.writeUInt32LE(v, f.at);
      what = `=${v}`;
    } else if (r.chance(0.3)) {
      // off by a little
      const old = f.width === 8 ? Number(b.readBigUInt64LE(f.at)) : f.width === 4 ? b.readUInt32LE(f.at) : f.width === 2 ? b.readUInt16LE(f.at) : b.readUInt8(f.at);
      const v = Math.max(0, old + r.pick([-2, -1, 1, 2, old]));
      // a 64-bit field wraps as a u64 does (doubling one near 2^64 would not fit)
      if (f.width === 8) b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)), f.at);
      else if (f.width === 4) b.writeUInt32LE(v >>> 0, f.at);
      else if (f.width === 2) b.writeUInt16LE(v & 0xffff, f.at);
      else b.writeUInt8(v & 0xff, f.at);
      what = `${old}->${v}`;
    } else what = writeEdge(r, b, f.at, f.width, false);
    return { out: b, what: `field ${f.what} ${what}` };
  }
  if (roll < 0.85 || !opts.nanBlocks) {
    const m = mutateBytes(r, buf, 0, layout.headerEnd);
    return { out: m.out, what: `header ${m.what}` };
  }
  // a block of NaN / Inf / zeros / huge values in one f32 tensor's data
  const t = r.pick(layout.tensors.filter((x) => x.type === 0));
  if (!t) return mutateBytes(r, buf, layout.dataStart);
  const n = t.dims.reduce((a, d) => a * d, 1);
  const from = r.int(n);
  const len = 1 + r.int(Math.min(n - from, r.chance(0.5) ? 4 : 4096));
  const v = r.pick([NaN, Infinity, -Infinity, 0, 1e30, -1e30]);
  const b = Buffer.from(buf);
  for (let k = 0; k < len; k++) b.writeFloatLE(v, layout.dataStart + t.offset + (from + k) * 4);
  return { out: b, what: `data ${t.name}[${from}..+${len}]=${v}` };
}

/** One mutation of a JSON document's value: a field deleted, retyped, or set to an edge value. */
export function mutateJson(r: R, doc: unknown): { out: string; what: string } {
  const paths: (string | number)[][] = [];
  const walk = (v: unknown, p: (string | number)[]) => {
    if (paths.length > 5000) return;
    paths.push(p);
    if (Array.isArray(v)) v.forEach((x, i) => (i < 50 || r.chance(0.01)) && walk(x, [...p, i]));
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, [...p, k]);
  };
  walk(doc, []);
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  const p = r.pick(paths.slice(1));
  if (!p) return { out: JSON.stringify(copy), what: "json:none" };
  let parent = copy as Record<string | number, unknown>;
  for (const k of p.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  const last = p[p.length - 1];
  const edge = r.pick<unknown>([null, 0, -1, 1.5, 2 ** 53, 1e308, "", "x", "\u0000", [], {}, true, "0".repeat(64), "ff".repeat(32), -0]);
  let what: string;
  if (r.chance(0.25)) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
    what = "deleted";
  } else if (typeof parent[last] === "number" && r.chance(0.5)) {
    parent[last] = (parent[last] as number) + r.pick([-1, 1, 1000, -1000]);
    what = `=${String(parent[last])}`;
  } else {
    parent[last] = edge;
    what = `=${JSON.stringify(edge)}`;
  }
  return { out: JSON.stringify(copy), what: `json ${p.join(".")} ${what}` };
}
