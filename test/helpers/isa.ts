// The kernels' instruction sets, for tests that run a kernel on each: the addon's kernelIsa setting
// (GAVEL_KERNEL_ISA, given through configure) caps the one it picks at call time, so a test sets it
// per case and puts back the process's own after.
import { afterEach } from "vitest";
import { config } from "../../src/config.js";
import { loadBinding } from "../../src/native/binding.js";

const ORDER = ["generic", "avx2", "avx512"] as const;
type Isa = (typeof ORDER)[number];

/** Caps the kernels' instruction set at `isa` (null: the CPU's best) for the calls that follow. */
export function setKernelIsa(isa: string | null): void {
  if (isa !== null && !(ORDER as readonly string[]).includes(isa)) throw new Error(`no instruction set ${isa}`);
  loadBinding().configure({ kernelIsa: isa as Isa | null });
}

/** Every instruction set this CPU runs, from the generic baseline up to its best (no cap). */
export function kernelIsas(binding: { kernelIsa(): string }): string[] {
  setKernelIsa(null);
  const best = binding.kernelIsa();
  setKernelIsa(config().kernelIsa ?? null);
  return ORDER.slice(0, ORDER.indexOf(best as Isa) + 1);
}

/** Puts back the process's kernelIsa setting (GAVEL_KERNEL_ISA) after each test of the calling suite (or file). */
export function restoreKernelIsaAfterEach(): void {
  afterEach(() => setKernelIsa(config().kernelIsa ?? null));
}
