#pragma once
// Errors as values. An expected failure (bad file, unsupported type, bad request, out of
// memory) travels as a Result holding an Error whose message a user can act on; invariants
// stay asserts. Modelled on std::expected, which C++20 lacks.
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace chorus {

struct Error {
  std::string message;  // one line, names the thing and the problem, e.g. "model.gguf: truncated"
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(implicit)
  Result(Error error) : v_(std::move(error)) {}      // NOLINT(implicit)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }
  const std::string& message() const { return error().message; }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace chorus

// Propagate an error from an expression returning Result<...>.
#define CHORUS_TRY(expr)                                     \
  do {                                                       \
    auto&& chorus_try_r_ = (expr);                           \
    if (!chorus_try_r_.ok()) return chorus_try_r_.error();   \
  } while (0)
