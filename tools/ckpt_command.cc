// `runnel ckpt`: reads a checkpoint with runnel/io/tensor_bundle.h's
// BundleReader, which verifies what it reads, so a damaged checkpoint is an
// error message (DataLoss, naming the file or tensor) and exit status 1.
//
//   runnel ckpt /ckpt/model.ckpt-10           # name  dtype  shape, sorted
//   runnel ckpt /ckpt/model.ckpt-10 dense/kernel [--json]   # its values
//
// PREFIX is the checkpoint's prefix (what Saver::Save returns); a path to
// its .index file is accepted too.
#include "tools/ckpt_command.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runnel/base/json.h"
#include "runnel/io/tensor_bundle.h"
#include "tools/tensor_output.h"

namespace runnel {
namespace {

int CkptUsage() {
  std::cerr << "usage: runnel ckpt PREFIX [TENSOR] [--json]\n";
  return 2;
}

int CkptFail(const Status& s) {
  std::cerr << "runnel: " << s << "\n";
  return 1;
}

struct Entry {
  std::string name;
  DataType dtype;
  TensorShape shape;
};

}  // namespace

int CkptCommand(const std::vector<std::string>& args) {
  std::string prefix, tensor;
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (!a.empty() && a[0] != '-' && prefix.empty()) {
      prefix = a;
    } else if (!a.empty() && a[0] != '-' && tensor.empty()) {
      tensor = a;
    } else {
      std::cerr << "runnel: unexpected argument '" << a << "'\n";
      return CkptUsage();
    }
  }
  if (prefix.empty()) return CkptUsage();
  if (absl::EndsWith(prefix, ".index")) {
    prefix.resize(prefix.size() - std::string(".index").size());
  }
  BundleReader reader(prefix);
  if (!reader.status().ok()) return CkptFail(reader.status());

  if (!tensor.empty()) {
    Tensor t;
    if (Status s = reader.Lookup(tensor, &t); !s.ok()) return CkptFail(s);
    if (json) {
      std::cout << "{" << JsonString(tensor) << ": " << JsonTensor(t) << "}\n";
    } else {
      std::cout << TensorLine(tensor, t) << "\n";
    }
    return 0;
  }

  std::vector<std::string> keys;
  if (Status s = reader.ListKeys(&keys); !s.ok()) return CkptFail(s);
  std::sort(keys.begin(), keys.end());
  std::vector<Entry> entries;
  for (const std::string& key : keys) {
    Entry e{key, DT_INVALID, TensorShape()};
    if (Status s = reader.LookupDtypeAndShape(key, &e.dtype, &e.shape);
        !s.ok()) {
      return CkptFail(s);
    }
    entries.push_back(std::move(e));
  }
  if (json) {
    std::vector<std::string> parts;
    for (const Entry& e : entries) {
      parts.push_back(
          absl::StrCat("{\"name\": ", JsonString(e.name), ", \"dtype\": \"",
                       DataTypeString(e.dtype), "\", \"shape\": [",
                       absl::StrJoin(e.shape.dim_sizes(), ", "), "]}"));
    }
    std::cout << "{\"prefix\": " << JsonString(prefix) << ", \"tensors\": ["
              << absl::StrJoin(parts, ", ") << "]}\n";
    return 0;
  }
  size_t width = 4;
  for (const Entry& e : entries) width = std::max(width, e.name.size());
  for (const Entry& e : entries) {
    std::cout << absl::StrFormat("%-*s  %-8s  %s\n", width, e.name,
                                 DataTypeString(e.dtype),
                                 e.shape.DebugString());
  }
  return 0;
}

}  // namespace runnel
