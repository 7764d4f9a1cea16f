// Device names, TensorFlow's way:
// "/job:localhost/replica:0/task:0/device:CPU:0". Partial specs
// ("/device:GPU:1", "/cpu:0", "/job:worker/task:2", "") parse too; unset fields
// match anything.
#ifndef RUNNEL_FRAMEWORK_DEVICE_NAME_H_
#define RUNNEL_FRAMEWORK_DEVICE_NAME_H_

#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"

namespace runnel {

struct DeviceName {
  std::string job;   // Empty: unset.
  int replica = -1;  // -1: unset.
  int task = -1;
  std::string type;  // "CPU", "GPU" (upper case); empty: unset.
  int id = -1;

  static StatusOr<DeviceName> Parse(absl::string_view spec);
  // The full or partial name, in canonical form.
  std::string ToString() const;
  // True if every field set in `spec` equals this name's.
  bool Matches(const DeviceName& spec) const;
};

// "/job:<job>/replica:<r>/task:<t>/device:<type>:<id>".
std::string FullDeviceName(absl::string_view job, int replica, int task,
                           absl::string_view type, int id);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_NAME_H_
