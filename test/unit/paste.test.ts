// A request apart from its paste (src/lexical/paste.ts): which lines are pasted material, the weight a
// paste that outweighs the request is read at, and BM25's query built with that weight, checked
// against a plain reference on fresh random tasks.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { anyRule, LINE_RULES, machineLine, machineShape, PASTE_RULES, pasteWeight, splitPaste, taskPaste } from "../../src/lexical/paste.js";
import { bm25Ceiling, bm25Query, bm25Tokens, forEachQueryToken, queryPaste, queryTerms, Vocabulary } from "../../src/lexical/postings.js";
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
    for (const l of ["Export the table to CSV.", "Return the order to the warehouse", "If the build fails, tell me why.", "Import the users from the spreadsheet", "    total = 0", "import the CSV into postgres", "import users from the spreadsheet", "return the order to the warehouse", "let me know when it is done", "package the app for PyPI", "using the API, fetch the orders", "function names should be camelCase", "class names should be nouns", "public endpoints must require a token", "First, migrate the schema;", "make sure the tests pass;"]) {
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

describe("the paste split, made once per route", () => {
  it("reads BM25's query with the split the route made, once, and keeps the reading with the query", () => {
    const text = ["Write unit tests for parse_invoice.", ...Array.from({ length: 20 }, (_, i) => LOG(i))].join("\n");
    const fresh = queryPaste(text)!;
    expect(queryPaste(text)).not.toBe(fresh); // a text is read anew at each call: the module keeps nothing
    expect(queryPaste(text)).toEqual(fresh);
    // the route's own split is what BM25 reads: a split that marks nothing reads as no paste
    expect(bm25Query(text, { split: undefined }).paste()).toBeUndefined();
    const held = bm25Query(text, { split: taskPaste(text) });
    const read = held.paste()!;
    expect(read).toEqual(fresh);
    expect(held.paste()).toBe(read);
    // without a split the query splits its own text, as a text does
    expect(bm25Query(text).paste()).toEqual(fresh);
    // BM25's readers read a query as they read its text
    const vocab = new Vocabulary();
    for (const t of bm25Tokens(text)) vocab.intern(t);
    expect([...queryTerms(held, vocab)]).toEqual([...queryTerms(text, vocab)]);
    expect(bm25Ceiling(held, vocab, () => 1, 50, 1.2)).toBe(bm25Ceiling(text, vocab, () => 1, 50, 1.2));
  });

  it("keeps a large query's reading whatever other queries are read between its reads (interleaved routes)", () => {
    const big = (tag: string) => [`Find why the ${tag} deploy fails.`, ...Array.from({ length: 5000 }, (_, i) => `${LOG(i)} ${tag}`)].join("\n");
    const a = big("api"), b = big("web");
    expect(a.length).toBeGreaterThan(1 << 18); // over the 256 Ki characters the module-level slot once kept
    const qa = bm25Query(a, { split: taskPaste(a) });
    const qb = bm25Query(b, { split: taskPaste(b) });
    const first = qa.paste()!;
    // route B's reads, and a plain text's, between two of route A's
    qb.paste();
    queryPaste(b);
    forEachQueryToken(b, () => {});
    expect(qa.paste()).toBe(first); // not split and tokenized again
    expect(first).toEqual(queryPaste(a));
    expect(qb.paste()!.weight).toBe(queryPaste(b)!.weight);
    const got = new Map<string, number>(), want = new Map<string, number>();
    forEachQueryToken(qa, (t, w) => got.set(t, (got.get(t) ?? 0) + w));
    forEachQueryToken(a, (t, w) => want.set(t, (want.get(t) ?? 0) + w));
    expect(got).toEqual(want);
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

/** Which of the adversarial lines below read as machine output (a prompt, a gutter, a dump, a statement, a pytest line, a level, an import). */
const EXPECT_LONG = new Set<number>([4, 6, 10, 11, 20, 23, 24, 25, 28, 35, 36]);

// The audit of 2026-12-05: shapes of pasted output the rules missed, and prose they took for one.
const REQUEST = "Fix the failing build and explain what went wrong in two sentences.";
const wrapped = (paste: string[]) => [REQUEST, ...paste, "", "Thanks."].join("\n");
const SHAPES: Record<string, string[]> = {
  "a shell session": ["$ npm run build", "> web-app@1.4.2 build", "> tsc -p .", "src/x.ts:3:5 - error TS2322: Type 'string' is not assignable to type 'number'.", "user@box:~/app$ ls dist", "index.js  index.d.ts"],
  "pytest's report": ["tests/test_orders.py ..F.                                              [100%]", "=================================== FAILURES ===================================", "    def test_total():", ">       assert total(3) == 30", "E       AssertionError: assert 27 == 30", "tests/test_orders.py:14: AssertionError", "FAILED tests/test_orders.py::test_total - AssertionError: assert 27 == 30", "========================= 1 failed, 3 passed in 0.42s ========================="],
  "npm's errors": ["npm ERR! code ERESOLVE", "npm ERR! ERESOLVE unable to resolve dependency tree", "npm error While resolving: web-app@1.4.2", "npm error Found: left-pad@1.3.0"],
  "a Go panic": ["panic: runtime error: index out of range [5] with length 3", "", "goroutine 1 [running]:", "main.(*Queue).Pop(0xc000012080)", "\t/home/dev/app/queue.go:41 +0x1d4", "main.main()", "\t/home/dev/app/main.go:12 +0x2a", "exit status 2"],
  "a Rust panic": ["thread 'main' panicked at src/main.rs:4:5:", "index out of bounds: the len is 3 but the index is 5", "stack backtrace:", "   0: rust_begin_unwind", "   1: core::panicking::panic_fmt", "   2: app::main", "note: run with `RUST_BACKTRACE=full` for a verbose backtrace."],
  "a unified diff": ["diff --git a/src/q.js b/src/q.js", "index 3b18e51..a9c4f02 100644", "--- a/src/q.js", "+++ b/src/q.js", "@@ -1,4 +1,5 @@", " function pop(q) {", "-  return q.items.shift()", "+  const item = q.items[q.head]", "+  q.head += 1", "+  return item", "", " }"],
  // output lines that read like prose: a tool's "name: " prefix, git's, npm's, pip's, cargo's and jest's
  // messages, a [Y/n] choice, lines with no sign of a request (no "you", no question, no order)
  "shell output that reads like prose": [
    "$ git status", "On branch main", "Your branch is up to date with 'origin/main'.", "nothing to commit, working tree clean",
    "$ git pull", "fatal: not a git repository (or any of the parent directories): .git",
    "$ npm install", "npm WARN deprecated request@2.88.2: request has been deprecated, see https://github.com/request/request/issues/3142", "added 120 packages, and audited 121 packages in 3s", "found 0 vulnerabilities", "Run `npm audit` for details.",
    "$ pip install foo", "Collecting foo", "Successfully installed foo-1.2", "ERROR: No matching distribution found for bar",
    "$ ./deploy.sh", "bash: ./deploy.sh: Permission denied", "Permission denied",
    "$ ls -l", "total 8", "-rw-r--r--  1 dev  staff  120 Dec  5 01:12 Makefile", "drwxr-xr-x  4 dev  staff  128 Dec  5 01:12 src",
    "$ cargo build", "   Compiling app v0.1.0 (/home/dev/app)", "error: could not compile `app` (bin \"app\") due to 2 previous errors", "For more information about this error, try `rustc --explain E0308`.",
    "$ npx jest", "Tests:       1 failed, 3 passed, 4 total", "Ran all test suites.",
    "$ git log --oneline -2", "a1b2c3d Fix the login test", "e4f5a6b Add a clean target to the Makefile", "Did you mean this?",
    "$ cat .env", "PORT=8080", '{"port": 8080, "debug": false}', "10.5 20.1 30.7 40.2",
    "$ sudo apt-get install foo", "E: Unable to locate package foo", "Do you want to continue? [Y/n]", "Are you sure you want to continue connecting (yes/no/[fingerprint])?",
    "$ make deploy", "uploading build artifacts", "checking environment... ok", "Traceback (most recent call last):", '  File "deploy.py", line 3, in <module>', "ModuleNotFoundError: No module named 'boto3'",
  ],
  "compiler diagnostics": ["src/x.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.", "error[E0308]: mismatched types", " --> src/main.rs:4:18", "  |", "4 |     let x: i32 = \"a\";", "  |            ---   ^^^ expected `i32`, found `&str`", "file.c:12:3: error: implicit declaration of function 'pop'"],
};
const NOT_PASTE: Record<string, string[]> = {
  "prose that opens with a keyword in lower case": ["import the CSV into postgres", "return the duplicates to the caller", "let me know which rows failed", "package the importer as a CLI"],
  "prose lines that end in ';'": ["Do these in order:", "back up the database;", "migrate the schema;", "switch the traffic;", "then remove the old tables."],
  "levels as requirements": ["Log levels for the service:", "ERROR: anything that pages someone", "WARN: degraded but still serving", "INFO: state changes only", "DEBUG: off in production"],
  "dated plan lines": ["The plan:", "2026-01-03: ship v2", "2026-02-14: beta for the big customers", "2026-03-01: remove v1"],
  "a list of figures": ["Last quarter:", "Q1: 1,204 units, 12% up", "Q2: 1,350 units, 9% up", "Q3: 1,502 units, 11% up", "| 2024 | 120 | 340 |", "| 2025 | 140 | 380 |"],
  "an unfenced SQL query": ["Tune this query:", "SELECT o.id, c.name, sum(i.price) AS total", "FROM orders o", "JOIN customers c ON c.id = o.customer_id", "JOIN items i ON i.order_id = o.id", "WHERE o.created_at > now() - interval '30 days'", "GROUP BY o.id, c.name", "ORDER BY total DESC;"],
  "SQL statements ending in ';'": ["Review this migration:", "ALTER TABLE users ADD COLUMN email text;", "UPDATE users SET email = lower(name) || '@example.com';", "ALTER TABLE users ALTER COLUMN email SET NOT NULL;", "CREATE INDEX CONCURRENTLY users_email ON users (email);"],
  "unfenced YAML": ["Fix this workflow:", "name: ci", "on: [push]", "jobs:", "  test:", "    runs-on: ubuntu-latest", "    steps:", "      - uses: actions/checkout@v4", "      - run: npm ci"],
  "a request right under a prompt and one line of output": ["I ran this:", "$ make", "make: *** [all] Error 1", "Can you fix the Makefile so `make` works on macOS 14?", "Also add a clean target"],
  "questions right under a prompt's one line of output": ["$ npm test", "FAIL src/auth.test.ts", "Why does the login test fail after upgrading to v2?", "Please make it pass without changing the test (it worked before)."],
  "unfenced config": ["Check these settings:", "DATABASE_URL=postgres://app:secret@db:5432/app", "REDIS_URL=redis://cache:6379/0", "[server]", "port = 8080", "workers = 4"],
};

// The review of 2026-12-05 (§1): a request written right under pasted shell output, with digits,
// backticks, parentheses or no final mark, was read as the last command's output.
const UNDER_OUTPUT = [
  "Can you fix the Makefile so `make` works on macOS 14?",
  "Also add a clean target",
  "Why does the login test fail after upgrading to v2?",
  "Please make it pass without changing the test (it worked before).",
  "how do I get this to build on Node 20",
  "This Postgres query on the orders table takes eight seconds; figure out why and make it fast.",
  "In a shell script, pull the email of every active user out of users.json and print them one per line.",
  "The deploy script should upload to s3 and restart app-1",
  "Update the CI config to Node 22 and cache npm",
  "It worked yesterday, what changed?",
];

describe("a request right under a shell prompt's output (review, 2026-12-05)", () => {
  it("ends the last command's output at a line in the user's words", () => {
    const npm = ["$ npm test", "> app@1.0.0 test", "> jest", "FAIL src/auth.test.ts", UNDER_OUTPUT[2], UNDER_OUTPUT[3]];
    expect(splitPaste(npm.join("\n")).paste).toEqual([true, true, true, true, false, false]);
    // the prompt and one line of output are no run: nothing is pasted, and BM25 reads every word at 1
    const make = ["I ran this:", "$ make", "make: *** [all] Error 1", UNDER_OUTPUT[0], UNDER_OUTPUT[1]].join("\n");
    expect(splitPaste(make).pasteLines).toBe(0);
    expect(queryPaste(make)).toBeUndefined();
    for (const request of UNDER_OUTPUT) {
      const text = ["$ make test", "cc -o app main.c", "make: *** [test] Error 2", request, "Also lint it."].join("\n");
      expect(splitPaste(text).paste, request).toEqual([true, true, true, false, false]);
    }
  });

  it("keeps wordy output as output, and a line of it the user's once it asks or orders", () => {
    // under a prompt: output whatever the words, when indented or a known tool message
    for (const out of ["    Fix the login test", "Your branch is up to date with 'origin/main'.", "hint: Use 'git add <file>' to mark resolution", "Did you mean this?"]) {
      expect(splitPaste(["$ git log", "commit a1b2c3d", out, "Author: Dev <dev@example.com>"].join("\n")).paste, out).toEqual([true, true, true, true]);
    }
    // a letters-only sentence ends the output, as before the review
    expect(splitPaste(["$ make", "cc -o app main.c", "ld -o app main.o", "Build this for arm too."].join("\n")).paste).toEqual([true, true, true, false]);
  });
});

describe("the audit's shapes (2026-12-05)", () => {
  it("reads each shape of pasted output as a paste, the request around it not", () => {
    for (const [name, lines] of Object.entries(SHAPES)) {
      const p = splitPaste(wrapped(lines)).paste;
      expect(p[0], name).toBe(false);
      expect(p[p.length - 1], name).toBe(false);
      // every non-blank pasted line is read as paste
      lines.forEach((l, i) => l.trim() !== "" && expect(p[i + 1], `${name}: ${l}`).toBe(true));
    }
  });

  it("reads prose, requirement lists, plans, figures, SQL, YAML and config written in the request as the request", () => {
    for (const [name, lines] of Object.entries(NOT_PASTE)) expect(splitPaste(wrapped(lines)).pasteLines, name).toBe(0);
    // a "$ " prompt's output stops at a blank line and at a line in the user's words
    const session = ["$ make test", "make: *** [test] Error 2", "Please fix the Makefile so the tests run.", "It should also lint."].join("\n");
    expect(splitPaste(session).paste).toEqual([false, false, false, false]); // two machine lines: no run
    const longer = ["$ make test", "cc -o app main.c", "make: *** [test] Error 2", "Please fix the Makefile so the tests run."].join("\n");
    expect(splitPaste(longer).paste).toEqual([true, true, true, false]);
    // a hunk takes as many lines as its header counts, not a list that follows it
    const diff = ["@@ -1,2 +1,2 @@", " a", "-b", "+c", "- a list item after the diff", "- another"].join("\n");
    expect(splitPaste(diff).paste).toEqual([true, true, true, true, false, false]);
  });

  it("tests the machine-line and code rules as one alternation that matches exactly when one rule does", () => {
    const seed = freshSeed();
    const r = rng(seed);
    // fragments of what the rules look for, and the characters between them
    const parts = ["at ", "File \"", "\", line ", "ERROR", "INFO", ":", " ", "  ", "1", "42", "0x7f", "2026-12-05", "T", "01:12:44", "[", "]", "(", ")", "{", "}", ";", ",", ".", "/", "-", "=", "==", "===", "_", "#", "@", "$", ">", "|", "^", "~", "\"", "'", "`", "a", "foo", "go", "py", "rs", "ts", "E", "FAILED", "::", "-->", "@@ -1,2 +1,3 @@", "diff --git ", "index ", "npm ", "ERR!", "panic: ", "goroutine ", "def ", "class ", "import ", "from ", "const ", "let ", "return", "export ", "public ", "package ", "#include ", "if ", "else", "fn ", "function", "Traceback (most recent call last)", "note: ", "RUST_BACKTRACE=", "+0x1f", "error", "warning", "[E0308]", "Caused by: ", "... 3 more", "exit status 1", "created by ", "\t", "é", "中"];
    const { machine, code } = LINE_RULES;
    const any = [anyRule(machine), anyRule(code)];
    expect(any.every((a) => a.union !== undefined && a.rest.length <= 2)).toBe(true);
    let taken = 0;
    for (let trial = 0; trial < 20_000; trial++) {
      const n = 1 + Math.floor(r() * 8);
      let t = "";
      for (let i = 0; i < n; i++) t += parts[Math.floor(r() * parts.length)];
      for (const [k, rules] of [machine, code].entries()) {
        const want = rules.some((re) => re.test(t));
        expect(any[k].test(t), `seed ${seed}: ${JSON.stringify(t)}`).toBe(want);
        if (want) taken++;
      }
    }
    // the random lines reach the rules, not only their misses
    expect(taken).toBeGreaterThan(1000);
    // and on every line of this file's cases
    for (const line of readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n")) {
      const t = line.trim();
      for (const [k, rules] of [machine, code].entries()) expect(any[k].test(t), JSON.stringify(t)).toBe(rules.some((re) => re.test(t)));
    }
  });

  it("runs every rule on 200 KB adversarial lines to an answer (no rule backtracks without bound)", () => {
    const n = 200_000;
    const rep = (s: string) => s.repeat(Math.ceil(n / s.length));
    const lines = [
      rep("a.") + "(", rep("a.") + "go:1 +", rep("=") + "x", "=== " + rep("x ") + "==x", rep("= ") + "x", "E" + rep(" ") + "", rep("$ a"),
      "a@b:" + rep("/") + "x", "a" + rep("@a") + ":", "PS C:\\" + rep("a"), rep("| -") + "x", "|" + rep(" -") + "x", "1: " + rep("a") + " ::",
      "1:" + rep(" ") + "x", "note: " + rep("`"), "import " + rep("a.") + "!", "import a" + rep(", a") + "!", "const a" + rep(": a") + "!",
      "function " + rep("a ") + "(", "class " + rep("a ") + "x", "main.a(" + rep("0x1, ") + "!", "main." + rep("a") + "(", "ERROR " + rep("word "),
      rep("x") + ";", "a: " + rep("b") + ";", "tests/" + rep("a/") + ".py " + rep("."), "src/x.ts(" + rep("1"), "@@ -1,1 +" + rep("1"),
      rep("0x1 "), "A" + rep(" a") + "1", "A" + rep(", a") + "1", rep("a.a:1") + "x", "thread '" + rep("a") + "' x", "> " + rep("a@1.") + "x",
      rep("(a)") + "x", "[ERROR" + rep("]"), "import " + rep("'") + "x", "let " + rep("a ") + "=", "select " + rep("a ") + ";",
    ];
    const got = lines.map((l) => {
      for (const re of PASTE_RULES) re.test(l); // each rule reads the whole line to an answer
      return machineShape(l);
    });
    // which of them read as machine output
    expect(got).toEqual(lines.map((l) => EXPECT_LONG.has(lines.indexOf(l))));
    // and past 16,384 characters a line is machine output without the rules
    const long = lines.filter((l) => l.trim().length > 16_384);
    expect(long.length).toBe(lines.length - 1); // "E" and blanks trims to one letter
    expect(long.every((l) => machineLine(l))).toBe(true);
  });
});
