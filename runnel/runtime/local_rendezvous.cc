#include "runnel/runtime/local_rendezvous.h"

#include <vector>

namespace runnel {

LocalRendezvous::~LocalRendezvous() {
  StartAbort(errors::Aborted("the step's rendezvous was destroyed"));
}

Status LocalRendezvous::Send(const ParsedKey& key, const Args& args,
                             const Tensor& value, bool is_dead) {
  mu_.Lock();
  if (!status_.ok()) {
    Status s = status_;
    mu_.Unlock();
    return s;
  }
  Queue& q = table_[key.hash];
  if (q.items.empty() || q.holds_sends) {
    q.holds_sends = true;
    Item item;
    item.value = value;
    item.is_dead = is_dead;
    item.send_args = args;
    q.items.push_back(std::move(item));
    mu_.Unlock();
    return absl::OkStatus();
  }
  Item waiter = std::move(q.items.front());
  q.items.erase(q.items.begin());
  if (q.items.empty()) table_.erase(key.hash);
  mu_.Unlock();
  waiter.recv_done(absl::OkStatus(), args, waiter.recv_args, value, is_dead);
  return absl::OkStatus();
}

void LocalRendezvous::RecvAsync(const ParsedKey& key, const Args& args,
                                DoneCallback done) {
  mu_.Lock();
  if (!status_.ok()) {
    Status s = status_;
    mu_.Unlock();
    done(s, Args(), args, Tensor(), false);
    return;
  }
  Queue& q = table_[key.hash];
  if (q.items.empty() || !q.holds_sends) {
    q.holds_sends = false;
    Item item;
    item.recv_done = std::move(done);
    item.recv_args = args;
    q.items.push_back(std::move(item));
    mu_.Unlock();
    return;
  }
  Item sent = std::move(q.items.front());
  q.items.erase(q.items.begin());
  if (q.items.empty()) table_.erase(key.hash);
  mu_.Unlock();
  done(absl::OkStatus(), sent.send_args, args, sent.value, sent.is_dead);
}

void LocalRendezvous::StartAbort(const Status& status) {
  std::vector<Item> waiters;
  Status abort_status;
  {
    absl::MutexLock l(&mu_);
    if (status_.ok()) {
      status_ = status.ok() ? errors::Aborted("rendezvous aborted") : status;
    }
    abort_status = status_;
    for (auto& [_, q] : table_) {
      if (q.holds_sends) continue;
      for (Item& item : q.items) waiters.push_back(std::move(item));
    }
    table_.clear();
  }
  for (Item& w : waiters) {
    w.recv_done(abort_status, Args(), w.recv_args, Tensor(), false);
  }
}

int64_t LocalRendezvous::NumPendingSends() const {
  absl::MutexLock l(&mu_);
  int64_t n = 0;
  for (const auto& [_, q] : table_) {
    if (q.holds_sends) n += static_cast<int64_t>(q.items.size());
  }
  return n;
}

int64_t LocalRendezvous::NumPendingRecvs() const {
  absl::MutexLock l(&mu_);
  int64_t n = 0;
  for (const auto& [_, q] : table_) {
    if (!q.holds_sends) n += static_cast<int64_t>(q.items.size());
  }
  return n;
}

}  // namespace runnel
