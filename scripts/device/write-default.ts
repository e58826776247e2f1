import { readFileSync } from "node:fs";
import { Projections } from "gavel-router";
const [src, sel, name, out] = process.argv.slice(2).filter((a) => a !== "--");
const pick = JSON.parse(readFileSync(sel, "utf8"))[name];
const c = pick.chosen;
const p = await Projections.load(src);
await p.withCalibration({ alpha: c.alpha, gamma: c.gamma, delta: c.delta, beta: c.beta, lexicalTemperature: c.T, lexicalK1: 3, lexicalB: 1, shortlistGlance: c.kg, shortlistLexical: c.kb, abstention: pick.abstention }).save(out);
console.log("wrote", out);
