# usage: python3 t.py N STDIN_JSON 'label::cmd ...' ...  -> interleaved runs; median wall and cpu (user+sys) per label
import os, sys, time, statistics, subprocess, shlex
n = int(sys.argv[1]); stdin = sys.argv[2].encode()
specs = [(s.split("::", 1)[0], shlex.split(s.split("::", 1)[1])) for s in sys.argv[3:]]
res = {l: ([], []) for l, _ in specs}
def run(argv):
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.dup2(r, 0); os.close(w); os.close(r)
        dn = os.open("/dev/null", os.O_WRONLY); os.dup2(dn, 1); os.dup2(dn, 2)
        os.execvp(argv[0], argv)
    os.close(r); os.write(w, stdin); os.close(w)
    _, status, ru = os.wait4(pid, 0)
    return (time.perf_counter() - t0) * 1000, (ru.ru_utime + ru.ru_stime) * 1000
for l, a in specs: run(a)
for i in range(n):
    for l, a in specs:
        w, c = run(a); res[l][0].append(w); res[l][1].append(c)
def p95(xs): s = sorted(xs); return s[min(len(s) - 1, int(0.95 * len(s)))]
print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; n={n}")
for l, _ in specs:
    w, c = res[l]
    print(f"{l:44s} wall p50 {statistics.median(w):6.1f} p95 {p95(w):6.1f} min {min(w):6.1f} | cpu p50 {statistics.median(c):6.1f}")
