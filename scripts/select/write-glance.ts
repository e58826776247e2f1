/**
 * Writes the glance's vote settings chosen by weights-fit.ts (a variant `WEIGHTS/SHARE`, e.g.
 * `idf/0.01`) into a projections file, keeping everything else in it (the hash too, so banks stay
 * valid): `npx vite-node scripts/select/write-glance.ts -- VARIANT IN.gguf OUT.gguf` (OUT may be IN).
 */
import { Projections } from "../../src/projections/projections.js";

const [variant, src, out] = process.argv.slice(2).filter((a) => a !== "--");
const [weights, share] = (variant ?? "").split("/");
if (!src || !out || (weights !== "uniform" && weights !== "idf") || share === undefined || share === "" || !(Number(share) >= 0 && Number(share) <= 1)) {
  throw new Error("usage: write-glance.ts uniform|idf/SHARE IN.gguf OUT.gguf   (SHARE in [0, 1])");
}
const p = (await Projections.load(src)).withCalibration({ glanceRowWeights: weights, glanceVoteShare: Number(share) });
await p.save(out);
console.log(`wrote ${out}: glance row weights ${p.glanceRowWeights}, vote share ${p.glanceVoteShare}`);
