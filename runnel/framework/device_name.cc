#include "runnel/framework/device_name.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace runnel {

namespace {
bool ParseInt(absl::string_view s, int* out) {
  if (s == "*") {
    *out = -1;
    return true;
  }
  return absl::SimpleAtoi(s, out) && *out >= 0;
}
}  // namespace

StatusOr<DeviceName> DeviceName::Parse(absl::string_view spec) {
  DeviceName d;
  auto bad = [&] {
    return errors::InvalidArgument("malformed device name '", spec, "'");
  };
  if (spec.empty()) return d;
  if (spec[0] != '/') return bad();
  for (absl::string_view part : absl::StrSplit(spec.substr(1), '/')) {
    if (part.empty()) return bad();
    std::vector<absl::string_view> kv = absl::StrSplit(part, ':');
    const std::string key = absl::AsciiStrToLower(kv[0]);
    if (key == "job" && kv.size() == 2) {
      d.job = std::string(kv[1]);
    } else if (key == "replica" && kv.size() == 2) {
      if (!ParseInt(kv[1], &d.replica)) return bad();
    } else if (key == "task" && kv.size() == 2) {
      if (!ParseInt(kv[1], &d.task)) return bad();
    } else if (key == "device" && (kv.size() == 2 || kv.size() == 3)) {
      d.type = absl::AsciiStrToUpper(kv[1]);
      if (kv.size() == 3 && !ParseInt(kv[2], &d.id)) return bad();
    } else if ((key == "cpu" || key == "gpu") &&
               kv.size() == 2) {  // Legacy "/gpu:0".
      d.type = absl::AsciiStrToUpper(key);
      if (!ParseInt(kv[1], &d.id)) return bad();
    } else {
      return bad();
    }
  }
  return d;
}

std::string DeviceName::ToString() const {
  std::string s;
  if (!job.empty()) absl::StrAppend(&s, "/job:", job);
  if (replica >= 0) absl::StrAppend(&s, "/replica:", replica);
  if (task >= 0) absl::StrAppend(&s, "/task:", task);
  if (!type.empty()) {
    absl::StrAppend(&s, "/device:", type, ":");
    if (id >= 0)
      absl::StrAppend(&s, id);
    else
      absl::StrAppend(&s, "*");
  }
  return s;
}

bool DeviceName::Matches(const DeviceName& spec) const {
  if (!spec.job.empty() && spec.job != job) return false;
  if (spec.replica >= 0 && spec.replica != replica) return false;
  if (spec.task >= 0 && spec.task != task) return false;
  if (!spec.type.empty() && spec.type != type) return false;
  if (spec.id >= 0 && spec.id != id) return false;
  return true;
}

std::string FullDeviceName(absl::string_view job, int replica, int task,
                           absl::string_view type, int id) {
  return absl::StrCat("/job:", job, "/replica:", replica, "/task:", task,
                      "/device:", type, ":", id);
}

}  // namespace runnel
