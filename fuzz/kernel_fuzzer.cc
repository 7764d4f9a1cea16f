// Every registered op, driven by the op registry: the bytes pick an op (any
// op registered with REGISTER_OP except those that do I/O, so a new op is
// fuzzed without being listed here), attrs from its OpDef (allowed dtypes
// mostly, extreme ints, NaN/Inf floats, odd shapes, long lists), and one
// input tensor per input slot (rank 0-6, zero-size and huge-but-empty dims,
// NaN/Inf/INT_MIN/out-of-range values). The node runs in a session on
// Const inputs under a step timeout; reference inputs come from an
// initialised VariableV2, resource inputs from a TensorArrayV3, StackV2 or
// FIFOQueueV2 for those ops' families and an initialised VarHandleOp for
// the rest (sometimes the wrong kind, to check the kernels' type checks).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "proto/graph.pb.h"
#include "proto/op_def.pb.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/op.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/types.h"

namespace runnel::fuzz {
namespace {

// Input tensors hold at most this many elements; a shape that would have
// more gets a zero dimension instead (so huge dims still appear).
constexpr int64_t kMaxElements = 1024;

const std::vector<const OpDef*>& FuzzableOps() {
  static const auto* ops = [] {
    auto* v = new std::vector<const OpDef*>;
    for (const std::string& name : OpRegistry::Global()->ListOps()) {
      if (IsIoOp(name)) continue;
      v->push_back(&OpRegistry::Global()->LookUp(name)->op_def);
    }
    return v;
  }();
  return *ops;
}

// ---------------------------------------------------------------------------
// Scalars

int64_t FuzzInt(FuzzInput& in) {
  static const int64_t kSpecial[] = {
      0,
      1,
      -1,
      2,
      -2,
      3,
      64,
      1000,
      int64_t{1} << 20,
      std::numeric_limits<int32_t>::max(),
      std::numeric_limits<int32_t>::min(),
      int64_t{1} << 31,
      int64_t{1} << 32,
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min(),
  };
  const uint8_t b = in.Byte();
  if (b < 128) return b % 8;
  if (b < 224) return kSpecial[b % std::size(kSpecial)];
  return in.Pod<int64_t>();
}

float FuzzFloat(FuzzInput& in) {
  static const float kSpecial[] = {
      0.0f,
      -0.0f,
      1.0f,
      -1.0f,
      0.5f,
      2.0f,
      std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::max(),
      std::numeric_limits<float>::lowest(),
      std::numeric_limits<float>::denorm_min(),
      1e30f,
      -1e-30f,
  };
  const uint8_t b = in.Byte();
  if (b < 200) return kSpecial[b % std::size(kSpecial)];
  return in.Pod<float>();
}

// ---------------------------------------------------------------------------
// Tensors

TensorShape FuzzShape(FuzzInput& in, const TensorShape* previous) {
  // Half of the time the previous input's shape, so element-wise ops and
  // their friends see matching operands.
  if (previous != nullptr && in.Bool()) return *previous;
  const int rank = static_cast<int>(in.Range(0, 7)) % 7;  // 0-6, 0 likelier.
  TensorShape shape;
  // The product of the non-zero dims stays below 2^62, so that
  // TensorShape::num_elements (which a valid TensorShape never overflows)
  // is defined whatever order the dims come in.
  int64_t nonzero_product = 1;
  for (int i = 0; i < rank; ++i) {
    const uint8_t b = in.Byte();
    int64_t d =
        b < 240 ? b % 5 : (b < 248 ? int64_t{1} << 20 : int64_t{1} << 40);
    if (d > 0 && nonzero_product > (int64_t{1} << 62) / d) d = 1;
    if (d > 0) nonzero_product *= d;
    shape.AddDim(d);
  }
  // Too many elements: a zero dim instead (the huge dims stay).
  if (shape.num_elements() > kMaxElements) {
    shape.set_dim(static_cast<int>(in.Range(0, rank - 1)), 0);
  }
  return shape;
}

template <typename T>
T FuzzIntElement(FuzzInput& in) {
  const uint8_t b = in.Byte();
  if (b < 160) return static_cast<T>(b % 6);
  if (b < 192) return static_cast<T>(-1);
  if (b < 208) return std::numeric_limits<T>::min();
  if (b < 224) return std::numeric_limits<T>::max();
  return in.Pod<T>();
}

void FillTensor(FuzzInput& in, Tensor* t) {
  const int64_t n = t->NumElements();
  switch (t->dtype()) {
    case DT_FLOAT:
      for (int64_t i = 0; i < n; ++i) t->flat<float>()[i] = FuzzFloat(in);
      return;
    case DT_DOUBLE:
      for (int64_t i = 0; i < n; ++i) t->flat<double>()[i] = FuzzFloat(in);
      return;
    case DT_INT32:
      for (int64_t i = 0; i < n; ++i) {
        t->flat<int32_t>()[i] = FuzzIntElement<int32_t>(in);
      }
      return;
    case DT_INT64:
      for (int64_t i = 0; i < n; ++i) {
        t->flat<int64_t>()[i] = FuzzIntElement<int64_t>(in);
      }
      return;
    case DT_BOOL:
      for (int64_t i = 0; i < n; ++i) t->flat<bool>()[i] = in.Bool();
      return;
    case DT_STRING:
      for (int64_t i = 0; i < n; ++i) {
        t->flat<tstring>()[i] = in.ShortString(8);
      }
      return;
    default: {
      // Any other POD dtype: its raw bytes (halves, complex, small ints).
      auto* bytes = static_cast<unsigned char*>(t->raw_data());
      for (size_t i = 0; bytes != nullptr && i < t->TotalBytes(); ++i) {
        bytes[i] = in.Byte();
      }
      return;
    }
  }
}

bool CanMakeConst(DataType dt) { return dt == DT_STRING || DataTypeIsPod(dt); }

StatusOr<Tensor> FuzzTensor(FuzzInput& in, DataType dt,
                            const TensorShape* previous) {
  if (!CanMakeConst(dt)) {
    return errors::InvalidArgument("no Const of this dtype");
  }
  ASSIGN_OR_RETURN(Tensor t, Zeros(dt, FuzzShape(in, previous)));
  FillTensor(in, &t);
  return t;
}

// ---------------------------------------------------------------------------
// Attrs

std::vector<DataType> AllowedTypes(const OpDef::AttrDef& def) {
  std::vector<DataType> allowed;
  for (int t : def.allowed_values().list().type()) {
    allowed.push_back(static_cast<DataType>(t));
  }
  if (allowed.empty()) allowed = AllTypes();
  return allowed;
}

DataType FuzzType(FuzzInput& in, const OpDef::AttrDef& def) {
  // Mostly an allowed dtype; now and then any dtype, to hit the checks.
  if (in.Byte() < 240) return in.Pick(AllowedTypes(def));
  return in.Pick(AllTypes());
}

int64_t ListLength(FuzzInput& in, const OpDef::AttrDef& def) {
  const uint8_t b = in.Byte();
  int64_t len = b < 250 ? b % 5 : (b < 254 ? 100 : 10000);
  if (def.has_minimum()) len = std::max(len, def.minimum());
  return len;
}

PartialTensorShape FuzzPartialShape(FuzzInput& in) {
  const uint8_t b = in.Byte();
  if (b < 16) return PartialTensorShape::UnknownRank();
  PartialTensorShape s = PartialTensorShape::UnknownDims(0);
  const int rank = b % 5;
  for (int i = 0; i < rank; ++i) {
    const uint8_t d = in.Byte();
    s.AddDim(d < 200 ? d % 5 : (d < 240 ? -1 : int64_t{1} << 40));
  }
  return s;
}

// Attr names used as number_attr by some input (their value is a count of
// inputs: kept small so the node can be built).
bool IsCountAttr(const OpDef& op, const std::string& name) {
  for (const auto& arg : op.input_arg()) {
    if (arg.number_attr() == name) return true;
  }
  return false;
}

AttrValue FuzzAttr(FuzzInput& in, const OpDef& op, const OpDef::AttrDef& def) {
  const std::string& type = def.type();
  if (type == "type") return MakeAttrValue(FuzzType(in, def));
  if (type == "int") {
    int64_t v = IsCountAttr(op, def.name())
                    ? static_cast<int64_t>(in.Range(0, 4))
                    : FuzzInt(in);
    if (IsCountAttr(op, def.name()) && in.Byte() >= 252) v = FuzzInt(in);
    if (def.has_minimum() && v < def.minimum() && in.Byte() < 240) {
      v = def.minimum();
    }
    return MakeAttrValue(v);
  }
  if (type == "float") return MakeAttrValue(FuzzFloat(in));
  if (type == "bool") return MakeAttrValue(in.Bool());
  if (type == "string") {
    const auto& allowed = def.allowed_values().list().s();
    if (!allowed.empty() && in.Byte() < 240) {
      return MakeAttrValue(allowed[in.Range(0, allowed.size() - 1)]);
    }
    return MakeAttrValue(in.ShortString(8));
  }
  if (type == "shape") return MakeAttrValue(FuzzPartialShape(in));
  if (type == "tensor") {
    StatusOr<Tensor> t = FuzzTensor(in, in.Pick(AllTypes()), nullptr);
    return t.ok() ? MakeAttrValue(*t) : AttrValue();
  }
  AttrValue v;
  const int64_t len = ListLength(in, def);
  AttrValue::ListValue* list = v.mutable_list();
  for (int64_t i = 0; i < len; ++i) {
    if (type == "list(type)") {
      list->add_type(FuzzType(in, def));
    } else if (type == "list(int)") {
      list->add_i(FuzzInt(in));
    } else if (type == "list(float)") {
      list->add_f(FuzzFloat(in));
    } else if (type == "list(bool)") {
      list->add_b(in.Bool());
    } else if (type == "list(string)") {
      list->add_s(in.ShortString(8));
    } else if (type == "list(shape)") {
      FuzzPartialShape(in).AsProto(list->add_shape());
    } else {
      break;  // list(tensor), func: left empty.
    }
  }
  return v;
}

// ---------------------------------------------------------------------------
// The graph

struct Built {
  GraphDef graph;
  std::vector<std::string> init_targets;
  std::vector<std::string> fetches;
};

// The dtype a resource input's variable holds: the op's "dtype" or "T"
// attr if it has one, else float.
DataType ResourceValueType(const AttrMap& attrs) {
  for (const char* name : {"dtype", "T"}) {
    auto it = attrs.find(name);
    if (it != attrs.end() && it->second.value_case() == AttrValue::kType &&
        CanMakeConst(it->second.type())) {
      return it->second.type();
    }
  }
  return DT_FLOAT;
}

// Adds a resource of the kind `op` works on (a TensorArray, stack or queue
// for their ops; a resource variable, initialised, for the rest) and
// returns its handle. Now and then the kind is wrong on purpose.
std::string AddResource(FuzzInput& in, const std::string& name,
                        const std::string& op, const Tensor& value, Built* b) {
  const uint8_t pick = in.Byte();
  std::string kind = "Var";
  for (const char* prefix : {"TensorArray", "Stack", "Queue"}) {
    if (op.rfind(prefix, 0) == 0) kind = prefix;
  }
  if (pick >= 240)
    kind = in.Pick(
        std::vector<std::string>{"Var", "TensorArray", "Stack", "Queue"});
  const DataType dt = value.dtype();
  if (kind == "TensorArray" || kind == "Stack") {
    const std::string size = name + "/size";
    AddConst(&b->graph, size,
             Tensor::Scalar<int32_t>(static_cast<int32_t>(in.Range(0, 4)) -
                                     (kind == "Stack" ? 1 : 0)));
    NodeDef* n = AddNode(&b->graph, name,
                         kind == "Stack" ? "StackV2" : "TensorArrayV3", {size});
    (*n->mutable_attr())[kind == "Stack" ? "elem_type" : "dtype"].set_type(dt);
    if (kind == "TensorArray") {
      (*n->mutable_attr())["dynamic_size"] = MakeAttrValue(in.Bool());
    }
    return name;
  }
  if (kind == "Queue") {
    NodeDef* n = AddNode(&b->graph, name, "FIFOQueueV2");
    (*n->mutable_attr())["component_types"].mutable_list()->add_type(dt);
    return name;
  }
  const std::string init_value = name + "/value";
  AddConst(&b->graph, init_value, value);
  NodeDef* var = AddNode(&b->graph, name, "VarHandleOp");
  (*var->mutable_attr())["dtype"].set_type(dt);
  (*var->mutable_attr())["shape"] = MakeAttrValue(value.shape());
  NodeDef* init = AddNode(&b->graph, name + "/init", "AssignVariableOp",
                          {name, init_value});
  (*init->mutable_attr())["dtype"].set_type(dt);
  b->init_targets.push_back(init->name());
  return name;
}

// Adds the producer of input `i` of `op` with dtype `dt` (a reference when
// `is_ref`) and returns its name. `previous` is the shape of the input
// before (none for the first).
std::string AddInput(FuzzInput& in, int i, const std::string& op, DataType dt,
                     bool is_ref, const AttrMap& attrs,
                     std::optional<TensorShape>* previous, Built* b) {
  const std::string name = absl::StrCat("in", i);
  const DataType value_type = dt == DT_RESOURCE ? ResourceValueType(attrs) : dt;
  StatusOr<Tensor> value =
      FuzzTensor(in, value_type, previous->has_value() ? &**previous : nullptr);
  if (!value.ok()) value = Tensor::Scalar<float>(0);
  *previous = value->shape();
  if (dt == DT_RESOURCE) return AddResource(in, name, op, *value, b);
  if (!is_ref) {
    AddConst(&b->graph, name, *value);
    return name;
  }
  // A reference: an initialised VariableV2.
  const std::string init_value = name + "/value";
  AddConst(&b->graph, init_value, *value);
  NodeDef* var = AddNode(&b->graph, name, "VariableV2");
  (*var->mutable_attr())["dtype"].set_type(value->dtype());
  (*var->mutable_attr())["shape"] = MakeAttrValue(value->shape());
  NodeDef* init =
      AddNode(&b->graph, name + "/init", "Assign", {name, init_value});
  (*init->mutable_attr())["T"].set_type(value->dtype());
  b->init_targets.push_back(init->name());
  return name;
}

bool BuildGraph(FuzzInput& in, Built* b) {
  const OpDef& op = *in.Pick(FuzzableOps());
  AttrMap attrs;
  for (const auto& def : op.attr()) {
    if (def.has_default_value() && in.Bool()) continue;  // Default.
    AttrValue v = FuzzAttr(in, op, def);
    if (v.value_case() != AttrValue::VALUE_NOT_SET) attrs[def.name()] = v;
  }
  AttrMap with_defaults = attrs;
  AddDefaultsToAttrs(op, &with_defaults);
  DataTypeVector in_types, out_types;
  if (!InOutTypesForNode(op, with_defaults, &in_types, &out_types).ok()) {
    return false;
  }
  if (in_types.size() > 16) return false;

  std::vector<std::string> inputs;
  std::optional<TensorShape> previous;
  for (size_t i = 0; i < in_types.size(); ++i) {
    const bool is_ref = IsRefType(in_types[i]);
    inputs.push_back(AddInput(in, static_cast<int>(i), op.name(),
                              BaseType(in_types[i]), is_ref, with_defaults,
                              &previous, b));
  }
  NodeDef* node = AddNode(&b->graph, "op", op.name(), inputs);
  for (const auto& [name, value] : attrs) (*node->mutable_attr())[name] = value;
  for (size_t i = 0; i < out_types.size() && i < 8; ++i) {
    b->fetches.push_back(absl::StrCat("op:", i));
  }
  return true;
}

void FuzzKernel(FuzzInput& in) {
  Built b;
  if (!BuildGraph(in, &b)) return;
  if (Verbose()) {
    std::fprintf(
        stderr, "%s\n",
        b.graph.node(b.graph.node_size() - 1).ShortDebugString().c_str());
  }
  RunGraphOptions options;
  options.timeout_ms = 200;
  options.feed_placeholders = false;
  options.fetches = b.fetches;
  if (b.fetches.empty()) options.targets = {"op"};
  if (!b.init_targets.empty()) options.init_runs = {b.init_targets};
  RunGraphOnce(b.graph, options).IgnoreError();
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzKernel(in);
  return 0;
}
