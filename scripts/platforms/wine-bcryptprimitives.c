/*
 * bcryptprimitives.dll for wine 8, which has none: Rust's standard library (rollup's Windows binding,
 * which vitest loads) imports ProcessPrng from it. Here it is RtlGenRandom (advapi32's
 * SystemFunction036), which wine has. Only for running the test runner under wine
 * (scripts/platforms/wine-win32.sh builds it into the wine prefix); nothing of gavel-router uses it.
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll wine-bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG n = length > 0x40000000 ? 0x40000000 : (ULONG)length;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    length -= n;
  }
  return TRUE;
}
