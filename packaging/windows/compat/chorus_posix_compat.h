// Force-included (-include) into every C++ file of the mingw-w64 cross build by
// packaging/windows/mingw-w64-x86_64.cmake. It supplies the few POSIX calls the engine
// uses that mingw-w64's C runtime lacks, mapped onto their Windows equivalents, so the
// cross build proves the engine portable while native _WIN32 branches are not yet written.
// Each entry is a stopgap: once the engine file has its own _WIN32 branch it can go.
#pragma once
#ifdef __cplusplus
#if defined(_WIN32) && defined(__MINGW32__)

// mingw-w64's <time.h> declares gmtime_r/localtime_r when asked for POSIX thread-safe calls.
#ifndef _POSIX_THREAD_SAFE_FUNCTIONS
#define _POSIX_THREAD_SAFE_FUNCTIONS 200112L
#endif
#include <time.h>

// timegm: UTC broken-down time to time_t; the CRT calls it _mkgmtime.
inline time_t timegm(struct tm* t) { return _mkgmtime(t); }

#endif
#endif
