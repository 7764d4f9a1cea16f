#include "runnel/framework/collective.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace runnel {
namespace {

struct Registry {
  absl::Mutex mu;
  absl::flat_hash_map<int32_t, std::shared_ptr<CollectiveGroup>> groups
      ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* const r = new Registry;
  return *r;
}

}  // namespace

Status CollectiveGroup::AllReduce(Tensor* t, ReduceOp op, int64_t instance_key,
                                  absl::Duration timeout) {
  absl::Notification finished;
  Status status;
  AllReduceAsync(t, op, instance_key, timeout, [&](const Status& s) {
    status = s;
    finished.Notify();
  });
  finished.WaitForNotification();
  return status;
}

Status RegisterCollectiveGroup(int32_t group_key,
                               std::shared_ptr<CollectiveGroup> group) {
  if (group == nullptr) {
    return errors::InvalidArgument("collective group ", group_key,
                                   ": no group given");
  }
  Registry& r = TheRegistry();
  absl::MutexLock l(&r.mu);
  if (!r.groups.emplace(group_key, std::move(group)).second) {
    return errors::AlreadyExists("collective group ", group_key,
                                 " is already registered in this process");
  }
  return absl::OkStatus();
}

void UnregisterCollectiveGroup(int32_t group_key) {
  Registry& r = TheRegistry();
  absl::MutexLock l(&r.mu);
  r.groups.erase(group_key);
}

std::shared_ptr<CollectiveGroup> FindCollectiveGroup(int32_t group_key) {
  Registry& r = TheRegistry();
  absl::MutexLock l(&r.mu);
  auto it = r.groups.find(group_key);
  return it == r.groups.end() ? nullptr : it->second;
}

}  // namespace runnel
