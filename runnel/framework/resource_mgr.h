// ResourceMgr: named, typed, reference-counted state (variables, queues,
// readers) grouped in containers. A session owns one; `Cleanup(container)`
// drops a whole container.
//
// Thread safety: all methods are thread-safe.
#ifndef RUNNEL_FRAMEWORK_RESOURCE_MGR_H_
#define RUNNEL_FRAMEWORK_RESOURCE_MGR_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runnel/base/refcount.h"
#include "runnel/base/status.h"

namespace runnel {

class ResourceBase : public RefCounted {
 public:
  virtual std::string DebugString() const = 0;
  virtual int64_t MemoryUsed() const { return 0; }
};

class ResourceMgr {
 public:
  explicit ResourceMgr(std::string default_container = "localhost");
  ~ResourceMgr();  // Unrefs every resource.

  const std::string& default_container() const { return default_container_; }

  // Takes ownership of one reference to `resource`. AlreadyExists (and the
  // reference is dropped) if the name is taken for this type.
  template <typename T>
  Status Create(const std::string& container, const std::string& name,
                T* resource) {
    return DoCreate(container, std::type_index(typeid(T)), name, resource);
  }
  // On success `*resource` holds a new reference the caller must Unref.
  template <typename T>
  Status Lookup(const std::string& container, const std::string& name,
                T** resource) const {
    ResourceBase* r = nullptr;
    RETURN_IF_ERROR(DoLookup(container, std::type_index(typeid(T)), name, &r));
    *resource = static_cast<T*>(r);
    return absl::OkStatus();
  }
  // Looks up, or creates with `creator` (which returns a new T with one
  // reference). Atomic: two racing callers get the same resource.
  template <typename T>
  Status LookupOrCreate(const std::string& container, const std::string& name,
                        T** resource, std::function<Status(T**)> creator) {
    absl::MutexLock l(&create_mu_);
    Status s = Lookup(container, name, resource);
    if (s.ok() || !absl::IsNotFound(s)) return s;
    T* r = nullptr;
    RETURN_IF_ERROR(creator(&r));
    r->Ref();  // One for the manager, one for the caller.
    RETURN_IF_ERROR(Create(container, name, r));
    *resource = r;
    return absl::OkStatus();
  }
  template <typename T>
  Status Delete(const std::string& container, const std::string& name) {
    return DoDelete(container, std::type_index(typeid(T)), name);
  }
  // Deletes the resource named `name` whose C++ type T has
  // typeid(T).hash_code() == `type_hash` (what a ResourceHandle carries),
  // for ops that destroy a resource of any type. NotFound if there is none.
  Status DeleteByTypeHash(const std::string& container, uint64_t type_hash,
                          const std::string& name);
  // Drops every resource in `container`. OK if it does not exist.
  Status Cleanup(const std::string& container);
  std::string DebugString() const;

 private:
  using Key = std::pair<std::type_index, std::string>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::type_index>()(k.first) ^
             std::hash<std::string>()(k.second);
    }
  };
  using Container = absl::flat_hash_map<Key, ResourceBase*, KeyHash>;

  Status DoCreate(const std::string& container, std::type_index type,
                  const std::string& name, ResourceBase* r);
  Status DoLookup(const std::string& container, std::type_index type,
                  const std::string& name, ResourceBase** r) const;
  Status DoDelete(const std::string& container, std::type_index type,
                  const std::string& name);

  const std::string default_container_;
  mutable absl::Mutex mu_;
  absl::Mutex create_mu_;
  absl::flat_hash_map<std::string, Container> containers_ ABSL_GUARDED_BY(mu_);
};

// The resources of one step (TensorArrays, stacks), made on first use:
// most steps have none, and a ResourceMgr costs more than the rest of a
// one-node step's setup. Thread-safe.
class StepResources {
 public:
  StepResources() = default;
  // Uses `external` instead (tests that run kernels outside a step).
  explicit StepResources(ResourceMgr* external) : external_(external) {}
  StepResources(const StepResources&) = delete;
  StepResources& operator=(const StepResources&) = delete;

  ResourceMgr* Get() {
    if (external_ != nullptr) return external_;
    absl::call_once(once_, [this] { mgr_.emplace(); });
    return &*mgr_;
  }

 private:
  ResourceMgr* external_ = nullptr;
  absl::once_flag once_;
  std::optional<ResourceMgr> mgr_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_RESOURCE_MGR_H_
