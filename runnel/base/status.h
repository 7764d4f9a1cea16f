// Status helpers over absl::Status: error constructors that format their
// arguments with absl::StrCat, and the RETURN_IF_ERROR / ASSIGN_OR_RETURN
// macros used across every boundary.
#ifndef RUNNEL_BASE_STATUS_H_
#define RUNNEL_BASE_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace runnel {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

namespace errors {

#define RUNNEL_DEFINE_ERROR(Name)                    \
  template <typename... Args>                        \
  absl::Status Name(const Args&... args) {           \
    return absl::Name##Error(absl::StrCat(args...)); \
  }
RUNNEL_DEFINE_ERROR(InvalidArgument)
RUNNEL_DEFINE_ERROR(NotFound)
RUNNEL_DEFINE_ERROR(AlreadyExists)
RUNNEL_DEFINE_ERROR(FailedPrecondition)
RUNNEL_DEFINE_ERROR(OutOfRange)
RUNNEL_DEFINE_ERROR(Unimplemented)
RUNNEL_DEFINE_ERROR(Internal)
RUNNEL_DEFINE_ERROR(Unavailable)
RUNNEL_DEFINE_ERROR(DataLoss)
RUNNEL_DEFINE_ERROR(DeadlineExceeded)
RUNNEL_DEFINE_ERROR(Cancelled)
RUNNEL_DEFINE_ERROR(ResourceExhausted)
RUNNEL_DEFINE_ERROR(Aborted)
RUNNEL_DEFINE_ERROR(Unknown)
#undef RUNNEL_DEFINE_ERROR

// Returns `status` with `prefix` put in front of its message, same code.
absl::Status Prefix(const absl::Status& status, absl::string_view prefix);

}  // namespace errors
}  // namespace runnel

#define RUNNEL_STATUS_CONCAT_INNER(a, b) a##b
#define RUNNEL_STATUS_CONCAT(a, b) RUNNEL_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status); returns it from the caller if not OK.
#define RETURN_IF_ERROR(expr)                                            \
  do {                                                                   \
    ::absl::Status runnel_status_ = (expr);                              \
    if (ABSL_PREDICT_FALSE(!runnel_status_.ok())) return runnel_status_; \
  } while (0)

// ASSIGN_OR_RETURN(auto x, Foo()): evaluates a StatusOr, returns its status on
// error, otherwise moves the value into `lhs`.
#define ASSIGN_OR_RETURN(lhs, expr)                                        \
  RUNNEL_ASSIGN_OR_RETURN_IMPL(RUNNEL_STATUS_CONCAT(runnel_or_, __LINE__), \
                               lhs, expr)
#define RUNNEL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)      \
  auto tmp = (expr);                                      \
  if (ABSL_PREDICT_FALSE(!tmp.ok())) return tmp.status(); \
  lhs = std::move(tmp).value()

#endif  // RUNNEL_BASE_STATUS_H_
