// THREAD_POWER_THROTTLING_STATE for mingw-w64 headers older than 11 (Debian 12's mingw-w64 10 declares
// SetThreadInformation and ThreadPowerThrottling but not the state struct or its constants), which
// ggml-cpu.c uses on Windows to keep its worker threads off power-throttled cores. Forced into ggml-cpu's
// C files by CMakeLists.txt, only when a check finds the struct missing; the layout is the Windows SDK's
// (processthreadsapi.h). Includes nothing, so it changes nothing else in the files it is forced into.
#ifndef GAVEL_MINGW_THREAD_POWER_H
#define GAVEL_MINGW_THREAD_POWER_H
typedef struct _THREAD_POWER_THROTTLING_STATE {
  unsigned long Version;
  unsigned long ControlMask;
  unsigned long StateMask;
} THREAD_POWER_THROTTLING_STATE, *PTHREAD_POWER_THROTTLING_STATE;
#define THREAD_POWER_THROTTLING_CURRENT_VERSION 1
#define THREAD_POWER_THROTTLING_EXECUTION_SPEED 0x1
#define THREAD_POWER_THROTTLING_VALID_FLAGS THREAD_POWER_THROTTLING_EXECUTION_SPEED
#endif
