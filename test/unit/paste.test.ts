// A request apart from its paste (src/lexical/paste.ts): which lines are pasted material, the weight a
// paste that outweighs the request is read at, and BM25's query built with that weight, checked
// against a plain reference on fresh random tasks.
import { describe, expect, it } from "vitest";
import { machineLine, pasteWeight, splitPaste } from "../../src/lexical/paste.js";
import { bm25Ceiling, bm25Tokens, forEachQueryToken, queryPaste, queryTerms, Vocabulary } from "../../src/lexical/postings.js";
import { freshSeed, rng } from "../helpers/random.js";

const LOG = (i: number) => `2026-11-26T03:00:${String(i % 60).padStart(2, "0")}Z INFO svc-${i % 7} request handled id=${i * 31} took=${i * 3}ms`;
const STACK = [
  "Traceback (most recent call last):",
  '  File "/srv/app/main.py", line 12, in <module>',
  "    run()",
  '  File "/srv/app/main.py", line 8, in run',
  "    parse(data)",
  '  File "/srv/app/parse.py", line 30, in parse',
  "    raise ValueError(data)",
  "ValueError: bad invoice",
];

describe("which lines are pasted", () => {
  it("reads log lines, stack frames, structured records and dumps as machine output, prose and short lines not", () => {
    for (const l of [LOG(3), "[ERROR] connection refused", "Dec  5 01:12:44 host sshd[42]: accepted", "    at handle (/srv/app/lib/handler.js:42:7)", '  File "x.py", line 3, in f', '{"level":"info","msg":"up"}', "0x7f3a 0x0001 0x0002 0x0003 4096 8192", "Caused by: java.io.IOException"]) {
      expect(machineLine(l), l).toBe(true);
    }
    for (const l of ["Write unit tests for parse_invoice.", "Here are the logs:", "", "   ", "a = 1", "Error: request failed with status 500", "ValueError: bad invoice"]) {
      expect(machineLine(l), l).toBe(false);
    }
  });

  it("reads source code as machine output: declarations, statement keywords and statement ends", () => {
    for (const l of ["def shipping_cost(order, zones):", "    for item in order.items:", "    return round(total, 2)", "from app.models import Order", "import os", "const out = { ...base };", "export function merge(a, b) {", "  }", "});", "@dataclass", "#include <stdio.h>", "    if (value === undefined) continue;"]) {
      expect(machineLine(l), l).toBe(true);
    }
    for (const l of ["Export the table to CSV.", "Return the order to the warehouse", "If the build fails, tell me why.", "Import the users from the spreadsheet", "    total = 0"]) {
      expect(machineLine(l), l).toBe(false);
    }
  });

  it("reads unfenced code of three statements or more as a paste, its plain lines between them included", () => {
    const text = ["Write tests for this:", "def cost(order):", "    total = 0", "    for item in order.items:", "        total += item.price", "    return total", "Cover empty orders."].join("\n");
    expect(splitPaste(text).paste).toEqual([false, true, true, true, true, true, false]);
  });

  it("reads a line of closing brackets in linear time, and a line over 16,384 characters as machine output", () => {
    // a rule once matched ")" twice over: a run of them ending otherwise backtracked quadratically
    expect(machineLine(")".repeat(200_000) + "x")).toBe(true);
    expect(machineLine("))")).toBe(true);
    expect(machineLine("a".repeat(20_000))).toBe(true);
    expect(machineLine("word ".repeat(3000))).toBe(false);
    const text = ["Write unit tests for parse_invoice.", ")".repeat(300_000) + "x", "))"].join("\n");
    expect(splitPaste(text).pasteLines).toBe(0); // two machine lines: no run
  });

  it("reads lines ended by a carriage return alone as lines, in BM25's query as in the glance", () => {
    const lines = ["Write unit tests for parse_invoice.", ...Array.from({ length: 20 }, (_, i) => LOG(i))];
    const lf = queryPaste(lines.join("\n"))!;
    const cr = queryPaste(lines.join("\r"))!;
    expect(cr.lines).toBe(20);
    expect(cr.weight).toBeCloseTo(lf.weight, 12);
  });

  it("marks fenced blocks (fences included, an unclosed fence to the end) and runs of three machine lines or more", () => {
    const text = ["Fix this.", "```", "x = 1", "y = 2", "```", "Then this:", "~~~python", "print(1)"].join("\n");
    expect(splitPaste(text).paste).toEqual([false, true, true, true, true, false, true, true]);
    // two log lines are a request's own example, three a paste
    const two = ["Why do these differ?", LOG(1), LOG(2), "Explain."].join("\n");
    expect(splitPaste(two).pasteLines).toBe(0);
    const three = ["Why do these differ?", LOG(1), LOG(2), "", LOG(3), "Explain."].join("\n");
    expect(splitPaste(three).paste).toEqual([false, true, true, true, true, false]);
  });

  it("carries a run over the one source line between two frames, and stops at the exception's message", () => {
    const text = ["I got this:", ...STACK, "", "Fix parse so it accepts euro amounts."].join("\n");
    const p = splitPaste(text).paste;
    // "Traceback" header and frames with their source lines are pasted; the message and the request are not
    expect(p).toEqual([false, true, true, true, true, true, true, true, false, false, false]);
  });
});

describe("the weight of a paste", () => {
  it("gives a paste that outweighs the request the request's mass in all, and leaves the rest at 1", () => {
    expect(pasteWeight(10, 200)).toBeCloseTo(0.05, 12);
    expect(pasteWeight(10, 10)).toBe(1);
    expect(pasteWeight(10, 5)).toBe(1);
    expect(pasteWeight(2, 200)).toBe(1); // too little request to read apart: as it is
    expect(pasteWeight(0, 50)).toBe(1);
  });

  it("weighs BM25's query words as a plain reference does, on fresh random tasks", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const words = ["deploy", "invoice", "parse", "tests", "pytest", "docker", "cache", "table", "report", "euro"];
    const pick = () => words[Math.floor(r() * words.length)];
    for (let trial = 0; trial < 200; trial++) {
      // a task built from known request lines and known log lines, in random order
      const lines: { text: string; pasted: boolean }[] = [];
      const nReq = 1 + Math.floor(r() * 4);
      const nLog = Math.floor(r() * 12);
      for (let i = 0; i < nReq; i++) lines.push({ text: Array.from({ length: 1 + Math.floor(r() * 8) }, pick).join(" ") + ".", pasted: false });
      const at = Math.floor(r() * (lines.length + 1));
      const logs = Array.from({ length: nLog }, (_, i) => ({ text: `${LOG(i)} ${pick()}`, pasted: nLog >= 3 }));
      lines.splice(at, 0, ...logs);
      const text = lines.map((l) => l.text).join("\n");
      // the reference: counts per class, the weight by the rule, each word's total
      let req = 0, paste = 0;
      for (const l of lines) (l.pasted ? (paste += bm25Tokens(l.text).length) : (req += bm25Tokens(l.text).length));
      const w = req >= 3 && paste > req ? req / paste : 1;
      const want = new Map<string, number>();
      for (const l of lines) for (const t of bm25Tokens(l.text)) want.set(t, (want.get(t) ?? 0) + (l.pasted ? w : 1));
      const got = new Map<string, number>();
      forEachQueryToken(text, (t, x) => got.set(t, (got.get(t) ?? 0) + x));
      expect([...got.keys()].sort(), `seed ${seed} trial ${trial}`).toEqual([...want.keys()].sort());
      for (const [t, x] of want) expect(got.get(t)!, `seed ${seed} trial ${trial} word ${t}`).toBeCloseTo(x, 9);
      expect(queryPaste(text)?.weight ?? 1, `seed ${seed} trial ${trial}`).toBeCloseTo(w, 12);
      // queryTerms and the ceiling read the same weights
      const vocab = new Vocabulary();
      for (const t of want.keys()) vocab.intern(t);
      const q = queryTerms(text, vocab);
      for (const [t, x] of want) expect(q.get(vocab.id(t)!)!).toBeCloseTo(x, 9);
      const n = 50;
      let ceiling = 0;
      for (const [, x] of want) ceiling += x * Math.log(1 + (n - 1 + 0.5) / (1 + 0.5));
      expect(bm25Ceiling(text, vocab, () => 1, n, 1.2)).toBeCloseTo(ceiling * 2.2, 6);
    }
  });

  it("reads a one-line task, a paste no heavier than the request and a task that is all paste word for word", () => {
    expect(queryPaste("Write a Dockerfile for the API")).toBeUndefined();
    expect(queryPaste(["Write tests for parse_invoice in invoices.py, one per currency and one for bad input.", "```", "parse_invoice(data)", "```"].join("\n"))).toBeUndefined();
    expect(queryPaste(Array.from({ length: 20 }, (_, i) => LOG(i)).join("\n"))).toBeUndefined();
    const heavy = ["Write unit tests for parse_invoice.", ...Array.from({ length: 20 }, (_, i) => LOG(i))].join("\n");
    const p = queryPaste(heavy)!;
    expect(p.lines).toBe(20);
    expect(p.weight).toBeGreaterThan(0);
    expect(p.weight).toBeLessThan(0.05);
  });
});
