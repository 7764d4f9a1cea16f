// Pieces the tf.data dataset kernels share (dataset_transform_ops.cc,
// dataset_buffer_ops.cc): an op's element spec, its dataset inputs, the
// base kernels that build a dataset from them, and the per-element
// functions whose errors name the dataset and the element. Internal to
// runnel/ops.
#ifndef RUNNEL_OPS_DATASET_KERNEL_UTIL_H_
#define RUNNEL_OPS_DATASET_KERNEL_UTIL_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op_kernel.h"

namespace runnel::dataset_util {

// The dtypes and shapes of a dataset's elements (attrs output_types and
// output_shapes).
struct ElementSpec {
  DataTypeVector dtypes;
  std::vector<PartialTensorShape> shapes;
};

inline Status ReadElementSpec(OpKernelConstruction* c, ElementSpec* spec) {
  std::vector<DataType> types;
  RETURN_IF_ERROR(c->GetAttr("output_types", &types));
  RETURN_IF_ERROR(c->GetAttr("output_shapes", &spec->shapes));
  if (types.size() != spec->shapes.size()) {
    return errors::InvalidArgument("output_types has ", types.size(),
                                   " entries but output_shapes has ",
                                   spec->shapes.size());
  }
  spec->dtypes.assign(types.begin(), types.end());
  return absl::OkStatus();
}

inline Status ReadFuncAttr(OpKernelConstruction* c, const char* attr,
                           NameAttrList* func) {
  auto it = c->attrs().find(attr);
  if (it == c->attrs().end() || !it->second.has_func()) {
    return errors::InvalidArgument("attr '", attr, "' must be a function");
  }
  *func = it->second.func();
  return absl::OkStatus();
}

// Input `i` as a dataset.
inline StatusOr<DatasetPtr> InputDataset(OpKernelContext* ctx, int i) {
  StatusOr<DatasetPtr> ds = DatasetFromVariantTensor(ctx->input(i));
  if (!ds.ok()) {
    return errors::Prefix(ds.status(), absl::StrCat("input ", i, ": "));
  }
  return ds;
}

inline StatusOr<int64_t> ScalarInt64(OpKernelContext* ctx, int i,
                                     const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_INT64 || t.dims() != 0) {
    return errors::InvalidArgument(what, " must be a scalar int64, got ",
                                   DataTypeString(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  return t.scalar<int64_t>();
}

// Checks that `ds` produces elements of `dtypes` (`what` names the input).
inline Status CheckInputDtypes(const DatasetBase& ds,
                               const DataTypeVector& dtypes,
                               const std::string& what) {
  if (ds.output_dtypes() == dtypes) return absl::OkStatus();
  std::vector<std::string> have, want;
  for (DataType t : ds.output_dtypes()) have.push_back(DataTypeString(t));
  for (DataType t : dtypes) want.push_back(DataTypeString(t));
  return errors::InvalidArgument(what, " ", ds.DebugString(),
                                 " produces elements of (",
                                 absl::StrJoin(have, ", "), "), expected (",
                                 absl::StrJoin(want, ", "), ")");
}

// The kernel of every dataset op here: reads output_types/output_shapes,
// then MakeDataset builds the dataset from the inputs.
class DatasetOpKernel : public OpKernel {
 public:
  explicit DatasetOpKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ReadElementSpec(c, &spec_));
  }

  void Compute(OpKernelContext* ctx) final {
    StatusOr<DatasetPtr> ds = MakeDataset(ctx);
    OP_REQUIRES_OK(ctx, ds.status());
    ctx->set_output(0, DatasetToVariantTensor(std::move(*ds)));
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) = 0;
  // "MapDataset 'map'": names the dataset in its errors.
  std::string DatasetName() const {
    return absl::StrCat(type_string(), " '", name(), "'");
  }

  ElementSpec spec_;
};

// A dataset with the element spec its op's attrs give.
class SpecDataset : public DatasetBase {
 public:
  SpecDataset(std::string name, ElementSpec spec)
      : name_(std::move(name)), spec_(std::move(spec)) {}
  std::string DebugString() const override { return name_; }
  const DataTypeVector& output_dtypes() const override { return spec_.dtypes; }
  const std::vector<PartialTensorShape>& output_shapes() const override {
    return spec_.shapes;
  }

 protected:
  const std::string name_;
  const ElementSpec spec_;
};

// The function of a map/filter/flat_map with what its errors say.
struct ElementFunction {
  std::shared_ptr<const CapturedFunction> fn;
  std::string dataset_name;  // "MapDataset 'map'"

  // Runs fn on element `index`; errors name the dataset, fn and index.
  Status Run(IteratorContext* ctx, int64_t index, std::vector<Tensor> args,
             std::vector<Tensor>* rets) const {
    Status s = fn->Run(ctx, std::move(args), rets);
    if (s.ok()) return s;
    return errors::Prefix(s, FailurePrefix(index));
  }
  std::string FailurePrefix(int64_t index) const {
    return absl::StrCat(dataset_name, ": function '", fn->name(),
                        "' failed on element ", index, ": ");
  }
  std::string ResultName(int64_t index) const {
    return absl::StrCat(dataset_name, ": function '", fn->name(),
                        "' on element ", index);
  }
};

// Kernels of ops with (input_dataset, other_arguments..., <num_trailing>
// scalar inputs) and function attr `func_attr`.
class FunctionDatasetOpKernel : public DatasetOpKernel {
 public:
  FunctionDatasetOpKernel(OpKernelConstruction* c, const char* func_attr,
                          int num_trailing)
      : DatasetOpKernel(c), num_trailing_(num_trailing) {
    OP_REQUIRES_OK(c, ReadFuncAttr(c, func_attr, &func_));
  }

 protected:
  // The input dataset and the function with its captured inputs.
  Status Common(OpKernelContext* ctx, DatasetPtr* input,
                ElementFunction* fn) const {
    ASSIGN_OR_RETURN(*input, InputDataset(ctx, 0));
    std::vector<Tensor> captured;
    for (int i = 1; i < ctx->num_inputs() - num_trailing_; ++i) {
      captured.push_back(ctx->input(i));
    }
    fn->fn =
        std::make_shared<const CapturedFunction>(func_, std::move(captured));
    fn->dataset_name = DatasetName();
    return absl::OkStatus();
  }

 private:
  NameAttrList func_;
  const int num_trailing_;
};

// The largest element counter a checkpoint may hold.
constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();

}  // namespace runnel::dataset_util

#endif  // RUNNEL_OPS_DATASET_KERNEL_UTIL_H_
