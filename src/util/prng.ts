/**
 * The seeded pseudo-random numbers of the package, written once: mulberry32 (a 32-bit state, fast,
 * statistically fine for sampling and test data) and normal samples drawn from it. Seeded streams
 * make samples, batches and random projections replayable from their seed.
 */

/**
 * mulberry32 with its state in view: a training checkpoint stores {@link Rng.state}, and a resumed
 * run draws the same batches.
 */
export class Rng {
  /** The 32-bit state; the next draw depends on it alone. */
  state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A uniform number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

/** A mulberry32 stream as a function: each call returns the next uniform number in [0, 1). */
export function mulberry32(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}

/** Standard normal samples from a mulberry32 stream (Box–Muller, both outputs used). */
export function gaussian(seed: number): () => number {
  const uniform = mulberry32(seed);
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    const u1 = 1 - uniform(); // (0, 1]: log stays finite
    const u2 = uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  };
}
