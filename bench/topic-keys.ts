/**
 * Synthetic token keys with topics, as the key IVF benches build their banks: a vocabulary of V token
 * directions; a skill's keys are tokens (70% from its topic's 64, 30% from anywhere: `uniform() < 0.4`) plus noise
 * (cos ≈ 0.9 to the token), as shallow-layer keys sit near their token's identity. One xorshift
 * stream (seed 0x9e3779b9) serves every draw in a process, so a bench that draws in the same order
 * builds the same bank (the figures in docs/BENCHMARKS.md were measured on these streams).
 */

let state = 0x9e3779b9;

/** The stream's next value, uniform in [−1, 1). */
export function uniform(): number {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 2 ** 31 - 1;
}

/** An integer in [0, n). */
export function pick(n: number): number {
  return Math.floor(((uniform() + 1) / 2) * n) % n;
}

/** out[at … at + dim) = normalize(base[baseAt …] + a · u), u uniform in [−1, 1]^dim (base null: 0). */
export function around(base: Float32Array | null, baseAt: number, a: number, out: Float32Array, at: number, dim: number): void {
  let ss = 0;
  for (let d = 0; d < dim; d++) {
    const v = (base ? base[baseAt + d] : 0) + a * uniform();
    out[at + d] = v;
    ss += v * v;
  }
  const inv = 1 / Math.sqrt(ss);
  for (let d = 0; d < dim; d++) out[at + d] *= inv;
}

/** around(base, …) with its noise one of the pool's vectors, drawn once (a faster fill of large banks). */
function aroundPooled(base: Float32Array, baseAt: number, pool: Float32Array, out: Float32Array, at: number, dim: number): void {
  const p = pick(pool.length / dim) * dim;
  let ss = 0;
  for (let d = 0; d < dim; d++) {
    const v = base[baseAt + d] + pool[p + d];
    out[at + d] = v;
    ss += v * v;
  }
  const inv = 1 / Math.sqrt(ss);
  for (let d = 0; d < dim; d++) out[at + d] *= inv;
}

/** A vocabulary of token directions and the topics of a library, from which skills' keys are drawn. */
export class TopicKeys {
  readonly vocab: Float32Array;
  /** The noise's amplitude per dimension (norm ≈ 0.48: cos ≈ 0.9 to the token). */
  readonly noise: number;
  readonly #pool: Float32Array;
  #topicTokens = new Int32Array(0);
  #nTopics = 0;

  /** V token directions, then (noisePool > 0) a pool of that many noise vectors. */
  constructor(readonly dim: number, readonly V = 8192, noisePool = 0) {
    this.vocab = new Float32Array(V * dim);
    for (let v = 0; v < V; v++) around(null, 0, 1, this.vocab, v * dim, dim);
    this.noise = 0.48 * Math.sqrt(3 / dim);
    this.#pool = new Float32Array(noisePool * dim);
    for (let i = 0; i < this.#pool.length; i++) this.#pool[i] = this.noise * uniform();
  }

  /** Draws the topics of an n-skill library: max(10, ⌊n/50⌋) of 64 tokens each. */
  topics(n: number): void {
    this.#nTopics = Math.max(10, Math.floor(n / 50));
    this.#topicTokens = new Int32Array(this.#nTopics * 64);
    for (let i = 0; i < this.#topicTokens.length; i++) this.#topicTokens[i] = pick(this.V);
  }

  /** One skill's keys into `keys` (keysPer × dim), its topic drawn among {@link topics}'; returns its tokens. */
  skill(keysPer: number, keys: Float32Array): Int32Array {
    const dim = this.dim;
    const topic = pick(this.#nTopics);
    const toks = new Int32Array(keysPer);
    for (let j = 0; j < keysPer; j++) {
      toks[j] = uniform() < 0.4 ? this.#topicTokens[topic * 64 + pick(64)] : pick(this.V);
      if (this.#pool.length > 0) aroundPooled(this.vocab, toks[j] * dim, this.#pool, keys, j * dim, dim);
      else around(this.vocab, toks[j] * dim, this.noise, keys, j * dim, dim);
    }
    return toks;
  }
}
