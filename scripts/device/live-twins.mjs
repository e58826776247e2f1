// Runs on the GPU machine with the CUDA addon (GAVEL_ADDON=…/gavel.node, dist built from this tree):
// the live context's device accumulators (LiveContext over a device-resident bank: A on the GPU,
// appends queued) against the CPU accumulator (NativeLive with device "cpu": the CPU glance's
// kernels, float32) over the same rows, through bank changes and past the renormalisation.
//
// Tolerances. The device rounds queries and keys to f16 (products in float32), so m differs by up to
// ~1e-3 for unit vectors, and a token whose k-th and (k+1)-th skills are that close may vote for the
// other one, which moves those two skills' g by a whole w·m/W. So: the columns (handles, in order)
// identical; |Δg| ≤ TOL_G = 2e-3 for at least 99% of the columns at every check; the top-1 skill the
// same unless the CPU's g of the two differs by ≤ 2·TOL_G. Prints one line per check and PASS/FAIL.
//
// The read without waiting (scores({ wait: false })), right after each append: the scores of that
// append (tokens = live.tokens) or of an earlier one whose device work completed, which must then be
// bit for bit what the waiting read gave after that append (same tokens, columns and g); after the
// waiting read it must equal that read exactly.
// Usage: node scripts/device/live-twins.mjs
import { KeyBank, LiveContext, loadBinding } from "../../dist/index.js";

const TOL_G = 2e-3;
const seed = Number(process.env.GAVEL_TEST_SEED ?? Date.now() % 2 ** 31);
let state = seed >>> 0;
const rand = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
const randArray = (n, scale = 1) => Float32Array.from({ length: n }, () => gauss() * scale);
function unitRows(n, dim) {
  const a = randArray(n * dim);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let d = 0; d < dim; d++) s += a[i * dim + d] ** 2;
    s = Math.sqrt(s);
    for (let d = 0; d < dim; d++) a[i * dim + d] /= s;
  }
  return a;
}

let failed = 0;
const sameArray = (x, y) => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
// the no-wait read `nw` (taken right after an append) against the waiting reads so far, by tokens
function checkNoWait(what, live, nw, waited) {
  const now = live.scores();
  const after = live.scores({ wait: false });
  let ok = sameArray(after.g, now.g) && sameArray(after.handles, now.handles) && after.tokens === now.tokens;
  let which = "this append's";
  if (nw.tokens === live.tokens) ok &&= sameArray(nw.g, now.g) && sameArray(nw.handles, now.handles);
  else if (nw.tokens === 0) {
    which = "none completed yet (zeros)";
    ok &&= nw.g.every((x) => x === 0);
  } else {
    const was = waited.get(nw.tokens);
    which = was === undefined ? `rows ${nw.tokens} (no such read)` : `an earlier append's (${live.tokens - nw.tokens} rows behind)`;
    ok &&= was !== undefined && sameArray(nw.g, was.g) && sameArray(nw.handles, was.handles);
  }
  if (!ok) failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${what}: no-wait read ${which}`);
}

function check(what, live, cpu) {
  const a = live.scores(), c = cpu.scores();
  const same = a.handles.length === c.handles.length && a.handles.every((h, i) => h === c.handles[i]);
  let max = 0, beyond = 0;
  for (let s = 0; s < c.g.length; s++) {
    const d = Math.abs(a.g[s] - c.g[s]);
    max = Math.max(max, d);
    if (d > TOL_G) beyond++;
  }
  const best = (g) => g.reduce((b, x, i) => (x > g[b] ? i : b), 0);
  const ta = best(a.g), tc = best(c.g);
  const topOk = ta === tc || Math.abs(c.g[ta] - c.g[tc]) <= 2 * TOL_G;
  const ok = same && beyond <= 0.01 * c.g.length && topOk;
  if (!ok) failed++;
  console.log(
    `${ok ? "ok  " : "FAIL"} ${what}: ${live.tokens} rows, ${c.g.length} columns${same ? "" : " (columns differ)"}, max |Δg| ${max.toExponential(2)}, ` +
      `${beyond} beyond ${TOL_G}, top-1 ${ta === tc ? "same" : topOk ? "near-tie" : "differs"}`,
  );
}

async function scenario(name, nSkills, keysPer, nEmbd, dim, steps) {
  const bank = new KeyBank(dim);
  let routable = Int32Array.from({ length: nSkills }, () => bank.add(unitRows(keysPer, dim)));
  const wq = randArray(dim * nEmbd, 1 / Math.sqrt(nEmbd));
  const parts = {
    model: { info: { nEmbd } },
    projections: { layer: 0, wq, dim },
    library: { routable: () => routable.slice(), keys: bank, idOf: (h) => String(h), entry: (id) => ({ name: id }) },
  };
  const live = new LiveContext(parts);
  const cpu = new (loadBinding().NativeLive)(bank._native, wq, nEmbd, dim, "cpu");
  const voteK = (n) => Math.min(10, Math.max(3, Math.round(n / 10)));
  const waited = new Map();
  for (const step of steps) {
    if (typeof step === "number") {
      const states = randArray(step * nEmbd, 3);
      await live.append(states);
      const nw = live.scores({ wait: false });
      await cpu.append(states, routable.length === bank.size ? null : routable, voteK(routable.length));
      check(`${name}, +${step}`, live, cpu);
      checkNoWait(`${name}, +${step}`, live, nw, waited);
      const a = live.scores();
      waited.set(a.tokens, a);
    } else {
      routable = step(bank, routable);
    }
  }
  console.log(`${name}: accumulators on ${live.device}`);
  live.dispose();
  cpu.dispose();
  bank.dispose();
}

console.log(`seed ${seed}; addon cuda ${loadBinding().buildInfo().cuda}, glance on ${loadBinding().glanceDevice().device}`);
const add = (n) => (bank, r) => Int32Array.from([...r, ...Array.from({ length: n }, () => bank.add(unitRows(16, bank.dim)))]);
const remove = (n) => (bank, r) => {
  const gone = new Set(r.slice(0, n));
  for (const h of gone) bank.remove(h);
  return r.filter((h) => !gone.has(h));
};
const subset = (bank, r) => r.filter((_, i) => i % 5 !== 2);
const whole = (bank) => bank.handles();
// bank changes between single tokens and blocks
await scenario("changes", 3000, 16, 1024, 256, [40, 1, 1, 1, 4, 16, add(7), 1, 1, remove(5), 1, 4, subset, 1, 1, 16, whole, 1, 300, 1]);
// past the renormalisation (2^-400 after 25,600 rows) and across 2,048-row batches
await scenario("renormalisation", 150, 8, 512, 256, [3000, 1, 5000, 8000, 1, 9000, 16, 2500, 1]);
console.log(failed === 0 ? "PASS" : `FAIL (${failed} checks)`);
process.exitCode = failed === 0 ? 0 : 1;
