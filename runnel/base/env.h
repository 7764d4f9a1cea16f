// Files and clocks.
#ifndef RUNNEL_BASE_ENV_H_
#define RUNNEL_BASE_ENV_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"

namespace runnel {

// Reads the whole file. NotFound if it does not exist.
Status ReadFileToString(const std::string& path, std::string* contents);
// Writes `contents` to `path` (truncating). Not atomic; see WriteFileAtomic.
Status WriteStringToFile(const std::string& path, absl::string_view contents);
bool FileExists(const std::string& path);

// Monotonic clock.
int64_t NowNanos();
inline int64_t NowMicros() { return NowNanos() / 1000; }
// Wall clock, microseconds since the Unix epoch.
int64_t WallMicros();

}  // namespace runnel

#endif  // RUNNEL_BASE_ENV_H_
