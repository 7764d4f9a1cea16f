#include "tools/tensor_output.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/base/json.h"

namespace runnel {
namespace {

std::string JsonValue(const Tensor& t, int64_t i) {
  if (t.dtype() == DT_STRING) return JsonString(t.flat<tstring>()[i]);
  std::string v = t.ElementString(i);
  if (v == "nan" || v == "-nan") return "\"NaN\"";
  if (v == "inf") return "\"Infinity\"";
  if (v == "-inf") return "\"-Infinity\"";
  return v;
}

}  // namespace

std::string JsonTensor(const Tensor& t) {
  std::vector<std::string> values;
  for (int64_t i = 0; i < t.NumElements(); ++i)
    values.push_back(JsonValue(t, i));
  return absl::StrCat("{\"dtype\": \"", DataTypeString(t.dtype()),
                      "\", \"shape\": [",
                      absl::StrJoin(t.shape().dim_sizes(), ", "),
                      "], \"values\": [", absl::StrJoin(values, ", "), "]}");
}

std::string TensorLine(const std::string& name, const Tensor& t) {
  return absl::StrCat(name, " (", DataTypeString(t.dtype()), " ",
                      t.shape().DebugString(), "): ", t.SummarizeValue(1000));
}

}  // namespace runnel
