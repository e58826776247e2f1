// The kernels' instruction sets, for tests that run a kernel on each: GAVEL_KERNEL_ISA caps the one
// the addon picks at call time, so a test sets it per case and puts it back after.
import { afterEach } from "vitest";

const ORDER = ["generic", "avx2", "avx512"];

/** Every instruction set this CPU runs, from the generic baseline up to its best (the variable unset). */
export function kernelIsas(binding: { kernelIsa(): string }): string[] {
  const saved = process.env.GAVEL_KERNEL_ISA;
  delete process.env.GAVEL_KERNEL_ISA;
  const best = binding.kernelIsa();
  if (saved !== undefined) process.env.GAVEL_KERNEL_ISA = saved;
  return ORDER.slice(0, ORDER.indexOf(best) + 1);
}

/** Restores GAVEL_KERNEL_ISA after each test of the calling suite (or file). */
export function restoreKernelIsaAfterEach(): void {
  const saved = process.env.GAVEL_KERNEL_ISA;
  afterEach(() => {
    if (saved === undefined) delete process.env.GAVEL_KERNEL_ISA;
    else process.env.GAVEL_KERNEL_ISA = saved;
  });
}
