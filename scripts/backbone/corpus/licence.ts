/**
 * A package's licence from its /usr/share/doc/<pkg>/copyright. Machine-readable (DEP-5) files give
 * stanzas of Files patterns and a License short name; a document's licence is that of the last stanza
 * whose pattern matches the end of its path (Debian patterns are relative to the source tree, installed
 * files keep the tail of that path), else that of "Files: *". Free-form files get a keyword guess,
 * marked "free-form:".
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, lstatSync } from "node:fs";
import { basename, join } from "node:path";

interface Stanza {
  patterns: RegExp[];
  licence: string;
}
export interface PackageLicence {
  /** Where the copyright file was found (path inside the package tree), or "" when none. */
  file: string;
  dep5: boolean;
  /** The licence of "Files: *" (or the guess for free-form files). */
  main: string;
  stanzas: Stanza[];
  /** Every licence short name the file names, for the manifest. */
  all: string[];
}

function globToRegExp(p: string): RegExp {
  const esc = p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`(^|/)${esc}$`);
}

function guess(text: string): string {
  // Every licence the text names, in the order of first mention (the package's own licence comes first
  // in the free-form files seen here; the others are those of bundled parts).
  const hits: [number, string][] = [];
  const t = text.replace(/\s+/g, " ");
  const add = (re: RegExp, name: string) => {
    const i = t.search(re);
    if (i >= 0) hits.push([i, name]);
  };
  add(/Python Software Foundation License|PSF LICENSE AGREEMENT/i, "PSF-2.0");
  add(/PostgreSQL (Database Management System|Global Development Group).*Permission to use, copy, modify/i, "PostgreSQL");
  add(/Apache License,? Version 2\.0/i, "Apache-2.0");
  add(/Permission is hereby granted, free of charge/i, "Expat");
  add(/Redistribution and use in source and binary forms/i, "BSD");
  add(/GNU Lesser General Public License|GNU Library General Public License/i, "LGPL");
  add(/GNU General Public License/i, "GPL");
  add(/GNU Free Documentation License/i, "GFDL");
  add(/Artistic License/i, "Artistic");
  add(/public domain/i, "public-domain");
  add(/Mozilla Public License/i, "MPL");
  const found = [...new Set(hits.sort((a, b) => a[0] - b[0]).map((h) => h[1]))];
  return found.length ? `free-form: ${found.join(", ")}` : "free-form: unknown";
}

export function parseCopyright(text: string, file: string): PackageLicence {
  const dep5 = /^Format:\s*\S*copyright-format/im.test(text) || /^Format-Specification:/im.test(text);
  if (!dep5) {
    const g = guess(text);
    return { file, dep5, main: g, stanzas: [{ patterns: [/.*/], licence: g }], all: [g] };
  }
  const stanzas: Stanza[] = [];
  const all = new Set<string>();
  let main = "";
  for (const para of text.split(/\n[ \t]*\n/)) {
    const files = /^Files:\s*((?:.*)(?:\n[ \t]+.*)*)/m.exec(para);
    const lic = /^License:[ \t]*(.*)$/m.exec(para);
    if (!lic) continue;
    const name = lic[1].trim();
    if (!files) continue; // standalone License paragraphs carry the texts
    if (name) all.add(name);
    const pats = files[1].split(/\s+/).filter(Boolean);
    if (pats.some((p) => p.startsWith("debian/")) && pats.every((p) => p.startsWith("debian/"))) continue;
    if (pats.includes("*") && !main) main = name;
    stanzas.push({ patterns: pats.map(globToRegExp), licence: name });
  }
  if (!main) main = stanzas[0]?.licence ?? "unknown";
  return { file, dep5, main, stanzas, all: [...all].sort() };
}

/**
 * The licence record of an unpacked package tree `root` of package `pkg`. `trees` is the directory that
 * holds every unpacked package (CACHE/root): a doc directory that is a symlink to another package's
 * (manpages-dev -> manpages) is read there.
 */
export function packageLicence(root: string, pkg: string, trees?: string): PackageLicence {
  const docRoot = join(root, "usr/share/doc");
  const tries = [join(docRoot, pkg, "copyright")];
  // A doc directory that is a symlink (to the doc directory of the source's main package): look inside
  // the tree for any copyright file, the one of the link target first.
  const d = join(docRoot, pkg);
  if (existsSync(docRoot)) {
    try {
      if (lstatSync(d).isSymbolicLink()) {
        const target = basename(readlinkSync(d));
        tries.push(join(docRoot, target, "copyright"));
        if (trees) tries.push(join(trees, target, "usr/share/doc", target, "copyright"));
      }
    } catch {
      /* no such entry */
    }
    for (const e of readdirSync(docRoot).sort()) tries.push(join(docRoot, e, "copyright"));
  }
  for (const t of tries) {
    try {
      if (lstatSync(t).isFile()) return parseCopyright(readFileSync(t, "utf8"), t.startsWith(root) ? t.slice(root.length) : t.slice(trees!.length));
    } catch {
      /* next */
    }
  }
  return { file: "", dep5: false, main: "unknown", stanzas: [], all: [] };
}

/** The licence of one file of the package, by its path inside the package tree. */
export function licenceOf(l: PackageLicence, path: string): string {
  let out = l.main;
  for (const s of l.stanzas) if (s.patterns.some((p) => p.test(path))) out = s.licence;
  return out;
}
