// How Status errors cross into Python: the bindings throw StatusError, and
// module.cc translates it into the exception class of
// runnel.framework.errors for its code (InvalidArgumentError, ...), as TF's
// Python raises tf.errors.* for a failed step.
#ifndef RUNNEL_PYTHON_STATUS_EXCEPTION_H_
#define RUNNEL_PYTHON_STATUS_EXCEPTION_H_

#include <stdexcept>
#include <string>

#include "runnel/base/status.h"

namespace runnel::python {

class StatusError : public std::runtime_error {
 public:
  explicit StatusError(const Status& s)
      : std::runtime_error(std::string(s.message())), code_(s.code()) {}
  absl::StatusCode code() const { return code_; }

 private:
  absl::StatusCode code_;
};

// Throws StatusError unless `s` is OK.
inline void ThrowIfError(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}

template <typename T>
T ValueOrThrow(StatusOr<T> v) {
  if (!v.ok()) throw StatusError(v.status());
  return *std::move(v);
}

}  // namespace runnel::python

#endif  // RUNNEL_PYTHON_STATUS_EXCEPTION_H_
