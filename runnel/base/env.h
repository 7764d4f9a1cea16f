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

// Checks a path that came from user data (a tensor, an attr, a command-line
// flag) before it reaches open(2) and friends, which stop at the first NUL:
// "ckpt\0/../../etc/x" would otherwise silently become "ckpt". Returns
// InvalidArgument, naming the offset of the bad byte, if `path` is empty or
// holds a NUL byte. Other bytes (including non-UTF-8 and control bytes) are
// legal in POSIX file names and pass. Thread-safe; touches no file.
Status ValidatePath(absl::string_view path);

// Monotonic clock.
int64_t NowNanos();
inline int64_t NowMicros() { return NowNanos() / 1000; }
// Wall clock, microseconds since the Unix epoch.
int64_t WallMicros();

}  // namespace runnel

#endif  // RUNNEL_BASE_ENV_H_
