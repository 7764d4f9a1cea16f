#include "runnel/framework/resource_mgr.h"

namespace runnel {

ResourceMgr::ResourceMgr(std::string default_container)
    : default_container_(std::move(default_container)) {}

ResourceMgr::~ResourceMgr() {
  absl::MutexLock l(&mu_);
  for (auto& [_, c] : containers_) {
    for (auto& [__, r] : c) r->Unref();
  }
}

Status ResourceMgr::DoCreate(const std::string& container, std::type_index type,
                             const std::string& name, ResourceBase* r) {
  absl::MutexLock l(&mu_);
  auto& c = containers_[container];
  auto [it, inserted] = c.emplace(Key(type, name), r);
  if (!inserted) {
    r->Unref();
    return errors::AlreadyExists("resource ", container, "/", name,
                                 " already exists");
  }
  return absl::OkStatus();
}

Status ResourceMgr::DoLookup(const std::string& container, std::type_index type,
                             const std::string& name, ResourceBase** r) const {
  absl::MutexLock l(&mu_);
  auto cit = containers_.find(container);
  if (cit != containers_.end()) {
    auto it = cit->second.find(Key(type, name));
    if (it != cit->second.end()) {
      it->second->Ref();
      *r = it->second;
      return absl::OkStatus();
    }
  }
  return errors::NotFound("resource ", container, "/", name, " does not exist");
}

Status ResourceMgr::DoDelete(const std::string& container, std::type_index type,
                             const std::string& name) {
  ResourceBase* r = nullptr;
  {
    absl::MutexLock l(&mu_);
    auto cit = containers_.find(container);
    if (cit == containers_.end()) {
      return errors::NotFound("resource ", container, "/", name,
                              " does not exist");
    }
    auto it = cit->second.find(Key(type, name));
    if (it == cit->second.end()) {
      return errors::NotFound("resource ", container, "/", name,
                              " does not exist");
    }
    r = it->second;
    cit->second.erase(it);
  }
  r->Unref();
  return absl::OkStatus();
}

Status ResourceMgr::DeleteByTypeHash(const std::string& container,
                                     uint64_t type_hash,
                                     const std::string& name) {
  ResourceBase* r = nullptr;
  {
    absl::MutexLock l(&mu_);
    auto cit = containers_.find(container);
    if (cit != containers_.end()) {
      for (auto it = cit->second.begin(); it != cit->second.end(); ++it) {
        if (it->first.second == name &&
            static_cast<uint64_t>(it->first.first.hash_code()) == type_hash) {
          r = it->second;
          cit->second.erase(it);
          break;
        }
      }
    }
  }
  if (r == nullptr) {
    return errors::NotFound("resource ", container, "/", name,
                            " does not exist");
  }
  r->Unref();
  return absl::OkStatus();
}

Status ResourceMgr::Cleanup(const std::string& container) {
  Container c;
  {
    absl::MutexLock l(&mu_);
    auto it = containers_.find(container);
    if (it == containers_.end()) return absl::OkStatus();
    c = std::move(it->second);
    containers_.erase(it);
  }
  for (auto& [_, r] : c) r->Unref();
  return absl::OkStatus();
}

std::string ResourceMgr::DebugString() const {
  absl::MutexLock l(&mu_);
  std::string out;
  for (const auto& [cname, c] : containers_) {
    for (const auto& [key, r] : c) {
      absl::StrAppend(&out, cname, "/", key.second, ": ", r->DebugString(),
                      "\n");
    }
  }
  return out;
}

}  // namespace runnel
