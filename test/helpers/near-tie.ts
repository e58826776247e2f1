/**
 * Whether a route chose `expected`, or lost it only to a near tie of the re-ranker: its two best
 * within `eps` of each other in R, `expected` the second. The verdict's L moves by ~0.01 nats with the
 * batch shapes a pass runs in (Q8_0 requantisation on AVX-512), which can swap such a pair between a
 * route in one process and the same route in another; a clear misroute still fails.
 */
export function rightOrNearTie(chosen: string | null, shortlist: readonly { skill: string; R?: number | null }[], expected: string, eps = 0.05): boolean {
  if (chosen === expected) return true;
  const [a, b] = shortlist;
  return a?.skill === chosen && b?.skill === expected && typeof a.R === "number" && typeof b.R === "number" && a.R - b.R < eps;
}
