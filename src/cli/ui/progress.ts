/**
 * Progress of a long command on stderr: one line rewritten in place on a terminal, a plain line every
 * few percent elsewhere (logs, CI), where rewriting would only pile up. Our own small code (no
 * dependency weight; ~100 lines): cli-progress would add a package for one line of output. With
 * `rate`, both show the rate and the time left at that rate. The rate is counted from the first item
 * that needed work, over the items that did: what comes before it (reading and checking a library of
 * thousands of skills) would otherwise show a first rate far too low (a 30,000-skill install opened
 * with "ETA 54 h" for an hour and a half's work), and the unchanged skills a resumed install skips
 * one far too high. "took" counts from the start.
 */

/** How a command's progress looks. */
export interface ProgressOptions {
  /** Text before the count on the terminal line, e.g. "scanning ". */
  prefix?: string;
  /** Cells of a `[###...]` bar before the count on the terminal line (default none). */
  bar?: number;
  /** Width the current item's name is cut or padded to (default 40). */
  nameWidth?: number;
  /** Percent between log lines where the stream is not a terminal; 0 prints none there. */
  every: number;
  /**
   * Where the stream is not a terminal, also a log line once this many seconds have passed since the
   * last one (a long install then shows it is alive between its percent lines); default none.
   */
  everySeconds?: number;
  /** The log line (default "done/total (pct%)", then the rate and ETA with `rate`). */
  logLine?: (done: number, total: number, pct: number) => string;
  /** Show the rate and the time left, counting items as this unit ("skills" → "3.2 skills/s, ETA 41 s"). */
  rate?: { unit: string };
  /** The clock in milliseconds (default performance.now); tests pass their own. */
  now?: () => number;
}

/** A duration for a person: "42 s", "3 min 5 s", "2 h 7 min". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** "3.2 skills/s" (two decimals under 10, one under 100). */
function formatRate(rate: number, unit: string): string {
  const shown = rate >= 100 ? rate.toFixed(0) : rate >= 10 ? rate.toFixed(1) : rate.toFixed(2);
  return `${shown} ${unit}/s`;
}

/** "3.2 skills/s, ETA 41 s" after `done` of `total` items in `seconds`; "" before there is a rate. */
export function rateText(done: number, total: number, seconds: number, unit: string): string {
  if (done <= 0 || seconds <= 0) return "";
  const rate = done / seconds;
  return done >= total ? `${formatRate(rate, unit)}, took ${formatDuration(seconds)}` : `${formatRate(rate, unit)}, ETA ${formatDuration((total - done) / rate)}`;
}

/** One command's progress display. */
export class Progress {
  #lastPct = -Infinity;
  /** When the last log line was written (ms), for `everySeconds`. */
  #lastLine = -Infinity;
  /** The first update that did work: the rate counts the working items and time after it. */
  #first: { at: number } | null = null;
  /** Working items reported after #first. */
  #worked = 0;
  /** A terminal line is drawn and not yet ended by a newline. */
  #open = false;
  readonly #started: number;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly opts: ProgressOptions,
  ) {
    this.#started = this.#now();
  }

  /**
   * The rate and ETA text, "" without `rate`: the rate over the working items after the first one
   * ("" until there is one; the time left assumes the items left need work), "took" over the whole run.
   */
  #rate(done: number, total: number): string {
    const { rate } = this.opts;
    if (!rate) return "";
    const now = this.#now();
    const f = this.#first;
    const steady = f && this.#worked > 0 && now > f.at ? this.#worked / ((now - f.at) / 1000) : null;
    if (done >= total) {
      const seconds = (now - this.#started) / 1000;
      if (steady === null) return rateText(done, total, seconds, rate.unit);
      return `${formatRate(steady, rate.unit)}, took ${formatDuration(seconds)}`;
    }
    return steady === null ? "" : `${formatRate(steady, rate.unit)}, ETA ${formatDuration((total - done) / steady)}`;
  }

  #now(): number {
    return this.opts.now ? this.opts.now() : performance.now();
  }

  /**
   * `done` of `total` items, the current one named `name`; the line ends when done reaches total.
   * `worked` false: the item needed no work (an unchanged skill), so it does not count toward the
   * rate (a resumed install skips its first thousands in a second).
   */
  update(done: number, total: number, name = "", worked = true): void {
    const { stream, opts } = this;
    const pct = Math.floor((100 * done) / Math.max(1, total));
    if (worked && this.#first) this.#worked++;
    if (stream.isTTY) {
      const width = opts.bar ?? 0;
      const fill = Math.round((width * done) / Math.max(1, total));
      const bar = width > 0 ? `[${"#".repeat(fill)}${".".repeat(width - fill)}] ` : "";
      const w = opts.nameWidth ?? 40;
      const rate = opts.rate ? `${this.#rate(done, total).padEnd(30)} ` : "";
      stream.write(`\r${opts.prefix ?? ""}${bar}${done}/${total} ${rate}${name.slice(0, w).padEnd(w)}`);
      this.#open = done !== total;
      if (!this.#open) stream.write("\n");
    } else if (opts.every > 0 && (pct >= this.#lastPct + opts.every || done === total || this.#due())) {
      // a percent line moves the percent schedule; a time line (everySeconds) leaves it
      if (pct >= this.#lastPct + opts.every) this.#lastPct = pct;
      this.#lastLine = this.#now();
      const rate = this.#rate(done, total);
      const line = opts.logLine ? opts.logLine(done, total, pct) : `${done}/${total} (${pct}%)${rate ? ` ${rate}` : ""}`;
      stream.write(`${line}\n`);
    }
    // the rate's start: after this item's line, which has no rate yet
    if (worked) this.#first ??= { at: this.#now() };
  }

  /** A time-based log line is due (`everySeconds`). */
  #due(): boolean {
    const e = this.opts.everySeconds;
    return e !== undefined && e > 0 && this.#now() - this.#lastLine >= e * 1000;
  }

  /** Ends a terminal line left open (the last item did not report, e.g. it needed no work). */
  end(): void {
    if (this.#open) this.stream.write("\n");
    this.#open = false;
  }
}
