#include "runnel/graph/grad_helpers.h"

#include <cstdint>
#include <string>
#include <vector>

#include "runnel/framework/op.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace grad {

Operation MakeOperationWithLists(const Scope& scope, absl::string_view op,
                                 const std::vector<InputList>& args,
                                 const AttrMap& attrs) {
  if (!scope.ok()) return Operation();
  const OpDef* def = nullptr;
  Status s = OpRegistry::Global()->LookUpOpDef(op, &def);
  if (s.ok() && def->input_arg_size() != static_cast<int>(args.size())) {
    s = errors::InvalidArgument("op ", op, " takes ", def->input_arg_size(),
                                " input args, got ", args.size());
  }
  if (!s.ok()) {
    scope.UpdateStatus(s);
    return Operation();
  }
  NodeBuilder b(scope, op);
  for (int i = 0; i < def->input_arg_size(); ++i) {
    const OpDef::ArgDef& arg = def->input_arg(i);
    const bool is_list =
        !arg.number_attr().empty() || !arg.type_list_attr().empty();
    if (is_list) {
      b.Input(args[i]);
    } else if (args[i].size() == 1) {
      b.Input(args[i][0]);
    } else {
      scope.UpdateStatus(
          errors::InvalidArgument("input arg '", arg.name(), "' of op ", op,
                                  " takes one tensor, got ", args[i].size()));
      return Operation();
    }
  }
  b.Attrs(attrs);
  Operation result;
  scope.UpdateStatus(b.Finalize(&result));
  return scope.ok() ? result : Operation();
}

Operation MakeOperation(const Scope& scope, absl::string_view op,
                        const std::vector<Input>& inputs,
                        const AttrMap& attrs) {
  std::vector<InputList> args;
  args.reserve(inputs.size());
  for (const Input& in : inputs) args.push_back(InputList({in}));
  return MakeOperationWithLists(scope, op, args, attrs);
}

Output MakeOp(const Scope& scope, absl::string_view op,
              const std::vector<Input>& inputs, const AttrMap& attrs) {
  Operation o = MakeOperation(scope, op, inputs, attrs);
  return o.node() == nullptr ? Output() : o.output(0);
}

std::optional<Tensor> ConstantValue(const Scope& scope, const Output& out) {
  if (out.node() == nullptr) return std::nullopt;
  const Tensor* t = scope.refiner()->ConstantValue(out.node(), out.index());
  if (t == nullptr) return std::nullopt;
  return *t;
}

std::optional<std::vector<int64_t>> ConstantInts(const Scope& scope,
                                                 const Output& out) {
  std::optional<Tensor> t = ConstantValue(scope, out);
  if (!t.has_value()) return std::nullopt;
  std::vector<int64_t> v;
  if (t->dtype() == DT_INT32) {
    for (int32_t x : t->flat<int32_t>()) v.push_back(x);
  } else if (t->dtype() == DT_INT64) {
    for (int64_t x : t->flat<int64_t>()) v.push_back(x);
  } else {
    return std::nullopt;
  }
  return v;
}

AttrMap SharedAttrs(const Operation& op, absl::string_view target) {
  AttrMap attrs;
  const OpDef* def = nullptr;
  if (op.node() == nullptr ||
      !OpRegistry::Global()->LookUpOpDef(target, &def).ok()) {
    return attrs;
  }
  for (const OpDef::AttrDef& a : def->attr()) {
    if (a.type() == "type" || a.type() == "list(type)") continue;
    auto it = op.node()->attrs().find(a.name());
    if (it != op.node()->attrs().end()) attrs[a.name()] = it->second;
  }
  return attrs;
}

Output Scalar(const Scope& scope, double value, DataType dtype) {
  dtype = BaseType(dtype);
  if (DataTypeIsInteger(dtype)) {
    return ops::Const(scope, static_cast<int64_t>(value), dtype);
  }
  return ops::Const(scope, value, dtype);
}

Output Int32s(const Scope& scope, const std::vector<int32_t>& values) {
  return ops::Const(scope, Tensor::FromVector<int32_t>(values));
}

Output AddN(const Scope& s, const std::vector<Output>& xs) {
  Operation op = MakeOperationWithLists(s, "AddN", {InputList(xs)});
  return op.node() == nullptr ? Output() : op.output(0);
}

Output Concat(const Scope& s, const std::vector<Output>& xs, Input axis) {
  Operation op =
      MakeOperationWithLists(s, "ConcatV2", {InputList(xs), InputList({axis})});
  return op.node() == nullptr ? Output() : op.output(0);
}

Output Pack(const Scope& s, const std::vector<Output>& xs, int64_t axis) {
  Operation op = MakeOperationWithLists(s, "Pack", {InputList(xs)},
                                        {{"axis", MakeAttrValue(axis)}});
  return op.node() == nullptr ? Output() : op.output(0);
}

void ReduceForBroadcast(const Scope& s, const Output& x, const Output& y,
                        const Output& gx, const Output& gy,
                        std::vector<Output>* grad_outputs) {
  // Without broadcasting (equal, fully known shapes) the gradients already
  // have the inputs' shapes.
  const PartialTensorShape sx = s.GetShape(x), sy = s.GetShape(y);
  if (sx.IsFullyDefined() && sx == sy) {
    grad_outputs->push_back(gx);
    grad_outputs->push_back(gy);
    return;
  }
  Output shape_x = Shape(s, x);
  Output shape_y = Shape(s, y);
  Operation r = MakeOperation(s, "BroadcastGradientArgs", {shape_x, shape_y});
  if (r.node() == nullptr) {
    grad_outputs->push_back(Output());
    grad_outputs->push_back(Output());
    return;
  }
  auto reduce = [&](const Output& g, const Output& axes, const Output& shape) {
    if (g.node() == nullptr) return Output();
    return Reshape(s, Sum(s, g, axes), shape);
  };
  grad_outputs->push_back(reduce(gx, r.output(0), shape_x));
  grad_outputs->push_back(reduce(gy, r.output(1), shape_y));
}

Output InvertPermutation(const Scope& s, const Output& perm) {
  if (std::optional<std::vector<int64_t>> p = ConstantInts(s, perm)) {
    std::vector<int32_t> inv(p->size(), 0);
    bool valid = true;
    for (size_t i = 0; i < p->size(); ++i) {
      const int64_t j = (*p)[i];
      if (j < 0 || j >= static_cast<int64_t>(p->size())) {
        valid = false;
        break;
      }
      inv[j] = static_cast<int32_t>(i);
    }
    if (valid) return Int32s(s, inv);
  }
  Output p32 = perm.type() == DT_INT32 ? perm : Cast(s, perm, DT_INT32);
  Output iota = Range(s, 0, Size(s, p32), 1);
  Operation stitch = MakeOperationWithLists(
      s, "DynamicStitch", {InputList({p32}), InputList({iota})});
  return stitch.node() == nullptr ? Output() : stitch.output(0);
}

Output GatherRowsGradient(const Scope& s, const Output& params_shape,
                          const Output& indices, const Output& dy) {
  const Output n = Reshape(s, Size(s, indices, DT_INT64), Int32s(s, {1}));
  const Output inner = Slice(s, params_shape, Int32s(s, {1}), Int32s(s, {-1}));
  const Output values = Reshape(s, dy, Concat(s, {n, inner}, 0));
  const Output ids = Reshape(s, indices, Int32s(s, {-1}));
  const Output rows = Reshape(
      s, Slice(s, params_shape, Int32s(s, {0}), Int32s(s, {1})), Int32s(s, {}));
  const Output dense = UnsortedSegmentSum(s, values, ids, rows);
  if (s.ok()) {
    s.UpdateStatus(RecordSparseGradient(dense, {values, ids, params_shape}));
  }
  return dense;
}

}  // namespace grad
}  // namespace runnel
