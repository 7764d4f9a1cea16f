// ParseExample and ParseSingleExample on fuzzed serialized tf.Examples,
// through a session graph with a fixed set of features: sparse float,
// int64 and string; dense float [2] with a default, int64 [] required,
// string [] with a default, and variable-length float [-1].
//
// Input: byte 0: bits 0-1 = number of examples - 1, bit 2 = feed example
// names. Then each example but the last as a 2-byte little-endian length
// and its bytes; the last example is the rest. ParseSingleExample gets the
// first one.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "proto/graph.pb.h"
#include "runnel/base/logging.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/tensor.h"
#include "runnel/runtime/session.h"

namespace runnel::fuzz {
namespace {

struct Dense {
  const char* key;
  DataType dtype;
  PartialTensorShape shape;
  Tensor default_value;
};

const std::vector<std::pair<std::string, DataType>>& SparseFeatures() {
  static const auto* v = new std::vector<std::pair<std::string, DataType>>{
      {"sf", DT_FLOAT}, {"si", DT_INT64}, {"ss", DT_STRING}};
  return *v;
}

const std::vector<Dense>& DenseFeatures() {
  static const auto* v = new std::vector<Dense>{
      {"df", DT_FLOAT, PartialTensorShape({2}),
       Tensor::FromVector<float>({1.5f, -1.0f})},
      {"di", DT_INT64, PartialTensorShape({}),
       Tensor(DT_INT64, TensorShape({0}))},
      {"ds", DT_STRING, PartialTensorShape({}), Tensor::Scalar<tstring>("x")},
      {"dv", DT_FLOAT, PartialTensorShape({-1}), Tensor::Scalar<float>(-1)},
  };
  return *v;
}

void SetTypeAttrs(NodeDef* n) {
  std::vector<DataType> sparse_types, dense_types;
  std::vector<PartialTensorShape> dense_shapes;
  for (const auto& [key, dtype] : SparseFeatures()) {
    sparse_types.push_back(dtype);
  }
  for (const Dense& d : DenseFeatures()) {
    dense_types.push_back(d.dtype);
    dense_shapes.push_back(d.shape);
  }
  auto& attrs = *n->mutable_attr();
  attrs["sparse_types"] = MakeAttrValue(absl::MakeConstSpan(sparse_types));
  attrs["Tdense"] = MakeAttrValue(absl::MakeConstSpan(dense_types));
  attrs["dense_shapes"] = MakeAttrValue(absl::MakeConstSpan(dense_shapes));
}

// serialized (Placeholder [-1] string), names (Placeholder [-1] string),
// single (Placeholder [] string) -> "parse" (ParseExample) and "single_parse"
// (ParseSingleExample).
GraphDef ParseGraph() {
  GraphDef g;
  for (const char* name : {"serialized", "names", "single"}) {
    NodeDef* p = AddNode(&g, name, "Placeholder");
    (*p->mutable_attr())["dtype"].set_type(DT_STRING);
    PartialTensorShape shape = std::string(name) == "single"
                                   ? PartialTensorShape({})
                                   : PartialTensorShape({-1});
    (*p->mutable_attr())["shape"] = MakeAttrValue(shape);
  }
  std::vector<std::string> inputs = {"serialized", "names"};
  std::vector<std::string> single_inputs = {"single"};
  std::vector<std::string> sparse_keys, dense_keys;
  for (const auto& [key, dtype] : SparseFeatures()) {
    AddConst(&g, "sparse_key_" + key, Tensor::Scalar<tstring>(key));
    inputs.push_back("sparse_key_" + key);
    sparse_keys.push_back(key);
  }
  for (const Dense& d : DenseFeatures()) {
    AddConst(&g, absl::StrCat("dense_key_", d.key),
             Tensor::Scalar<tstring>(d.key));
    inputs.push_back(absl::StrCat("dense_key_", d.key));
    dense_keys.push_back(d.key);
  }
  for (const Dense& d : DenseFeatures()) {
    AddConst(&g, absl::StrCat("default_", d.key), d.default_value);
    inputs.push_back(absl::StrCat("default_", d.key));
    single_inputs.push_back(absl::StrCat("default_", d.key));
  }
  NodeDef* parse = AddNode(&g, "parse", "ParseExample", inputs);
  (*parse->mutable_attr())["Nsparse"] =
      MakeAttrValue(static_cast<int64_t>(sparse_keys.size()));
  (*parse->mutable_attr())["Ndense"] =
      MakeAttrValue(static_cast<int64_t>(dense_keys.size()));
  SetTypeAttrs(parse);
  NodeDef* single =
      AddNode(&g, "single_parse", "ParseSingleExample", single_inputs);
  (*single->mutable_attr())["num_sparse"] =
      MakeAttrValue(static_cast<int64_t>(sparse_keys.size()));
  (*single->mutable_attr())["sparse_keys"] =
      MakeAttrValue(absl::MakeConstSpan(sparse_keys));
  (*single->mutable_attr())["dense_keys"] =
      MakeAttrValue(absl::MakeConstSpan(dense_keys));
  SetTypeAttrs(single);
  return g;
}

// The session is made once: the parse ops keep no state between steps.
Session* ParseSession() {
  static Session* session = [] {
    auto s = NewSession();
    RUNNEL_CHECK(s.ok());
    Status created = (*s)->Create(ParseGraph());
    if (!created.ok()) {
      std::fprintf(stderr, "%s\n", created.ToString().c_str());
      RUNNEL_CHECK(created.ok());
    }
    return s->release();
  }();
  return session;
}

std::vector<std::string> Outputs(const std::string& node) {
  const size_t n = 3 * SparseFeatures().size() + DenseFeatures().size();
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(absl::StrCat(node, ":", i));
  return out;
}

void FuzzExamples(FuzzInput& in) {
  const uint8_t mode = in.Byte();
  const int n = 1 + (mode & 3);
  std::vector<std::string> examples;
  for (int i = 0; i + 1 < n; ++i) {
    examples.push_back(in.Bytes(in.Pod<uint16_t>()));
  }
  examples.push_back(in.Rest());

  Tensor serialized(DT_STRING, TensorShape({n}));
  Tensor names(DT_STRING, TensorShape({(mode & 4) ? n : 0}));
  for (int i = 0; i < n; ++i) {
    serialized.flat<tstring>()[i] = examples[i];
    if (mode & 4) names.flat<tstring>()[i] = absl::StrCat("ex", i);
  }
  RunOptions options;
  options.set_timeout_in_ms(1000);
  std::vector<Tensor> out;
  Session* session = ParseSession();
  session
      ->Run(options, {{"serialized:0", serialized}, {"names:0", names}},
            Outputs("parse"), {}, &out, nullptr)
      .IgnoreError();
  for (const Tensor& t : out) (void)t.DebugString();
  session
      ->Run(options, {{"single:0", Tensor::Scalar<tstring>(examples[0])}},
            Outputs("single_parse"), {}, &out, nullptr)
      .IgnoreError();
  for (const Tensor& t : out) (void)t.DebugString();
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzExamples(in);
  return 0;
}
