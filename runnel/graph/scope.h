// The graph-building half of the C++ client API, in TensorFlow's shape
// (tensorflow/cc/framework/{scope,ops}.h):
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
//   auto y = ops::Add(root, x, 1);          // 1 becomes a float Const "Add/y"
//   Scope layer = root.NewSubScope("dense");
//   auto z = ops::MatMul(layer, y, w, ops::MatMul::TransposeB(true));
//   RETURN_IF_ERROR(root.status());        // the first error, if any
//
// * Operation / Output name a node and one of its output tensors.
// * Input is what an op wrapper accepts for a tensor argument: an Output, or
//   a C++ literal (scalar, nested initializer list, Tensor) that becomes a
//   Const node when the op is built.
// * Scope carries the graph and the settings the next ops get: name prefix,
//   op name, device, control dependencies, colocation. Scopes made from one
//   root share the graph, the shape table and the error status; copies are
//   cheap.
// * NodeBuilder is the generic op builder every wrapper uses; see its
//   comment for type inference and the construction-time shape check.
// * ops::Const makes a constant; every other op has a generated wrapper in
//   runnel/ops/ops_gen.h.
//
// Note [Status accumulation]: a wrapper never returns a Status. The first
// error (bad attr, dtype mismatch, shape error, ...) is stored in the shared
// status; later wrappers on any scope of that root do nothing and leave
// default (null) Operations/Outputs. Check Scope::status() (or
// ToGraphDef's result) after building.
//
// Thread safety: none. Build a graph from one thread at a time.
#ifndef RUNNEL_GRAPH_SCOPE_H_
#define RUNNEL_GRAPH_SCOPE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/graph.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/types.h"
#include "runnel/graph/graph.h"
#include "runnel/graph/shape_refiner.h"

namespace runnel {

class Output;

// A node of the graph being built. A default-constructed Operation (what a
// wrapper leaves behind after an error) has a null node: name() is "" and
// it has no inputs or outputs.
class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* n) : node_(n) {}

  Node* node() const { return node_; }
  const std::string& name() const;
  int num_inputs() const { return node_ ? node_->num_inputs() : 0; }
  int num_outputs() const { return node_ ? node_->num_outputs() : 0; }
  // The slot dtypes (the node must be non-null).
  DataType input_type(int i) const { return node_->input_type(i); }
  DataType output_type(int i) const { return node_->output_type(i); }
  Output output(int i) const;
  // The tensor feeding input `i` (a null Output if the slot is unconnected).
  Output input(int i) const;
  // The outputs of the output arg named `arg` (one for a plain arg, several
  // for a list arg such as Split's `output`); empty if there is no such arg.
  std::vector<Output> output_list(absl::string_view arg) const;

  bool operator==(const Operation& o) const { return node_ == o.node_; }
  bool operator!=(const Operation& o) const { return node_ != o.node_; }

 private:
  Node* node_ = nullptr;
};

// Output `index` of an operation: a tensor-valued edge source.
class Output {
 public:
  Output() = default;
  explicit Output(Node* n, int index = 0) : op_(n), index_(index) {}
  Output(const Operation& op, int index) : op_(op), index_(index) {}

  Operation op() const { return op_; }
  Node* node() const { return op_.node(); }
  int index() const { return index_; }
  // The dtype (a _ref type for a variable); DT_INVALID for a null Output.
  DataType type() const;
  // "node:index" ("" for a null Output), the form Session::Run takes.
  std::string name() const;

  bool operator==(const Output& o) const {
    return op_ == o.op_ && index_ == o.index_;
  }
  bool operator!=(const Output& o) const { return !(*this == o); }

 private:
  Operation op_;
  int index_ = 0;
};

struct OutputHash {
  size_t operator()(const Output& o) const {
    return std::hash<const void*>()(o.node()) * 31 +
           static_cast<size_t>(o.index());
  }
};

using OutputList = std::vector<Output>;

inline Output Operation::output(int i) const { return Output(*this, i); }

namespace internal {
// C++ scalar types a literal may be written in (char types excluded).
template <typename T>
inline constexpr bool kIsLiteralScalar =
    std::is_arithmetic_v<T> && !std::is_same_v<T, char> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> &&
    !std::is_same_v<T, char32_t> && !std::is_same_v<T, wchar_t> &&
    !std::is_same_v<T, long double>;

// The DataType a C++ literal of type T gets: bool, int8..int64, uint8..
// uint64, float, double (long long counts as int64).
template <typename T>
constexpr DataType LiteralDataType() {
  if constexpr (std::is_same_v<T, bool>) {
    return DT_BOOL;
  } else if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) == 4 ? DT_FLOAT : DT_DOUBLE;
  } else if constexpr (std::is_signed_v<T>) {
    return sizeof(T) == 1   ? DT_INT8
           : sizeof(T) == 2 ? DT_INT16
           : sizeof(T) == 4 ? DT_INT32
                            : DT_INT64;
  } else {
    return sizeof(T) == 1   ? DT_UINT8
           : sizeof(T) == 2 ? DT_UINT16
           : sizeof(T) == 4 ? DT_UINT32
                            : DT_UINT64;
  }
}
}  // namespace internal

// A tensor argument of an op wrapper: an Output, or a constant.
class Input {
 public:
  // A constant written in C++. Literals (scalars and initializer lists of
  // them) are converted, when an op is built, to the dtype the op needs: the
  // dtype of the op's other inputs of the same type attr, or the arg's fixed
  // dtype (int -> float is fine, 1.5 -> int32 or overflow is an error). A
  // Tensor is used exactly as given.
  struct Initializer {
    template <typename T,
              typename = std::enable_if_t<internal::kIsLiteralScalar<T>>>
    Initializer(const T& v)  // NOLINT: implicit on purpose.
        : tensor(Tensor::Scalar<Native<T>>(static_cast<Native<T>>(v))),
          is_literal(true) {}
    Initializer(const char* s);                  // NOLINT
    Initializer(const std::string& s);           // NOLINT
    Initializer(const Tensor& t) : tensor(t) {}  // NOLINT

    // A 1-D literal {1, 2, 3}.
    template <typename T,
              typename = std::enable_if_t<internal::kIsLiteralScalar<T>>>
    Initializer(const std::initializer_list<T>& v)  // NOLINT
        : tensor(internal::LiteralDataType<T>(),
                 TensorShape({static_cast<int64_t>(v.size())})),
          is_literal(true) {
      Native<T>* out = tensor.flat<Native<T>>().data();
      for (const T& x : v) *out++ = static_cast<Native<T>>(x);
    }
    // A nested literal {{1, 2}, {3, 4}}: the parts must have one shape; mixed
    // numeric literal dtypes are promoted (int with float gives float).
    // An empty list is a float tensor of shape [0].
    Initializer(const std::initializer_list<Initializer>& v);  // NOLINT

    Initializer(const Initializer&) = default;
    Initializer& operator=(const Initializer&) = default;

    // The value as `dtype`: the tensor itself if it has that dtype, a
    // converted copy if it is a literal that converts exactly, else
    // InvalidArgument.
    StatusOr<Tensor> AsType(DataType dtype) const;

    Tensor tensor;
    Status status;            // Error from a malformed literal.
    bool is_literal = false;  // True if converting to another dtype is allowed.

   private:
    template <typename T>
    using Native =
        typename EnumToDataType<internal::LiteralDataType<T>()>::Type;
  };

  Input() = default;
  Input(const Output& o) : output_(o) {}                               // NOLINT
  Input(const Initializer& init) : init_(init), is_constant_(true) {}  // NOLINT
  Input(const Tensor& t) : Input(Initializer(t)) {}                    // NOLINT
  Input(const std::initializer_list<Initializer>& init)                // NOLINT
      : Input(Initializer(init)) {}
  template <typename T, typename = std::enable_if_t<
                            std::is_constructible_v<Initializer, const T&>>>
  Input(const T& v) : Input(Initializer(v)) {}  // NOLINT

  bool is_constant() const { return is_constant_; }
  const Output& output() const { return output_; }
  const Initializer& initializer() const { return init_; }
  Node* node() const { return output_.node(); }
  int index() const { return output_.index(); }
  Status status() const {
    return is_constant_ ? init_.status : absl::OkStatus();
  }

 private:
  Output output_;
  Initializer init_ = Initializer(Tensor());
  bool is_constant_ = false;
};

// The argument of a list input (AddN's `inputs`, ConcatV2's `values`).
class InputList {
 public:
  InputList() = default;
  InputList(const OutputList& outputs)  // NOLINT
      : inputs_(outputs.begin(), outputs.end()) {}
  InputList(std::initializer_list<Input> inputs) : inputs_(inputs) {}  // NOLINT
  InputList(const std::vector<Input>& inputs) : inputs_(inputs) {}     // NOLINT

  size_t size() const { return inputs_.size(); }
  const Input& operator[](size_t i) const { return inputs_[i]; }
  std::vector<Input>::const_iterator begin() const { return inputs_.begin(); }
  std::vector<Input>::const_iterator end() const { return inputs_.end(); }

 private:
  std::vector<Input> inputs_;
};

// Where the next ops go and what they get. See the file comment.
class Scope {
 public:
  // A scope over a new, empty graph.
  static Scope NewRootScope();

  // Ops made in the child are named "<this>/<name>/<op>". The name is made
  // unique among this scope's names ("a", "a_1", ...); "" shares this
  // scope's names.
  Scope NewSubScope(absl::string_view child_scope_name) const;
  // Like NewSubScope, but the child is named exactly `child_scope_name`
  // ("a/b" for a nested one; not made unique), for front ends that keep
  // their own name table (the Python API). New ops' names are still made
  // unique against the graph's nodes.
  Scope NewSubScopeExact(absl::string_view child_scope_name) const;
  // The next op gets this name (made unique: "x", "x_1") instead of its
  // default.
  Scope WithOpName(absl::string_view op_name) const;
  // Ops get control inputs from these operations, in addition to the
  // scope's current ones.
  Scope WithControlDependencies(absl::Span<const Operation> control_deps) const;
  Scope WithControlDependencies(const Operation& control_dep) const {
    return WithControlDependencies(absl::MakeConstSpan(&control_dep, 1));
  }
  Scope WithControlDependencies(const Output& control_dep) const {
    return WithControlDependencies(control_dep.op());
  }
  Scope WithNoControlDependencies() const;
  // The requested device of the ops ("/cpu:0", "/job:w/task:1/device:CPU:0").
  Scope WithDevice(absl::string_view device) const;
  // A device function (TF's `tf.device(function)`, such as
  // training::ReplicaDeviceSetter): each new op requests the device `fn`
  // returns when called with the op's type, its attrs and the device the
  // scope would request (WithDevice's, "" if none). A null `fn` removes it.
  using DeviceFunction = std::function<std::string(
      absl::string_view op, const AttrMap& attrs, absl::string_view device)>;
  Scope WithDeviceFunction(DeviceFunction fn) const;
  // Ops are placed with `op` (TF's "_class" attr: "loc:@<name>", or the
  // groups `op` itself is colocated with). As TF's colocate_with, this
  // clears the scope's device and device function: the ops go wherever `op`
  // goes (a later WithDevice applies again).
  Scope ColocateWith(const Operation& op) const;
  Scope ColocateWith(const Output& out) const { return ColocateWith(out.op()); }
  Scope ClearColocation() const;

  // The full name for a new op: the scope's op name if set, else
  // `default_name`, made unique ("Add", "Add_1", ...) and prefixed with the
  // scope's name.
  std::string GetUniqueNameForOp(absl::string_view default_name) const;

  Graph* graph() const { return &shared_->graph; }
  std::shared_ptr<Graph> graph_as_shared_ptr() const {
    return std::shared_ptr<Graph>(shared_, &shared_->graph);
  }
  ShapeRefiner* refiner() const { return &shared_->refiner; }
  // The shape inferred for `out` at construction (unknown for a null Output).
  PartialTensorShape GetShape(const Output& out) const {
    return shared_->refiner.OutputShape(out.node(), out.index());
  }

  // See Note [Status accumulation]: keeps the first error.
  void UpdateStatus(const Status& s) const;
  // Forgets the stored error, for front ends that report each error at the
  // call that made it and let the user go on building (the Python API
  // raises it as an exception). Nodes a failed builder already added stay.
  void ClearStatus() const;
  Status status() const { return shared_->status; }
  bool ok() const { return shared_->status.ok(); }

  // Exports the graph, or returns the scope's error.
  Status ToGraphDef(GraphDef* gdef) const;

  // A copy that does not keep the graph alive, for records the graph itself
  // owns (the loop contexts in its ControlFlowInfo): a strong copy there
  // would be a reference cycle, and the graph would never be freed. Valid
  // while some ordinary Scope of the graph lives.
  Scope NonOwningCopy() const;

  // The scope's settings (for NodeBuilder and graph helpers).
  const std::string& name() const { return name_; }
  const std::string& device() const { return device_; }
  // The device a new `op` with `attrs` requests: the device function's
  // choice if there is one, else device().
  std::string DeviceFor(absl::string_view op, const AttrMap& attrs) const;
  const std::vector<Operation>& control_deps() const { return control_deps_; }
  // "loc:@..." entries for the "_class" attr, sorted; empty if none.
  std::vector<std::string> ColocationAttr() const;

 private:
  struct Shared {
    Graph graph;
    ShapeRefiner refiner;
    Status status;
  };
  using NameMap = absl::flat_hash_map<std::string, int>;

  Scope() = default;
  std::string GetUniqueName(const std::string& prefix) const;

  std::shared_ptr<Shared> shared_;
  std::shared_ptr<NameMap> name_map_;  // Names used directly under name_.
  std::string name_;
  std::string op_name_;
  std::string device_;
  std::shared_ptr<const DeviceFunction> device_fn_;
  std::vector<Operation> control_deps_;
  std::set<std::string> colocation_;  // Node names.
};

// Builds one node: the generic code behind every op wrapper.
//
//   NodeBuilder b(scope, "MatMul");          // name from the scope
//   b.Input(a).Input(b).Attr("transpose_b", true);
//   Operation op;
//   scope.UpdateStatus(b.Finalize(&op));
//
// Call Input once per input arg of the OpDef, in order (InputList for list
// args). Finalize then:
//  1. infers type attrs (T, Tidx, ...), number attrs (N) and type-list attrs
//     from the Output inputs (ref outputs count as their base type);
//  2. turns constant inputs into Const nodes named "<node>/<arg>"
//     ("<node>/<arg>_<i>" in a list), converting literals to the arg's dtype
//     (fixed, or the type attr step 1 set; if no Output sets it, the
//     literals' common dtype sets it);
//  3. adds the node (attrs validated, defaults filled) with the scope's
//     device, colocation and control dependencies, and its edges;
//  4. runs the op's shape function on the input shapes known so far.
// Any error leaves the graph as it was and names the node; when the scope
// already holds an error, Finalize returns it and adds nothing.
class NodeBuilder {
 public:
  NodeBuilder(const Scope& scope, absl::string_view op)
      : NodeBuilder(scope, op, op) {}
  NodeBuilder(const Scope& scope, absl::string_view default_name,
              absl::string_view op);

  NodeBuilder& Input(const ::runnel::Input& input);
  NodeBuilder& Input(const InputList& inputs);
  NodeBuilder& ControlInput(const Operation& op);
  NodeBuilder& Attr(absl::string_view name, AttrValue value);
  template <typename T>
  NodeBuilder& Attr(absl::string_view name, const T& value) {
    return Attr(name, MakeAttrValue(value));
  }
  // Sets every attr of `attrs` (an op's optional Attrs).
  NodeBuilder& Attrs(const AttrMap& attrs);

  // The node's name, fixed at construction.
  const std::string& name() const { return name_; }

  Status Finalize(Operation* op);

 private:
  struct Arg {
    std::vector<::runnel::Input> inputs;
    bool is_list = false;
  };
  using Endpoints = std::vector<std::vector<std::pair<Node*, int>>>;

  Status CheckArgs(const OpDef& def) const;
  void InferAttrsFromOutputs(const OpDef& def);
  Status MaterializeConstants(const OpDef& def, std::vector<Node*>* consts,
                              Endpoints* ends);
  void SetTypeListAttrs(const OpDef& def, const Endpoints& ends);
  Status AddNodeWithEdges(const Endpoints& ends, Operation* op);
  Status Where(const Status& s) const;

  Scope scope_;
  std::string name_;
  std::string op_;
  AttrMap attrs_;
  std::vector<Arg> args_;
  std::vector<Operation> control_inputs_;
};

// Adds a node named exactly `name` (no uniquifying) with the scope's device,
// colocation and control dependencies, `inputs` (one per input slot) and
// `attrs`, then runs its shape function. The graph is unchanged on error.
// The building block of NodeBuilder, for graph helpers that need full
// control of names.
Status AddNodeToScope(const Scope& scope, const std::string& name,
                      const std::string& op, AttrMap attrs,
                      absl::Span<const Output> inputs,
                      absl::Span<const Operation> control_inputs,
                      Operation* result);

namespace ops {

// A constant: Const(scope, 3.0f), Const(scope, {{1, 2}, {3, 4}}),
// Const(scope, tensor), Const(scope, "text"). The dtype is the literal's
// (int -> int32, double -> double). On error returns a null Output and the
// scope holds the error.
Output Const(const Scope& scope, const Input::Initializer& value);
// A constant of `shape`: a scalar `value` is repeated, a list is reshaped.
Output Const(const Scope& scope, const Input::Initializer& value,
             const TensorShape& shape);
// A constant of `dtype` (a literal converted as op inputs are).
Output Const(const Scope& scope, const Input::Initializer& value,
             DataType dtype);

}  // namespace ops
}  // namespace runnel

#endif  // RUNNEL_GRAPH_SCOPE_H_
