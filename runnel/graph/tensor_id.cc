#include "runnel/graph/tensor_id.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace runnel {

std::string TensorId::ToString() const {
  if (IsControl()) return absl::StrCat("^", node);
  return absl::StrCat(node, ":", index);
}

StatusOr<TensorId> ParseTensorName(absl::string_view name) {
  auto bad = [name](absl::string_view why) {
    return errors::InvalidArgument("malformed tensor name '", name, "': ", why);
  };
  TensorId id;
  if (absl::StartsWith(name, "^")) {
    const absl::string_view node = name.substr(1);
    if (node.empty()) return bad("empty node name");
    if (node.find(':') != absl::string_view::npos) {
      return bad("a control input names a node, not an output");
    }
    id.node = std::string(node);
    id.index = kControlSlot;
    return id;
  }
  const size_t colon = name.rfind(':');
  absl::string_view node = name.substr(0, colon);
  if (colon != absl::string_view::npos) {
    const absl::string_view digits = name.substr(colon + 1);
    if (digits.empty()) return bad("missing output index after ':'");
    int64_t k = 0;
    for (char c : digits) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
        return bad("output index must be a non-negative integer");
      }
      k = k * 10 + (c - '0');
      if (k > 0x7fffffff) return bad("output index too large");
    }
    id.index = static_cast<int>(k);
  }
  if (node.empty()) return bad("empty node name");
  id.node = std::string(node);
  return id;
}

}  // namespace runnel
