/**
 * Writes a domain table (scripts/lexical/domain-train.py's model) and, optionally, a large abstention
 * band that reads it (scripts/lexical/domain-band.py --write-band) into a projections file, keeping
 * everything else in it:
 *
 *   npx vite-node scripts/lexical/write-domain.ts -- MODEL.json[.gz] IN.gguf OUT.gguf [--band BAND.json]
 *
 * OUT may be IN. The band replaces the large band of IN's by-size abstention model (its marginCap
 * kept); without --band the abstention model is unchanged. Prints the table's size and the new band.
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { Projections } from "../../src/projections/projections.js";
import { checkAbstentionModel, type BandAbstention } from "../../src/projections/abstention-model.js";
import { DomainModel } from "../../src/lexical/domain.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const at = args.indexOf("--band");
const bandPath = at >= 0 ? args.splice(at, 2)[1] : undefined;
const [modelPath, src, out] = args;
if (!modelPath || !src || !out) throw new Error("usage: write-domain.ts MODEL.json[.gz] IN.gguf OUT.gguf [--band BAND.json]");
const raw = readFileSync(modelPath);
const m = JSON.parse((modelPath.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8")) as { words: string[]; weights: number[]; bias: number };
const domain = DomainModel.fromWords(m.words, m.weights, m.bias);
const p = await Projections.load(src);
let abstention = p.abstention;
if (bandPath) {
  if (!abstention || abstention.kind !== "bySize") throw new Error(`${src}: --band replaces the large band of a by-size abstention model, and this file has ${abstention ? `a ${abstention.kind} model` : "none"}`);
  const band = JSON.parse(readFileSync(bandPath, "utf8")) as BandAbstention;
  abstention = checkAbstentionModel({ ...abstention, large: { ...band, marginCap: abstention.large.marginCap } });
}
await p.withCalibration({ domain, abstention }).save(out);
console.log(`wrote ${out}: domain table of ${domain.words} words (bias ${domain.bias.toFixed(4)})${bandPath ? `; large band ${JSON.stringify(abstention!.kind === "bySize" ? abstention!.large : null)}` : ""}`);
