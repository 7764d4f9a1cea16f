#include "runnel/base/status.h"

namespace runnel::errors {

absl::Status Prefix(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace runnel::errors
