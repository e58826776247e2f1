// Newly trained maps with the shipped file's constants: the weights, layer, τ, ε and provenance of
// WEIGHTS.gguf (what `gavel train` wrote), every routing constant of FROM.gguf (the ruling's α, γ, Δ,
// β, T, BM25's k1 / b, the shortlists, the glance's row weights and vote share, the skill and key
// budgets, the abstention model and the re-ranker), written to OUT.gguf. So a candidate is measured
// exactly as the shipped pair routes, its maps the only difference.
//   node scripts/device/adopt-constants.mjs FROM.gguf WEIGHTS.gguf OUT.gguf
// Plain JavaScript on the package's own entry point, so it runs on the device's staged package as is.
import { Projections } from "gavel-router";

const [from, weights, out] = process.argv.slice(2);
if (!from || !weights || !out) throw new Error("usage: adopt-constants.mjs FROM.gguf WEIGHTS.gguf OUT.gguf");
const shipped = await Projections.load(from);
const trained = await Projections.load(weights);
if (trained.model.vocabHash !== shipped.model.vocabHash || trained.dim !== shipped.dim) {
  throw new Error(`${weights} is not for the model and dim of ${from}`);
}
// a Projections carries every Calibration field under its own name, so the shipped file is its own calibration
const p = trained.withCalibration(shipped);
await p.save(out);
console.log(`wrote ${out}: layer ${p.layer}, τ ${p.tau}, ε ${p.eps}, constants of ${from}`);
