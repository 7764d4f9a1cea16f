#include "runnel/training/allreduce.h"

#include "absl/strings/str_cat.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {

Status AllReduceGradients(const Scope& scope, const AllReduceOptions& options,
                          std::vector<GradAndVar>* grads) {
  RETURN_IF_ERROR(scope.status());
  if (options.group_size < 1) {
    return errors::InvalidArgument(
        "AllReduceGradients: group_size must be "
        "at least 1, got ",
        options.group_size);
  }
  std::vector<size_t> which;  // The non-null gradients, in order.
  DataType dtype = DT_INVALID;
  for (size_t i = 0; i < grads->size(); ++i) {
    const Output& g = (*grads)[i].first;
    if (g.node() == nullptr) continue;
    const DataType t = BaseType(g.type());
    if (t != DT_FLOAT && t != DT_DOUBLE) {
      return errors::InvalidArgument(
          "AllReduceGradients: gradients must be float or double; the one "
          "of ",
          (*grads)[i].second.name(), " is ", DataTypeString(t));
    }
    if (dtype != DT_INVALID && t != dtype) {
      return errors::InvalidArgument(
          "AllReduceGradients: gradients of one dtype in a bucket, got ",
          DataTypeString(dtype), " and ", DataTypeString(t));
    }
    dtype = t;
    which.push_back(i);
  }
  if (which.empty()) return absl::OkStatus();
  const Scope s = scope.NewSubScope("allreduce");
  // Note [Gradient bucket]: flatten, concatenate, reduce, split, reshape.
  std::vector<Output> flat, shapes, sizes;
  for (size_t i : which) {
    const Output& g = (*grads)[i].first;
    flat.push_back(ops::Reshape(s, g, ops::Const(s, {-1})));
    shapes.push_back(ops::Shape(s, g));
    sizes.push_back(ops::Size(s, g));
  }
  const Output bucket =
      flat.size() == 1 ? flat[0] : ops::ConcatV2(s, flat, ops::Const(s, 0));
  const Output reduced = ops::CollectiveReduceV2(
      s.WithOpName("bucket"), bucket, ops::Const(s, options.group_size),
      ops::Const(s, options.group_key), ops::Const(s, options.instance_key),
      std::vector<Output>{}, "Add", "Div",
      ops::CollectiveReduceV2::TimeoutSeconds(options.timeout_seconds));
  if (which.size() == 1) {
    (*grads)[which[0]].first = ops::Reshape(s, reduced, shapes[0]);
    return s.status();
  }
  auto parts = ops::SplitV(s, reduced, ops::Pack(s, sizes), ops::Const(s, 0),
                           static_cast<int64_t>(which.size()));
  for (size_t k = 0; k < which.size(); ++k) {
    (*grads)[which[k]].first = ops::Reshape(s, parts.output[k], shapes[k]);
  }
  return s.status();
}

}  // namespace runnel::training
