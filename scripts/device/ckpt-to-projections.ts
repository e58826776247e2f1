// Writes a projections GGUF from a main-phase training checkpoint (<out>.ckpt of `gavel train`): the
// W_q and W_s reached so far, for a run whose schedule the device calls could not finish (the
// fine-tune skipped). The layer, dim, τ and ε are the run's; the model fingerprint is recomputed.
// Usage: npx vite-node scripts/device/ckpt-to-projections.ts -- <model.gguf> <ckpt> <layer> <out.gguf> [trainedBy]
import { Model } from "../../src/index.js";
import { modelFingerprint } from "../../src/model/fingerprint.js";
import { Projections, PROJECTION_DEFAULTS } from "../../src/projections/projections.js";
import { loadCheckpoint } from "../../lab/train/checkpoint.js";
import { TRAIN_DEFAULTS } from "../../lab/train/settings.js";

const [modelPath, ckptPath, layerArg, out, trainedBy] = process.argv.slice(2).filter((a) => a !== "--");
if (!modelPath || !ckptPath || !out || !Number.isInteger(Number(layerArg))) {
  console.error("usage: ckpt-to-projections.ts <model.gguf> <ckpt> <layer> <out.gguf> [trainedBy]");
  process.exit(2);
}
const ck = await loadCheckpoint(ckptPath);
if (!ck) throw new Error(`${ckptPath}: no checkpoint`);
const model = await Model.load(modelPath, { contextSize: 64, threads: 1 });
const fp = await modelFingerprint(model);
await model.dispose();
const p = new Projections({
  wq: ck.state.wq, ws: ck.state.ws, layer: Number(layerArg), model: fp, dim: ck.meta.dim, tau: TRAIN_DEFAULTS.tau, eps: PROJECTION_DEFAULTS.eps,
  trainedBy: trainedBy ?? `gavel train (${ck.meta.phase} phase checkpoint, step ${ck.state.step})`,
});
await p.save(out);
console.log(`wrote ${out}: phase ${ck.meta.phase}, step ${ck.state.step}, dim ${ck.meta.dim}, layer ${layerArg}`);
