#include "engine/core/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace chorus {

#ifdef _WIN32
namespace {

std::string last_error_text() {
  const DWORD code = GetLastError();
  char* text = nullptr;
  const DWORD n = FormatMessageA(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM |
                                     FORMAT_MESSAGE_IGNORE_INSERTS,
                                 nullptr, code, 0, reinterpret_cast<char*>(&text), 0, nullptr);
  std::string msg = n > 0 ? std::string(text, n) : "error " + std::to_string(code);
  if (text != nullptr) LocalFree(text);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r' || msg.back() == '.')) msg.pop_back();
  return msg;
}

// Paths are UTF-8 everywhere in the engine; Windows wants UTF-16 for non-ASCII names.
std::wstring widen(const std::string& utf8) {
  if (utf8.empty()) return {};
  const int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  std::wstring wide(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), wide.data(), n);
  return wide;
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  HANDLE file = CreateFileW(widen(path).c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                            FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) return make_error(path + ": cannot open: " + last_error_text());
  LARGE_INTEGER size{};
  if (GetFileType(file) != FILE_TYPE_DISK || !GetFileSizeEx(file, &size)) {
    CloseHandle(file);
    return make_error(path + ": not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  f.size_bytes_ = static_cast<size_t>(size.QuadPart);
  if (f.size_bytes_ > 0) {  // an empty file cannot be mapped on Windows
    HANDLE mapping = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    void* p = mapping != nullptr ? MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0) : nullptr;
    const std::string msg = p == nullptr ? path + ": cannot map: " + last_error_text() : std::string();
    if (mapping != nullptr) CloseHandle(mapping);  // the view keeps the mapping alive
    if (p == nullptr) {
      CloseHandle(file);
      return make_error(msg);
    }
    f.data_ = static_cast<const uint8_t*>(p);
  }
  CloseHandle(file);
  return f;
}
#else
Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string msg = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return make_error(msg);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(path + ": not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  f.size_bytes_ = static_cast<size_t>(st.st_size);
  if (f.size_bytes_ > 0) {
    void* p = ::mmap(nullptr, f.size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string msg = path + ": cannot map: " + std::strerror(errno);
      ::close(fd);
      return make_error(msg);
    }
    f.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return f;
}
#endif

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
#ifdef _WIN32
  if (data_ != nullptr) UnmapViewOfFile(data_);
#else
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_bytes_);
#endif
  data_ = nullptr;
  size_bytes_ = 0;
}

}  // namespace chorus
