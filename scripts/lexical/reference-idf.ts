/**
 * Builds the reference idf (src/lexical/reference-idf.ts) from a public library and writes it into a
 * projections file: each word's document frequency over the library's skills (name, description and
 * body, split as the BM25 index splits them), the words in at least --min-df skills kept.
 *
 *   npx vite-node scripts/lexical/reference-idf.ts -- LIBRARY IN.projections.gguf OUT.projections.gguf [--min-df 5]
 * (LIBRARY: a folder of skills or a library.jsonl[.gz]; the shipped table: ../shared/data/skills-mit.jsonl.gz, --min-df 5)
 */
import { Projections } from "../../src/index.js";
import { ReferenceIdf } from "../../src/lexical/reference-idf.js";
import { bm25DocTokens } from "../../src/lexical/postings.js";
import { loadLibrary } from "../../lab/eval/io.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const at = argv.indexOf("--min-df");
const minDf = at >= 0 ? Number(argv.splice(at, 2)[1]) : 5;
const [library, input, output] = argv;
if (!library || !input || !output) throw new Error("usage: reference-idf.ts LIBRARY IN.projections.gguf OUT.projections.gguf [--min-df 5]");
const { skills } = await loadLibrary([library]);
const ref = ReferenceIdf.build(skills.map((s) => bm25DocTokens(s)), minDf);
const p = await Projections.load(input);
await p.withCalibration({ referenceIdf: ref }).save(output);
console.log(`${output}: reference idf over ${ref.documents} skills of ${library}, ${ref.words} words in at least ${minDf}`);
