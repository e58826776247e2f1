const base = new Set(process.moduleLoadList);
process.on("exit", () => { const extra = process.moduleLoadList.filter((m) => !base.has(m) && m.startsWith("NativeModule")).map((m) => m.slice(13)); process.stderr.write(`[mll] ${extra.length}: ${extra.join(" ")}\n`); });
