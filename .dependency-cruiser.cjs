// Direction rules of docs/ARCHITECTURE.md ("Layers"), checked by `npm run lint:deps` (part of
// `npm test`). The layers, bottom first: a module may import from its own layer or below, never from
// above, so folders cannot form a cycle; folders of one layer do not import each other.
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
  ["train/", "eval/"],
  ["serve/"],
  ["adapters/"],
  ["cli/"],
  ["index\\.ts"],
];

const path = (folder) => `^src/${folder}`;
const layerRules = LAYERS.flatMap((layer, i) => {
  const above = LAYERS.slice(i + 1).flat();
  const rules = [];
  if (above.length) {
    rules.push({
      name: `layer-${i}-imports-above`,
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
        name: `layer-${i}-sibling-${a.replace(/\W/g, "")}`,
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
    ...layerRules,
    {
      name: "stages-reach-route-through-its-index",
      comment: "train/ and eval/ use the route stage only through its public functions (src/route/index.ts)",
      severity: "error",
      from: { path: ["^src/train/", "^src/eval/"] },
      to: { path: "^src/route/", pathNot: "^src/route/index\\.ts$" },
    },
    {
      name: "no-circular",
      comment: "no import cycle between modules",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "src-stays-out-of-tests",
      comment: "the package never imports tests, oracles or benches",
      severity: "error",
      from: { path: "^src/" },
      to: { path: ["^test/", "^bench/", "^scripts/"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
