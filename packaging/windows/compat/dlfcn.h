// <dlfcn.h> for the mingw-w64 cross build (found first on the include path; see
// chorus_posix_compat.h for why this exists): dlopen/dlsym/dlclose/dlerror over
// LoadLibrary/GetProcAddress, and readlink("/proc/self/exe") over GetModuleFileName,
// which is what run-time backend loading needs.
#pragma once
#if defined(_WIN32) && defined(__MINGW32__)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define RTLD_LAZY 0x1
#define RTLD_NOW 0x2
#define RTLD_LOCAL 0x0
#define RTLD_GLOBAL 0x100

inline char* chorus_dl_error_buffer() {
  static thread_local char buf[512];
  return buf;
}
inline bool& chorus_dl_error_set() {
  static thread_local bool set = false;
  return set;
}
inline void chorus_dl_record_error(const char* what) {
  const DWORD code = GetLastError();
  char* buf = chorus_dl_error_buffer();
  // Keep the POSIX wording for a missing file: callers look for it.
  const char* reason = (code == ERROR_MOD_NOT_FOUND || code == ERROR_FILE_NOT_FOUND ||
                        code == ERROR_PATH_NOT_FOUND)
                           ? "No such file or directory"
                           : "cannot be loaded";
  snprintf(buf, 512, "%s: %s (Windows error %lu)", what, reason, static_cast<unsigned long>(code));
  chorus_dl_error_set() = true;
}

inline void* dlopen(const char* path, int /*flags*/) {
  HMODULE h = LoadLibraryExA(path, nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (h == nullptr) chorus_dl_record_error(path);
  return reinterpret_cast<void*>(h);
}
inline void* dlsym(void* handle, const char* name) {
  FARPROC p = GetProcAddress(reinterpret_cast<HMODULE>(handle), name);
  if (p == nullptr) chorus_dl_record_error(name);
  return reinterpret_cast<void*>(p);
}
inline int dlclose(void* handle) { return FreeLibrary(reinterpret_cast<HMODULE>(handle)) ? 0 : -1; }
inline char* dlerror() {
  if (!chorus_dl_error_set()) return nullptr;
  chorus_dl_error_set() = false;
  return chorus_dl_error_buffer();
}

// Only the Linux idiom readlink("/proc/self/exe") is supported: the running executable's
// path, with '/' separators so callers can split it the POSIX way.
inline ssize_t readlink(const char* path, char* buf, size_t size) {
  if (strcmp(path, "/proc/self/exe") != 0 || size == 0) {
    errno = ENOSYS;
    return -1;
  }
  const DWORD n = GetModuleFileNameA(nullptr, buf, static_cast<DWORD>(size));
  if (n == 0 || n >= size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (DWORD i = 0; i < n; ++i) {
    if (buf[i] == '\\') buf[i] = '/';
  }
  return static_cast<ssize_t>(n);  // like readlink: no terminating NUL counted
}
#endif
