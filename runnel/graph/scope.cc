#include "runnel/graph/scope.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"

namespace runnel {
namespace {

constexpr char kColocationAttr[] = "_class";
constexpr char kColocationPrefix[] = "loc:@";

bool IsNumeric(DataType t) {
  return DataTypeIsFloating(t) || DataTypeIsInteger(t);
}

// The dtype that holds two literals of types `a` and `b` (int with float
// gives float), or DT_INVALID if they do not mix (bool, string).
DataType PromoteLiteralTypes(DataType a, DataType b) {
  if (a == b) return a;
  if (!IsNumeric(a) || !IsNumeric(b)) return DT_INVALID;
  if (DataTypeIsFloating(a) || DataTypeIsFloating(b)) {
    return a == DT_DOUBLE || b == DT_DOUBLE ? DT_DOUBLE : DT_FLOAT;
  }
  return DataTypeSize(a) == 8 || DataTypeSize(b) == 8 ? DT_INT64 : DT_INT32;
}

// Converts the values of `in` into `out` (already allocated). False if one
// does not convert exactly: a float into an integer type, or an integer out
// of the target's range.
template <typename S>
bool ConvertValues(absl::Span<const S> in, Tensor* out) {
  const DataType to = out->dtype();
  if (to == DT_HALF || to == DT_BFLOAT16 || to == DT_COMPLEX64 ||
      to == DT_COMPLEX128) {
    for (size_t i = 0; i < in.size(); ++i) {
      const double v = static_cast<double>(in[i]);
      if (to == DT_HALF)
        out->flat<half>()[i] = FloatToHalf(static_cast<float>(v));
      if (to == DT_BFLOAT16)
        out->flat<bfloat16>()[i] = FloatToBFloat16(static_cast<float>(v));
      if (to == DT_COMPLEX64)
        out->flat<complex64>()[i] = complex64(static_cast<float>(v));
      if (to == DT_COMPLEX128) out->flat<complex128>()[i] = complex128(v);
    }
    return true;
  }
  bool ok = true;
  const bool known = DispatchNumeric(to, [&]<typename U>() {
    U* dst = out->flat<U>().data();
    for (size_t i = 0; i < in.size() && ok; ++i) {
      if constexpr (std::is_integral_v<U> && std::is_floating_point_v<S>) {
        ok = false;
      } else if constexpr (std::is_integral_v<U>) {
        ok = std::in_range<U>(in[i]);
        dst[i] = static_cast<U>(in[i]);
      } else {
        dst[i] = static_cast<U>(in[i]);
      }
    }
  });
  return known && ok;
}

StatusOr<Tensor> ConvertLiteral(const Tensor& src, DataType to) {
  auto fail = [&]() {
    return errors::InvalidArgument(
        "cannot convert the ", DataTypeString(src.dtype()), " literal ",
        src.SummarizeValue(6), " to ", DataTypeString(to));
  };
  if (!IsNumeric(src.dtype()) || !(IsNumeric(to) || DataTypeIsComplex(to))) {
    return fail();
  }
  Tensor out(to, src.shape());
  bool ok = false;
  DispatchNumeric(src.dtype(), [&]<typename S>() {
    ok = ConvertValues<S>(absl::Span<const S>(src.flat<S>()), &out);
  });
  if (!ok) return fail();
  return out;
}

// Copies all elements of `src` (same dtype) into `dst` from element `offset`.
void CopyElements(const Tensor& src, Tensor* dst, int64_t offset) {
  DispatchAll(src.dtype(), [&]<typename T>() {
    absl::Span<T> in = src.flat<T>();
    std::copy(in.begin(), in.end(), dst->flat<T>().begin() + offset);
  });
}

// Prefixes `s` with "node 'name' (Op): " unless it already names the node.
Status NameNode(const Status& s, const std::string& name,
                const std::string& op) {
  if (s.ok() || absl::StrContains(s.message(), absl::StrCat("'", name, "'")))
    return s;
  return errors::Prefix(s, absl::StrCat("node '", name, "' (", op, "): "));
}

// InvalidArgument unless `n` is a node of `g` (not null, not another graph's).
Status CheckInGraph(const Graph* g, const Node* n, absl::string_view what) {
  if (n == nullptr) {
    return errors::InvalidArgument(what,
                                   " is a null Output/Operation (from an op "
                                   "that failed to build?)");
  }
  if (g->FindNodeId(n->id()) != n) {
    return errors::InvalidArgument(what, " '", n->name(),
                                   "' belongs to another graph");
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------
// Operation, Output

const std::string& Operation::name() const {
  static const std::string* const kEmpty = new std::string;
  return node_ ? node_->name() : *kEmpty;
}

Output Operation::input(int i) const {
  const Edge* e = nullptr;
  if (node_ == nullptr || !node_->input_edge(i, &e).ok()) return Output();
  return Output(e->src(), e->src_output());
}

std::vector<Output> Operation::output_list(absl::string_view arg) const {
  std::vector<Output> result;
  std::map<std::string, std::pair<int, int>> ranges;
  if (node_ == nullptr ||
      !NameRangesForNode(node_->op_def(), node_->attrs(), nullptr, &ranges)
           .ok()) {
    return result;
  }
  auto it = ranges.find(std::string(arg));
  if (it == ranges.end()) return result;
  for (int i = it->second.first; i < it->second.second; ++i)
    result.push_back(output(i));
  return result;
}

DataType Output::type() const {
  Node* n = node();
  return n != nullptr && index_ >= 0 && index_ < n->num_outputs()
             ? n->output_type(index_)
             : DT_INVALID;
}

std::string Output::name() const {
  return node() == nullptr ? "" : absl::StrCat(node()->name(), ":", index_);
}

// ---------------------------------------------------------------------------
// Input::Initializer

Input::Initializer::Initializer(const char* s)
    : tensor(Tensor::Scalar<tstring>(tstring(s))), is_literal(true) {}
Input::Initializer::Initializer(const std::string& s)
    : tensor(Tensor::Scalar<tstring>(s)), is_literal(true) {}

Input::Initializer::Initializer(const std::initializer_list<Initializer>& v) {
  is_literal = true;
  if (v.size() == 0) {
    tensor = Tensor(DT_FLOAT, TensorShape({0}));
    return;
  }
  const Initializer& first = *v.begin();
  for (const Initializer& e : v) {
    if (!e.status.ok()) {
      status = e.status;
      return;
    }
    if (e.tensor.shape() != first.tensor.shape()) {
      status = errors::InvalidArgument(
          "initializer list parts must all have the same shape; got ",
          first.tensor.shape().DebugString(), " and ",
          e.tensor.shape().DebugString());
      return;
    }
    is_literal = is_literal && e.is_literal;
  }
  DataType dtype = first.tensor.dtype();
  for (const Initializer& e : v) {
    DataType promoted = is_literal
                            ? PromoteLiteralTypes(dtype, e.tensor.dtype())
                            : (dtype == e.tensor.dtype() ? dtype : DT_INVALID);
    if (promoted == DT_INVALID) {
      status = errors::InvalidArgument(
          "initializer list mixes ", DataTypeString(dtype), " and ",
          DataTypeString(e.tensor.dtype()), " values");
      return;
    }
    dtype = promoted;
  }
  TensorShape shape = first.tensor.shape();
  shape.InsertDim(0, static_cast<int64_t>(v.size()));
  tensor = Tensor(dtype, shape);
  int64_t offset = 0;
  for (const Initializer& e : v) {
    StatusOr<Tensor> part = e.AsType(dtype);
    if (!part.ok()) {
      status = part.status();
      return;
    }
    CopyElements(*part, &tensor, offset);
    offset += part->NumElements();
  }
}

StatusOr<Tensor> Input::Initializer::AsType(DataType dtype) const {
  RETURN_IF_ERROR(status);
  if (tensor.dtype() == dtype) return tensor;
  if (!is_literal) {
    return errors::InvalidArgument("expected a ", DataTypeString(dtype),
                                   " tensor but got a ",
                                   DataTypeString(tensor.dtype()), " tensor");
  }
  return ConvertLiteral(tensor, dtype);
}

// ---------------------------------------------------------------------------
// Scope

Scope Scope::NewRootScope() {
  Scope s;
  s.shared_ = std::make_shared<Shared>();
  s.name_map_ = std::make_shared<NameMap>();
  return s;
}

std::string Scope::GetUniqueName(const std::string& prefix) const {
  auto it = name_map_->find(prefix);
  if (it == name_map_->end()) {
    name_map_->emplace(prefix, 0);
    return prefix;
  }
  std::string unique;
  do {
    unique = absl::StrCat(prefix, "_", ++it->second);
  } while (name_map_->contains(unique));
  name_map_->emplace(unique, 0);
  return unique;
}

std::string Scope::GetUniqueNameForOp(absl::string_view default_name) const {
  const std::string base =
      op_name_.empty() ? std::string(default_name) : op_name_;
  auto full = [&](const std::string& n) {
    return name_.empty() ? n : absl::StrCat(name_, "/", n);
  };
  std::string name = full(GetUniqueName(base));
  // Names made outside this scope (imports, exact-name helpers) count too.
  while (graph()->FindNode(name) != nullptr) name = full(GetUniqueName(base));
  return name;
}

Scope Scope::NonOwningCopy() const {
  Scope s = *this;
  // shared_ptr's aliasing constructor with an empty owner: points at the
  // same Shared without owning it.
  s.shared_ = std::shared_ptr<Shared>(std::shared_ptr<Shared>(), shared_.get());
  return s;
}

Scope Scope::NewSubScope(absl::string_view child_scope_name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (child_scope_name.empty()) return s;
  const std::string unique = GetUniqueName(std::string(child_scope_name));
  s.name_ = name_.empty() ? unique : absl::StrCat(name_, "/", unique);
  s.name_map_ = std::make_shared<NameMap>();
  return s;
}

Scope Scope::NewSubScopeExact(absl::string_view child_scope_name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (child_scope_name.empty()) return s;
  s.name_ = name_.empty() ? std::string(child_scope_name)
                          : absl::StrCat(name_, "/", child_scope_name);
  s.name_map_ = std::make_shared<NameMap>();
  return s;
}

Scope Scope::WithOpName(absl::string_view op_name) const {
  Scope s = *this;
  s.op_name_ = std::string(op_name);
  return s;
}

Scope Scope::WithControlDependencies(
    absl::Span<const Operation> control_deps) const {
  Scope s = *this;
  s.control_deps_.insert(s.control_deps_.end(), control_deps.begin(),
                         control_deps.end());
  return s;
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

Scope Scope::WithDevice(absl::string_view device) const {
  Scope s = *this;
  s.device_ = std::string(device);
  return s;
}

Scope Scope::WithDeviceFunction(DeviceFunction fn) const {
  Scope s = *this;
  s.device_fn_ = fn == nullptr
                     ? nullptr
                     : std::make_shared<const DeviceFunction>(std::move(fn));
  return s;
}

std::string Scope::DeviceFor(absl::string_view op, const AttrMap& attrs) const {
  if (device_fn_ == nullptr) return device_;
  return (*device_fn_)(op, attrs, device_);
}

Scope Scope::ColocateWith(const Operation& op) const {
  Scope s = *this;
  s.device_.clear();
  s.device_fn_ = nullptr;
  if (op.node() == nullptr) {
    UpdateStatus(errors::InvalidArgument("ColocateWith: a null Operation"));
    return s;
  }
  // Join the groups `op` is in, or the group named after it.
  std::vector<std::string> classes;
  bool joined = false;
  if (GetAttr(op.node()->attrs(), kColocationAttr, &classes).ok()) {
    for (const std::string& c : classes) {
      if (absl::StartsWith(c, kColocationPrefix)) {
        s.colocation_.insert(c.substr(strlen(kColocationPrefix)));
        joined = true;
      }
    }
  }
  if (!joined) s.colocation_.insert(op.name());
  return s;
}

Scope Scope::ClearColocation() const {
  Scope s = *this;
  s.colocation_.clear();
  return s;
}

std::vector<std::string> Scope::ColocationAttr() const {
  std::vector<std::string> v;
  for (const std::string& name : colocation_)
    v.push_back(kColocationPrefix + name);
  return v;
}

void Scope::UpdateStatus(const Status& s) const {
  if (shared_->status.ok() && !s.ok()) shared_->status = s;
}

void Scope::ClearStatus() const { shared_->status = absl::OkStatus(); }

Status Scope::ToGraphDef(GraphDef* gdef) const {
  RETURN_IF_ERROR(status());
  ::runnel::ToGraphDef(*graph(), gdef);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Adding nodes

Status AddNodeToScope(const Scope& scope, const std::string& name,
                      const std::string& op, AttrMap attrs,
                      absl::Span<const Output> inputs,
                      absl::Span<const Operation> control_inputs,
                      Operation* result) {
  RETURN_IF_ERROR(scope.status());
  if (!IsValidNodeName(name, /*allow_internal=*/false)) {
    return errors::InvalidArgument("invalid node name '", name, "' for a ", op,
                                   " node");
  }
  std::vector<std::string> colocation = scope.ColocationAttr();
  if (!colocation.empty()) attrs[kColocationAttr] = MakeAttrValue(colocation);
  Graph* g = scope.graph();
  std::string device = scope.DeviceFor(op, attrs);
  ASSIGN_OR_RETURN(Node * n,
                   g->AddNode(name, op, std::move(attrs), std::move(device)));
  auto connect = [&]() -> Status {
    if (static_cast<int>(inputs.size()) != n->num_inputs()) {
      return errors::InvalidArgument("node '", name, "' (", op, ") has ",
                                     n->num_inputs(), " inputs but ",
                                     inputs.size(), " were given");
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      RETURN_IF_ERROR(
          CheckInGraph(g, inputs[i].node(), absl::StrCat("input ", i)));
      RETURN_IF_ERROR(g->AddEdge(inputs[i].node(), inputs[i].index(), n,
                                 static_cast<int>(i))
                          .status());
    }
    for (auto deps :
         {absl::MakeConstSpan(scope.control_deps()), control_inputs}) {
      for (const Operation& c : deps) {
        RETURN_IF_ERROR(CheckInGraph(g, c.node(), "control input"));
        g->AddControlEdge(c.node(), n);
      }
    }
    return scope.refiner()->AddNode(n);
  };
  if (Status s = connect(); !s.ok()) {
    g->RemoveNode(n);
    return NameNode(s, name, op);
  }
  *result = Operation(n);
  return absl::OkStatus();
}

NodeBuilder::NodeBuilder(const Scope& scope, absl::string_view default_name,
                         absl::string_view op)
    : scope_(scope), op_(op) {
  if (scope.ok()) name_ = scope.GetUniqueNameForOp(default_name);
}

NodeBuilder& NodeBuilder::Input(const ::runnel::Input& input) {
  args_.push_back({{input}, false});
  return *this;
}

NodeBuilder& NodeBuilder::Input(const InputList& inputs) {
  args_.push_back({{inputs.begin(), inputs.end()}, true});
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(const Operation& op) {
  control_inputs_.push_back(op);
  return *this;
}

NodeBuilder& NodeBuilder::Attr(absl::string_view name, AttrValue value) {
  attrs_[std::string(name)] = std::move(value);
  return *this;
}

NodeBuilder& NodeBuilder::Attrs(const AttrMap& attrs) {
  for (const auto& [name, value] : attrs) attrs_[name] = value;
  return *this;
}

Status NodeBuilder::Where(const Status& s) const {
  return NameNode(s, name_, op_);
}

Status NodeBuilder::CheckArgs(const OpDef& def) const {
  if (static_cast<int>(args_.size()) != def.input_arg_size()) {
    return errors::InvalidArgument("the op has ", def.input_arg_size(),
                                   " input args but ", args_.size(),
                                   " were given");
  }
  for (int k = 0; k < def.input_arg_size(); ++k) {
    const OpDef::ArgDef& a = def.input_arg(k);
    const bool list = !a.number_attr().empty() || !a.type_list_attr().empty();
    if (list != args_[k].is_list) {
      return errors::InvalidArgument("input '", a.name(), "' ",
                                     list ? "is a list: pass an InputList"
                                          : "takes one tensor, not a list");
    }
    for (const ::runnel::Input& in : args_[k].inputs) {
      if (!in.status().ok()) {
        return errors::Prefix(in.status(),
                              absl::StrCat("input '", a.name(), "': "));
      }
      if (!in.is_constant() && in.node() == nullptr) {
        return errors::InvalidArgument(
            "input '", a.name(),
            "' is a null Output (from an op that failed to "
            "build?)");
      }
    }
  }
  return absl::OkStatus();
}

void NodeBuilder::InferAttrsFromOutputs(const OpDef& def) {
  for (int k = 0; k < def.input_arg_size(); ++k) {
    const OpDef::ArgDef& a = def.input_arg(k);
    if (!a.number_attr().empty() && !attrs_.contains(a.number_attr())) {
      attrs_[a.number_attr()] =
          MakeAttrValue(static_cast<int64_t>(args_[k].inputs.size()));
    }
    if (a.type_attr().empty() || attrs_.contains(a.type_attr())) continue;
    for (const ::runnel::Input& in : args_[k].inputs) {
      if (in.is_constant() && in.initializer().is_literal) continue;
      DataType dt = in.is_constant() ? in.initializer().tensor.dtype()
                                     : BaseType(in.output().type());
      attrs_[a.type_attr()] = MakeAttrValue(dt);
      break;
    }
  }
  // A type attr only literals feed takes their common dtype.
  for (int k = 0; k < def.input_arg_size(); ++k) {
    const std::string& attr = def.input_arg(k).type_attr();
    if (attr.empty() || attrs_.contains(attr)) continue;
    DataType common = DT_INVALID;
    for (int j = k; j < def.input_arg_size(); ++j) {
      if (def.input_arg(j).type_attr() != attr) continue;
      for (const ::runnel::Input& in : args_[j].inputs) {
        DataType dt = in.initializer().tensor.dtype();
        DataType promoted =
            common == DT_INVALID ? dt : PromoteLiteralTypes(common, dt);
        common = promoted == DT_INVALID ? common : promoted;
      }
    }
    if (common != DT_INVALID) attrs_[attr] = MakeAttrValue(common);
  }
}

Status NodeBuilder::MaterializeConstants(const OpDef& def,
                                         std::vector<Node*>* consts,
                                         Endpoints* ends) {
  ends->resize(def.input_arg_size());
  for (int k = 0; k < def.input_arg_size(); ++k) {
    const OpDef::ArgDef& a = def.input_arg(k);
    const Arg& arg = args_[k];
    std::vector<DataType> list_types;
    if (!a.type_list_attr().empty() && attrs_.contains(a.type_list_attr())) {
      RETURN_IF_ERROR(GetAttr(attrs_, a.type_list_attr(), &list_types));
    }
    for (size_t i = 0; i < arg.inputs.size(); ++i) {
      const ::runnel::Input& in = arg.inputs[i];
      if (!in.is_constant()) {
        (*ends)[k].push_back({in.node(), in.index()});
        continue;
      }
      DataType dt = in.initializer().tensor.dtype();
      if (a.type() != DT_INVALID) {
        dt = a.type();
      } else if (!a.type_attr().empty() && attrs_.contains(a.type_attr())) {
        dt = attrs_[a.type_attr()].type();
      } else if (i < list_types.size()) {
        dt = list_types[i];
      }
      StatusOr<Tensor> value = in.initializer().AsType(dt);
      if (!value.ok()) {
        return errors::Prefix(value.status(),
                              absl::StrCat("input '", a.name(), "': "));
      }
      std::string base = absl::StrCat(name_, "/", a.name());
      if (arg.is_list) absl::StrAppend(&base, "_", i);
      AttrMap attrs = {{"value", MakeAttrValue(*value)},
                       {"dtype", MakeAttrValue(dt)}};
      Operation c;
      RETURN_IF_ERROR(AddNodeToScope(scope_, scope_.graph()->NewName(base),
                                     "Const", std::move(attrs), {}, {}, &c));
      consts->push_back(c.node());
      (*ends)[k].push_back({c.node(), 0});
    }
  }
  return absl::OkStatus();
}

void NodeBuilder::SetTypeListAttrs(const OpDef& def, const Endpoints& ends) {
  for (int k = 0; k < def.input_arg_size(); ++k) {
    const std::string& attr = def.input_arg(k).type_list_attr();
    if (attr.empty() || attrs_.contains(attr)) continue;
    std::vector<DataType> types;
    for (const auto& [node, index] : ends[k])
      types.push_back(BaseType(node->output_type(index)));
    attrs_[attr] = MakeAttrValue(types);
  }
}

Status NodeBuilder::AddNodeWithEdges(const Endpoints& ends, Operation* op) {
  std::vector<Output> inputs;
  for (const auto& arg : ends) {
    for (const auto& [node, index] : arg) inputs.emplace_back(node, index);
  }
  return AddNodeToScope(scope_, name_, op_, attrs_, inputs, control_inputs_,
                        op);
}

Status NodeBuilder::Finalize(Operation* op) {
  *op = Operation();
  RETURN_IF_ERROR(scope_.status());
  const OpDef* def = nullptr;
  RETURN_IF_ERROR(Where(OpRegistry::Global()->LookUpOpDef(op_, &def)));
  RETURN_IF_ERROR(Where(CheckArgs(*def)));
  InferAttrsFromOutputs(*def);
  std::vector<Node*> consts;
  Endpoints ends;
  Status s = MaterializeConstants(*def, &consts, &ends);
  if (s.ok()) {
    SetTypeListAttrs(*def, ends);
    s = AddNodeWithEdges(ends, op);
  }
  if (!s.ok()) {
    for (Node* c : consts) {
      scope_.refiner()->RemoveNode(c);
      scope_.graph()->RemoveNode(c);
    }
    return Where(s);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// ops::Const

namespace ops {

Output Const(const Scope& scope, const Input::Initializer& value) {
  if (!scope.ok()) return Output();
  if (!value.status.ok()) {
    scope.UpdateStatus(errors::Prefix(value.status, "Const: "));
    return Output();
  }
  NodeBuilder b(scope, "Const");
  b.Attr("value", value.tensor).Attr("dtype", value.tensor.dtype());
  Operation op;
  scope.UpdateStatus(b.Finalize(&op));
  return scope.ok() ? op.output(0) : Output();
}

Output Const(const Scope& scope, const Input::Initializer& value,
             const TensorShape& shape) {
  if (!scope.ok() || !value.status.ok()) return Const(scope, value);
  const Tensor& v = value.tensor;
  Input::Initializer shaped(Tensor{});
  shaped.is_literal = value.is_literal;
  if (v.NumElements() == shape.num_elements()) {
    shaped.tensor.CopyFrom(v, shape);
  } else if (v.NumElements() == 1) {
    shaped.tensor = Tensor(v.dtype(), shape);
    DispatchAll(v.dtype(), [&]<typename T>() {
      absl::Span<T> out = shaped.tensor.flat<T>();
      std::fill(out.begin(), out.end(), v.flat<T>()[0]);
    });
  } else {
    shaped.status = errors::InvalidArgument(
        "a value of shape ", v.shape().DebugString(),
        " cannot make a constant of shape ", shape.DebugString());
  }
  return Const(scope, shaped);
}

Output Const(const Scope& scope, const Input::Initializer& value,
             DataType dtype) {
  StatusOr<Tensor> t = value.AsType(dtype);
  Input::Initializer typed(t.ok() ? *t : Tensor());
  if (!t.ok()) typed.status = t.status();
  return Const(scope, typed);
}

}  // namespace ops
}  // namespace runnel
