/**
 * The longest the event loop is held while a measurement runs: the longest gap between ticks of a
 * 10 ms interval timer, from {@link loopHold} until `stop()`. `restart()` forgets what came before
 * (a part timed apart, e.g. a constructor's own work).
 */
export function loopHold(): { restart(): void; stop(): number } {
  let hold = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    hold = Math.max(hold, now - last);
    last = now;
  }, 10);
  return {
    restart: () => {
      hold = 0;
      last = performance.now();
    },
    stop: () => {
      clearInterval(timer);
      return Math.max(hold, performance.now() - last);
    },
  };
}
