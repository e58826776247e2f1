/**
 * Plain text out of the file kinds the corpus reads: HTML (tags stripped, <pre> blocks kept verbatim),
 * man pages (a small roff stripper: macros to their text, font and character escapes resolved), and the
 * filters that decide what is not text worth keeping (binary, non-UTF-8, minified, generated, data).
 * Pure functions; build.ts does the walking.
 */

const ENTITIES: Record<string, string> = {
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", copy: "©", reg: "®", trade: "™",
  hellip: "…", mdash: "—", ndash: "–", lsquo: "‘", rsquo: "’", ldquo: "“", rdquo: "”", laquo: "«",
  raquo: "»", middot: "·", bull: "•", para: "¶", sect: "§", times: "×", divide: "÷", rarr: "→",
  larr: "←", uarr: "↑", darr: "↓", harr: "↔", rArr: "⇒", lArr: "⇐", le: "≤", ge: "≥", ne: "≠",
  minus: "−", deg: "°", plusmn: "±", zwj: "", zwnj: "", shy: "", ensp: " ", emsp: " ", thinsp: " ",
};

export function decodeEntities(s: string): string {
  return s.replace(/&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);/g, (m, e: string) => {
    if (e[0] === "#") {
      const cp = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return cp > 0 && cp < 0x110000 && !(cp >= 0xd800 && cp < 0xe000) ? String.fromCodePoint(cp) : "";
    }
    return ENTITIES[e] ?? m;
  });
}

const PRE = "\uE000";

/** HTML to text: the page's main region (<main>, a role="main" element, or <body>), scripts, styles and
 * navigation dropped, block elements as line breaks, <pre> contents kept with their line breaks. */
export function htmlToText(html: string): string {
  let s = html;
  const main = /<main\b[^>]*>([\s\S]*?)<\/main>/i.exec(s);
  if (main) s = main[1];
  else {
    const rm = /<(div|section|article)\b[^>]*role=["']main["'][^>]*>/i.exec(s);
    if (rm) {
      s = s.slice(rm.index + rm[0].length);
      const end = s.search(/<div[^>]+class=["'][^"']*sphinxsidebar|<footer\b|<div[^>]+class=["']footer/i);
      if (end >= 0) s = s.slice(0, end);
    } else {
      const body = /<body\b[^>]*>([\s\S]*?)(<\/body>|$)/i.exec(s);
      if (body) s = body[1];
    }
  }
  s = s.replace(/<a\b[^>]*class=["'][^"']*headerlink[^>]*>[\s\S]*?<\/a>/gi, "").replace(/<!--[\s\S]*?-->/g, "").replace(/<(script|style|nav|header|footer|noscript|svg)\b[\s\S]*?<\/\1\s*>/gi, "");
  const pres: string[] = [];
  s = s.replace(/<pre\b[^>]*>([\s\S]*?)<\/pre\s*>/gi, (_m, c: string) => {
    pres.push(decodeEntities(c.replace(/<br\s*\/?>/gi, "\n").replace(/<[^>]+>/g, "")));
    return `\n${PRE}${pres.length - 1}${PRE}\n`;
  });
  s = s
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<(h[1-6])\b[^>]*>/gi, "\n\n")
    .replace(/<li\b[^>]*>/gi, "\n- ")
    .replace(/<\/?(p|div|h[1-6]|ul|ol|dl|dt|dd|tr|table|thead|tbody|section|article|blockquote|figure|figcaption|hr)\b[^>]*>/gi, "\n")
    .replace(/<\/t[dh]\s*>/gi, " ")
    .replace(/<[^>]+>/g, "");
  s = decodeEntities(s);
  s = tidy(s);
  return s.replace(new RegExp(`${PRE}(\\d+)${PRE}`, "g"), (_m, i: string) => pres[Number(i)].replace(/^\n+/, "").replace(/\s+$/, "")).trim();
}

/** Trailing/leading spaces of lines trimmed, runs of spaces squeezed, at most one blank line in a row. */
export function tidy(s: string): string {
  return s
    .split("\n")
    .map((l) => l.replace(/[ \t\u00a0\r]+/g, " ").trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n");
}

const ROFF_CHARS: Record<string, string> = {
  em: "—", en: "–", hy: "-", aq: "'", dq: '"', lq: "“", rq: "”", oq: "‘", cq: "’", bu: "•", co: "©",
  rg: "®", tm: "™", mi: "-", pl: "+", eq: "=", "<=": "≤", ">=": "≥", "->": "→", "<-": "←", mu: "×",
  de: "°", ti: "~", ha: "^", rs: "\\", sl: "/", ga: "`", "12": "½", ua: "↑", da: "↓", "**": "*",
};

/** Predefined strings of man(7) and of pod2man's preamble (\*(Aq is its straight quote). */
const ROFF_STRINGS: Record<string, string> = { lq: "“", rq: "”", R: "®", Tm: "™", Aq: "'", 'L"': '"', 'R"': '"', "C`": "", "C'": "", "--": "—", PI: "π" };

function roffInline(s: string): string {
  return s
    .replace(/\\f(\[[^\]]*\]|\(..|.)/g, "")
    .replace(/\\s[+-]?(\d|\[\d+\]|\(\d\d)/g, "")
    .replace(/\\\*(\[[^\]]*\]|\(..|.)/g, (_m, n: string) => ROFF_STRINGS[n.replace(/^\(|^\[|\]$/g, "")] ?? "")
    .replace(/\\\[([^\]]+)\]/g, (_m, n: string) => ROFF_CHARS[n] ?? "")
    .replace(/\\\((..)/g, (_m, n: string) => ROFF_CHARS[n] ?? "")
    .replace(/\\[nmgkFYV](\[[^\]]*\]|\(..|.)/g, "")
    .replace(/\\[hvwlLoxbDNRSXZz]'[^']*'/g, "")
    .replace(/\\[&|^%cdu:)\/,]/g, "")
    .replace(/\\[- ~0e.]/g, (m) => (m === "\\e" ? "\\" : m === "\\." ? "." : m === "\\-" ? "-" : " "))
    .replace(/\\"/g, "");
}

/** The arguments of a macro line, quotes honoured. */
function roffArgs(s: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"]|"")*)"?|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s))) out.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2]);
  return out;
}

/** A man page (man(7) or mdoc(7) source) to plain text. Returns "" for a ".so" redirection. */
export function roffToText(src: string): string {
  const lines = src.split("\n");
  if (lines.filter((l) => l.trim()).length <= 2 && /^\.so\s/m.test(src)) return "";
  const out: string[] = [];
  let skip = 0; // inside .de/.ig definitions
  for (let raw of lines) {
    if (skip) {
      if (/^\.\.\s*$/.test(raw)) skip = 0;
      continue;
    }
    if (/^['.]\s*\\"/.test(raw) || raw.startsWith('\\"')) continue;
    raw = raw.replace(/\\".*$/, "");
    if (/^['.]\s*(de|de1|ig|am)\b/.test(raw)) {
      skip = 1;
      continue;
    }
    const m = /^['.]\s*([A-Za-z][A-Za-z0-9]*)\s*(.*)$/.exec(raw);
    if (!m) {
      if (/^['.]/.test(raw)) continue;
      out.push(roffInline(raw));
      continue;
    }
    const [, mac, rest] = m;
    const args = roffArgs(rest).map(roffInline);
    switch (mac) {
      case "SH": case "Sh":
        out.push("", args.join(" ").toUpperCase() === args.join(" ") ? args.join(" ") : args.join(" "), "");
        break;
      case "SS": case "Ss":
        out.push("", args.join(" "));
        break;
      case "TH": case "Dt":
        out.push(args.slice(0, 2).join("(") + (args.length > 1 ? ")" : ""), "");
        break;
      case "PP": case "LP": case "P": case "sp": case "Pp": case "br": case "TP": case "RS": case "RE": case "Bl": case "El": case "Bd": case "Ed":
        out.push("");
        break;
      case "IP": case "It":
        out.push("", args[0] && mac === "IP" ? args[0] : args.join(" "));
        break;
      case "B": case "I": case "SM": case "SB": case "Nm": case "Ar": case "Fl": case "Cm": case "Pa": case "Em": case "Sy": case "Li": case "Va": case "Fn": case "Fa": case "Ft": case "Nd": case "Xr": case "Dv": case "Er": case "Ev": case "Ic": case "Ql": case "Dq": case "Sq": case "Pq":
        out.push((mac === "Fl" ? "-" : mac === "Nd" ? "- " : "") + (mac === "Xr" && args.length > 1 ? `${args[0]}(${args[1]})${args.slice(2).join("")}` : args.join(" ")));
        break;
      case "BR": case "BI": case "IB": case "IR": case "RI": case "RB":
        out.push(args.join(""));
        break;
      case "UR": case "MT": case "UE": case "ME":
        out.push(args.join(" "));
        break;
      case "Sp":
        out.push("");
        break;
      case "IX": case "Vb": case "Ve": case "UC": case "Sh1":
        break;
      case "EX": case "EE": case "nf": case "fi": case "in": case "ti": case "ft": case "ne": case "ad": case "na": case "hy": case "nh": case "ds": case "nr": case "if": case "ie": case "el": case "so": case "ll": case "ta": case "ps": case "vs": case "rm": case "tr": case "cc": case "ec": case "eo": case "mso": case "Os": case "Dd": case "Ns": case "TS": case "TE": case "T": case "DT": case "PD": case "HP": case "ev": case "pc": case "lf": case "bp": case "ch": case "it": case "wh": case "fam": case "ss":
        break;
      default:
        // Lower-case names are roff requests (rr, nr, ...): no text. Other unknown macros: their arguments.
        if (args.length && !/^[a-z]/.test(mac)) out.push(args.join(" "));
    }
  }
  return tidy(out.join("\n")).trim();
}

const dec = new TextDecoder("utf-8", { fatal: true });

/** UTF-8 text of a file's bytes, or why not: "binary" (a NUL byte) or "non-utf8". */
export function decodeText(buf: Uint8Array): string | "binary" | "non-utf8" {
  if (buf.indexOf(0) >= 0) return "binary";
  try {
    return dec.decode(buf);
  } catch {
    return "non-utf8";
  }
}

/** Minified or data-like: very long lines on average, or some line over 3,000 characters with few lines. */
export function looksMinified(s: string): boolean {
  let lines = 1;
  let longest = 0;
  let cur = 0;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) === 10) {
      lines++;
      if (cur > longest) longest = cur;
      cur = 0;
    } else cur++;
  }
  if (cur > longest) longest = cur;
  return s.length / lines > 250 || (longest > 3000 && lines < 50);
}

const GENERATED = /(do not edit|@generated|auto-?generated|automatically generated|generated by (the )?(protoc|protobuf|bindgen|cython|swig|go generate|stringer|mockgen|yacc|bison|flex|re2c|lalrpop|cbindgen|thrift|grpc))|code generated .* do not edit/i;

/** A header (first 1,500 characters) that says the file was generated by a tool. For source files only. */
export function looksGenerated(s: string): boolean {
  return GENERATED.test(s.slice(0, 1500));
}

/** Fraction of characters that are letters (any script). */
export function letterFraction(s: string): number {
  const n = Math.min(s.length, 20000);
  let l = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c > 0xbf) l++;
  }
  return l / Math.max(1, n);
}

/**
 * Navigation and other boilerplate of a documentation site: lines (non-blank, compared trimmed) that occur
 * in at least `share` of a package's HTML pages, when it has at least `minDocs` of them. Returns the set.
 */
export function boilerplateLines(pages: readonly string[], share = 0.5, minDocs = 8): Set<string> {
  const out = new Set<string>();
  if (pages.length < minDocs) return out;
  const freq = new Map<string, number>();
  for (const p of pages) {
    for (const l of new Set(p.split("\n").map((x) => x.trim()).filter(Boolean))) freq.set(l, (freq.get(l) ?? 0) + 1);
  }
  const need = Math.max(2, Math.ceil(pages.length * share));
  for (const [l, n] of freq) if (n >= need) out.add(l);
  return out;
}

/** `text` without the lines in `drop`; blank-line runs squeezed again. */
export function dropLines(text: string, drop: Set<string>): { text: string; dropped: number } {
  if (drop.size === 0) return { text, dropped: 0 };
  let dropped = 0;
  const kept = text.split("\n").filter((l) => {
    const d = drop.has(l.trim());
    if (d) dropped++;
    return !d;
  });
  return { text: kept.join("\n").replace(/\n{3,}/g, "\n\n").trim(), dropped };
}
