#include "runnel/framework/rendezvous.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"

namespace runnel {

Rendezvous::ParsedKey& Rendezvous::ParsedKey::operator=(
    const ParsedKey& other) {
  if (this == &other) return *this;
  full_key = other.full_key;
  auto rebase = [&](absl::string_view v) {
    if (v.data() == nullptr) return absl::string_view();
    return absl::string_view(
        full_key.data() + (v.data() - other.full_key.data()), v.size());
  };
  src_device = rebase(other.src_device);
  dst_device = rebase(other.dst_device);
  edge_name = rebase(other.edge_name);
  src_incarnation = other.src_incarnation;
  frame_iter = other.frame_iter;
  src = other.src;
  dst = other.dst;
  hash = other.hash;
  return *this;
}

std::string Rendezvous::CreateKey(absl::string_view src_device,
                                  uint64_t src_incarnation,
                                  absl::string_view dst_device,
                                  absl::string_view name,
                                  const FrameAndIter& frame_iter) {
  return absl::StrCat(
      src_device, ";", absl::StrFormat("%016x", src_incarnation), ";",
      dst_device, ";", name, ";", frame_iter.frame_id, ":", frame_iter.iter_id);
}

Status Rendezvous::ParseKey(absl::string_view key, ParsedKey* out) {
  auto bad = [&](absl::string_view why) {
    return errors::InvalidArgument("malformed rendezvous key '", key,
                                   "': ", why);
  };
  out->full_key = std::string(key);
  const absl::string_view k = out->full_key;
  std::vector<absl::string_view> parts = absl::StrSplit(k, ';');
  if (parts.size() != 5) return bad("expected 5 ';'-separated parts");
  if (parts[1].size() != 16 ||
      !absl::SimpleHexAtoi(parts[1], &out->src_incarnation)) {
    return bad("the incarnation is not 16 hex digits");
  }
  auto src = DeviceName::Parse(parts[0]);
  auto dst = DeviceName::Parse(parts[2]);
  if (parts[0].empty() || !src.ok()) return bad("bad source device");
  if (parts[2].empty() || !dst.ok()) return bad("bad destination device");
  if (parts[3].empty()) return bad("empty tensor name");
  std::vector<absl::string_view> fi = absl::StrSplit(parts[4], ':');
  if (fi.size() != 2 || !absl::SimpleAtoi(fi[0], &out->frame_iter.frame_id) ||
      !absl::SimpleAtoi(fi[1], &out->frame_iter.iter_id)) {
    return bad("expected frame_id:iter_id at the end");
  }
  out->src_device = parts[0];
  out->dst_device = parts[2];
  out->edge_name = parts[3];
  out->src = *std::move(src);
  out->dst = *std::move(dst);
  // FNV-1a: the same in every process, so a remote rendezvous may use it.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : k) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  out->hash = h;
  return absl::OkStatus();
}

Status Rendezvous::Recv(const ParsedKey& key, const Args& args, Tensor* value,
                        bool* is_dead, int64_t timeout_ms) {
  struct Result {
    absl::Notification done;
    Status status;
    Tensor value;
    bool is_dead = false;
  };
  auto result = std::make_shared<Result>();
  RecvAsync(key, args,
            [result](const Status& s, const Args&, const Args&, const Tensor& v,
                     bool dead) {
              result->status = s;
              result->value = v;
              result->is_dead = dead;
              result->done.Notify();
            });
  if (timeout_ms > 0) {
    if (!result->done.WaitForNotificationWithTimeout(
            absl::Milliseconds(timeout_ms))) {
      return errors::DeadlineExceeded("timed out after ", timeout_ms,
                                      " ms waiting for '", key.full_key, "'");
    }
  } else {
    result->done.WaitForNotification();
  }
  RETURN_IF_ERROR(result->status);
  *value = std::move(result->value);
  *is_dead = result->is_dead;
  return absl::OkStatus();
}

}  // namespace runnel
