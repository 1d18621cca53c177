// Result<T>: a T or a non-OK Status.
//
// REQUIRES: value() only on an ok() result; status() of an ok result is OK.
#ifndef ZEROFOLD_RESULT_H_
#define ZEROFOLD_RESULT_H_

#include <cstdlib>
#include <optional>
#include <utility>

#include "zerofold/status.h"

namespace zerofold {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Internal("Result built from an OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  T& value() & { Check(); return *value_; }
  const T& value() const& { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  void IgnoreError() const {}

 private:
  void Check() const {
    if (!value_) std::abort();  // caller bug: value() of an error result
  }
  Status status_;
  std::optional<T> value_;
};

#define ZF_CONCAT_INNER_(a, b) a##b
#define ZF_CONCAT_(a, b) ZF_CONCAT_INNER_(a, b)

// ZF_ASSIGN_OR_RETURN(decl, expr): evaluate expr (a Result); on error return
// its status, else bind its value to decl (e.g. `auto x` or `Foo foo`).
#define ZF_ASSIGN_OR_RETURN(decl, expr) \
  ZF_ASSIGN_OR_RETURN_IMPL_(ZF_CONCAT_(zf_result_, __LINE__), decl, expr)
#define ZF_ASSIGN_OR_RETURN_IMPL_(tmp, decl, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  decl = std::move(tmp).value()

}  // namespace zerofold

#endif  // ZEROFOLD_RESULT_H_
