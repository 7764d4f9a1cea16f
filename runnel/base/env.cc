#include "runnel/base/env.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"

namespace runnel {

Status ReadFileToString(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!FileExists(path)) return errors::NotFound("file not found: ", path);
    return errors::Unavailable("cannot open ", path, ": ",
                               std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return errors::DataLoss("error reading ", path);
  *contents = std::move(ss).str();
  return absl::OkStatus();
}

Status WriteStringToFile(const std::string& path, absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return errors::Unavailable("cannot open ", path,
                               " for writing: ", std::strerror(errno));
  }
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return errors::DataLoss("error writing ", path);
  return absl::OkStatus();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status ValidatePath(absl::string_view path) {
  if (path.empty()) return errors::InvalidArgument("path is empty");
  const size_t nul = path.find('\0');
  if (nul != absl::string_view::npos) {
    constexpr size_t kShown = 64;
    return errors::InvalidArgument("path holds a NUL byte at offset ", nul,
                                   " (of ", path.size(), " bytes): \"",
                                   absl::CHexEscape(path.substr(0, kShown)),
                                   path.size() > kShown ? "...\"" : "\"");
  }
  return absl::OkStatus();
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace runnel
