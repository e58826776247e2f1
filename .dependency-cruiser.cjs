// Direction rules of docs/ARCHITECTURE.md ("Layers"), checked by `npm run lint:deps` (part of
// `npm test`) over src/ (the runtime) and lab/ (training, evaluation, calibration). The layers, bottom
// first: a module may import from its own layer or below, never from above, so folders cannot form a
// cycle; folders of one layer do not import each other. Between the two: the lab reaches the runtime
// only through its entries (src/index.ts, src/internal.ts), and the runtime never imports the lab but
// for the CLI's one dynamic import of lab/index.ts (src/cli/lab.ts).
/** @type {string[][]} folders (or root files) of src/, one row per layer, bottom first */
const LAYERS = [
  ["errors\\.ts"],
  ["util/"],
  ["config\\.ts"],
  ["defaults\\.ts"],
  ["native/"],
  ["gguf/"],
  ["model/"],
  ["skills/", "lexical/"],
  ["render/"],
  ["projections/"],
  ["kernels/"],
  ["bank/"],
  ["route/"],
  ["serve/"],
  ["adapters/"],
  ["cli/"],
  ["index\\.ts", "internal\\.ts"],
];

/** @type {string[][]} folders (or root files) of lab/, one row per layer, bottom first */
const LAB_LAYERS = [
  ["train/", "eval/", "gate/"],
  ["cli/"],
  ["index\\.ts"],
];

const layerRules = (LAYERS, root, tag) => LAYERS.flatMap((layer, i) => {
  const path = (folder) => `^${root}/${folder}`;
  const above = LAYERS.slice(i + 1).flat();
  const rules = [];
  if (above.length) {
    rules.push({
      name: `${tag}layer-${i}-imports-above`,
      comment: `${layer.join(", ")} may not import a layer above it (${above.join(", ")})`,
      severity: "error",
      from: { path: layer.map(path) },
      to: { path: above.map(path) },
    });
  }
  for (const a of layer) {
    const siblings = layer.filter((b) => b !== a);
    if (siblings.length) {
      rules.push({
        name: `${tag}layer-${i}-sibling-${a.replace(/\W/g, "")}`,
        comment: `${a} may not import ${siblings.join(", ")}: folders of one layer stay independent`,
        severity: "error",
        from: { path: path(a) },
        to: { path: siblings.map(path) },
      });
    }
  }
  return rules;
});

module.exports = {
  forbidden: [
    ...layerRules(LAYERS, "src", ""),
    ...layerRules(LAB_LAYERS, "lab", "lab-"),
    {
      name: "lab-reaches-runtime-through-entries",
      comment: "lab/ uses the runtime only through its entries: gavel-router (src/index.ts) and gavel-router/internal (src/internal.ts)",
      severity: "error",
      from: { path: "^lab/" },
      to: { path: "^src/", pathNot: "^src/(index|internal)\\.ts$" },
    },
    {
      name: "runtime-never-imports-lab",
      comment: "src/ never imports lab/ statically (types included): the runtime ships and runs without it",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^lab/", dependencyTypesNot: ["dynamic-import"] },
    },
    {
      name: "runtime-loads-lab-only-in-the-cli",
      comment: "the one import of lab/ from src/ is the CLI's dynamic import of its entry (src/cli/lab.ts → lab/index.ts)",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/cli/lab\\.ts$" },
      to: { path: "^lab/" },
    },
    {
      name: "runtime-loads-lab-through-its-entry",
      comment: "src/cli/lab.ts loads the lab through its public entry (lab/index.ts, gavel-router/lab) only",
      severity: "error",
      from: { path: "^src/cli/lab\\.ts$" },
      to: { path: "^lab/", pathNot: "^lab/index\\.ts$" },
    },
    {
      name: "no-circular",
      comment: "no import cycle between modules",
      severity: "error",
      from: { path: "^(src|lab)/" },
      to: { circular: true },
    },
    {
      name: "src-stays-out-of-tests",
      comment: "the package never imports tests, oracles or benches",
      severity: "error",
      from: { path: "^(src|lab)/" },
      to: { path: ["^test/", "^bench/", "^scripts/"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
