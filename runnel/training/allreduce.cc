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
  // Note [Gradient buckets]: the last variables' gradients first.
  std::vector<std::vector<size_t>> buckets;
  int64_t bytes = 0;
  for (auto it = which.rbegin(); it != which.rend(); ++it) {
    const int64_t size = (*grads)[*it].second.shape().num_elements() *
                         static_cast<int64_t>(DataTypeSize(dtype));
    if (buckets.empty() || (options.bucket_bytes > 0 && bytes > 0 &&
                            bytes + size > options.bucket_bytes)) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(*it);
    bytes += size;
  }
  const Scope s = scope.NewSubScope("allreduce");
  Operation previous;
  for (size_t k = 0; k < buckets.size(); ++k) {
    const std::vector<size_t>& bucket = buckets[k];
    const Scope b = s.NewSubScope(absl::StrCat("bucket_", k));
    std::vector<Output> flat, shapes, sizes;
    for (size_t i : bucket) {
      const Output& g = (*grads)[i].first;
      flat.push_back(ops::Reshape(b, g, ops::Const(b, {-1})));
      shapes.push_back(ops::Shape(b, g));
      sizes.push_back(ops::Size(b, g));
    }
    const Output joined =
        flat.size() == 1 ? flat[0] : ops::ConcatV2(b, flat, ops::Const(b, 0));
    const Scope ordered = k == 0 ? b : b.WithControlDependencies(previous);
    const Output reduced = ops::CollectiveReduceV2(
        ordered.WithOpName("reduce"), joined, ops::Const(b, options.group_size),
        ops::Const(b, options.group_key),
        ops::Const(b, options.instance_key + static_cast<int32_t>(k)),
        std::vector<Output>{}, "Add", "Div",
        ops::CollectiveReduceV2::TimeoutSeconds(options.timeout_seconds));
    previous = reduced.op();
    if (bucket.size() == 1) {
      (*grads)[bucket[0]].first = ops::Reshape(b, reduced, shapes[0]);
      continue;
    }
    auto parts = ops::SplitV(b, reduced, ops::Pack(b, sizes), ops::Const(b, 0),
                             static_cast<int64_t>(bucket.size()));
    for (size_t j = 0; j < bucket.size(); ++j) {
      (*grads)[bucket[j]].first = ops::Reshape(b, parts.output[j], shapes[j]);
    }
  }
  return s.status();
}

}  // namespace runnel::training
