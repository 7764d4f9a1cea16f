// Conditional accumulators (OSDI §4.4: synchronous replication): the
// gradient aggregation of TensorFlow's SyncReplicasOptimizer. Each
// accumulator is a resource in its device's ResourceMgr that sums the
// gradients replicas apply to it and hands out their mean (or sum) once
// enough have arrived.
//
//   ConditionalAccumulator / ResourceConditionalAccumulator  (dense)
//   SparseConditionalAccumulator                             (IndexedSlices)
//   AccumulatorApplyGradient, SparseAccumulatorApplyGradient
//   AccumulatorTakeGradient, SparseAccumulatorTakeGradient
//   AccumulatorNumAccumulated, AccumulatorSetGlobalStep
//   (and Resource* twins of the dense ones, taking a DT_RESOURCE handle)
//
// The TF 1.x ops pass the accumulator as a Ref(string) handle: a 2-element
// string tensor [container, name] that the creating op owns and outputs by
// reference. The Resource* ops use a DT_RESOURCE handle instead. Either way
// the accumulator is shared by name, so every replica's graph that names it
// (shared_name; the node name when empty) reaches the same one.
//
// Note [Accumulator semantics] (TensorFlow's ConditionalAccumulatorBase):
//  * The accumulator keeps a global step, 0 at creation.
//  * ApplyGradient(local_step, g): a gradient computed at a local step older
//    than the accumulator's global step is stale and silently dropped.
//    Otherwise it is checked (dtype, and shape: compatible with the `shape`
//    attr and equal to the gradients already summed) and added; the count of
//    accumulated gradients goes up by one.
//  * TakeGradient(num_required) waits (holding no thread) until at least
//    num_required gradients are in, then returns their mean (reduction_type
//    "MEAN", the default) or sum ("SUM"), resets the count to 0 and adds one
//    to the global step. Waiting takes are served first come, first served;
//    each registers with its step's CancellationManager, so a cancelled step
//    fails it with Cancelled.
//  * SetGlobalStep(s) sets the global step (a step smaller than the current
//    one is allowed, as in TF, which also logs a warning).
//  * The sparse accumulator sums rows by index. Within one gradient rows of
//    a repeated index are summed first; the mean of a row divides by the
//    number of gradients that touched it (TF's per-element count). Its take
//    returns the indices in increasing order, the rows, and the dense shape
//    [shape[0] or -1 when unknown, the rows' shape...]. TensorFlow's merge
//    assumes sorted indices; with sorted, distinct indices the results are
//    the same, and unsorted ones are handled correctly here.
// Gradients may be float or double (TF also registers half).
#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_var.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

constexpr char kDense[] = "ConditionalAccumulator";
constexpr char kSparse[] = "SparseConditionalAccumulator";

// What a creating node asked for; a shared accumulator must match it.
struct AccumulatorDefinition {
  std::string kind;  // kDense or kSparse.
  DataType dtype = DT_INVALID;
  PartialTensorShape shape;
  bool mean = true;  // reduction_type "MEAN" (else "SUM").
};

// dst[i] += src[i] for i < n.
template <typename T>
void AddValues(const T* src, int64_t n, T* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

template <typename T>
void ScaleValues(T* v, int64_t n, T divisor) {
  for (int64_t i = 0; i < n; ++i) v[i] /= divisor;
}

// Calls fn.template operator()<T>() for the float types accumulators hold.
template <typename Fn>
void DispatchFloat(DataType dt, Fn&& fn) {
  if (dt == DT_FLOAT) {
    fn.template operator()<float>();
  } else {
    fn.template operator()<double>();
  }
}

// The state and the waiting takes shared by both kinds (Note [Accumulator
// semantics]).
class Accumulator : public ResourceBase {
 public:
  using DoneCallback = AsyncOpKernel::DoneCallback;

  Accumulator(std::string name, AccumulatorDefinition def)
      : name_(std::move(name)), def_(std::move(def)) {}

  const AccumulatorDefinition& def() const { return def_; }
  std::string DebugString() const override {
    absl::MutexLock l(&mu_);
    return absl::StrCat(def_.kind, " '", name_, "' (",
                        DataTypeString(def_.dtype), " ",
                        def_.shape.DebugString(), ", ", counter_,
                        " accumulated, global step ", global_step_, ")");
  }

  // InvalidArgument unless a node asking for `want` may share this one.
  Status Matches(const AccumulatorDefinition& want) const {
    const std::string prefix = absl::StrCat("Shared accumulator '", name_, "'");
    if (want.kind != def_.kind) {
      return errors::InvalidArgument(prefix, " is a ", def_.kind,
                                     " but this node makes a ", want.kind);
    }
    if (want.dtype != def_.dtype) {
      return errors::InvalidArgument(
          prefix, " holds ", DataTypeString(def_.dtype),
          " gradients but this node asks for ", DataTypeString(want.dtype));
    }
    if (!(want.shape == def_.shape)) {
      return errors::InvalidArgument(
          prefix, " has shape ", def_.shape.DebugString(),
          " but this node asks for ", want.shape.DebugString());
    }
    if (want.mean != def_.mean) {
      return errors::InvalidArgument(
          prefix, " has reduction_type ", def_.mean ? "MEAN" : "SUM",
          " but this node asks for ", want.mean ? "MEAN" : "SUM");
    }
    return absl::OkStatus();
  }

  // Validates and adds the gradient in ctx's inputs (from input 2 on), or
  // drops it if local_step is stale. Completes takes it satisfies.
  Status ApplyGrad(int64_t local_step, OpKernelContext* ctx,
                   bool has_known_shape) {
    std::vector<Done> done;
    {
      absl::MutexLock l(&mu_);
      if (local_step < global_step_) return absl::OkStatus();  // Stale.
      RETURN_IF_ERROR(AddLocked(ctx, has_known_shape));
      ++counter_;
      FlushLocked(&done);
    }
    RunDone(&done);
    return absl::OkStatus();
  }

  // Waits for num_required (> 0) gradients, then sets ctx's outputs.
  void TryTakeGrad(int32_t num_required, OpKernelContext* ctx,
                   DoneCallback callback) {
    std::vector<Done> done;
    Ref();  // Callbacks may drop the last outside reference.
    {
      absl::MutexLock l(&mu_);
      const int64_t id = next_id_++;
      takes_.push_back(Take{id, num_required, ctx, std::move(callback)});
      FlushLocked(&done);
      // Only a take that has to wait registers for cancellation.
      CancellationManager* cm = ctx->cancellation_manager();
      for (Take& t : takes_) {
        if (t.id != id || cm == nullptr) continue;
        t.cm = cm;
        t.token = cm->NewToken();
        auto keep = std::make_shared<AccumulatorRef>(this);
        t.registered =
            cm->RegisterCallback(t.token, [keep, id] { keep->Cancel(id); });
        if (!t.registered) CancelLocked(id, &done);
        break;
      }
    }
    RunDone(&done);
    Unref();
  }

  int32_t num_accumulated() const {
    absl::MutexLock l(&mu_);
    return counter_;
  }

  void SetGlobalStep(int64_t step) {
    absl::MutexLock l(&mu_);
    global_step_ = step;
  }

 protected:
  // Adds the gradient in ctx's inputs to the stored sum (the first gradient
  // since a take replaces it). Called with mu_ held; counter_ is the number
  // already summed. `has_known_shape`: the sparse gradient's dense shape
  // input is to be checked.
  virtual Status AddLocked(OpKernelContext* ctx, bool has_known_shape)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Sets ctx's outputs to the mean (def().mean) or sum and forgets it.
  virtual Status TakeLocked(OpKernelContext* ctx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;

  mutable absl::Mutex mu_;
  int32_t counter_ ABSL_GUARDED_BY(mu_) = 0;

 private:
  struct Take {
    int64_t id = 0;
    int32_t num_required = 1;
    OpKernelContext* ctx = nullptr;
    DoneCallback done;
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = 0;
    bool registered = false;
  };
  // Keeps the accumulator alive for a cancellation callback.
  struct AccumulatorRef {
    explicit AccumulatorRef(Accumulator* a) : a(a) { a->Ref(); }
    ~AccumulatorRef() { a->Unref(); }
    void Cancel(int64_t id) const { a->Cancel(id); }
    Accumulator* a;
  };
  // A finished take's callback, run after mu_ is released.
  struct Done {
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = 0;
    bool registered = false;
    DoneCallback fn;
  };

  static Done Finish(Take* t) {
    return Done{t->cm, t->token, t->registered, std::move(t->done)};
  }

  void FlushLocked(std::vector<Done>* done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!takes_.empty() && counter_ >= takes_.front().num_required) {
      Take& t = takes_.front();
      ++global_step_;
      Status s = TakeLocked(t.ctx);
      if (!s.ok()) t.ctx->SetStatus(s);
      counter_ = 0;
      done->push_back(Finish(&t));
      takes_.pop_front();
    }
  }

  void Cancel(int64_t id) {
    std::vector<Done> done;
    {
      absl::MutexLock l(&mu_);
      CancelLocked(id, &done);
    }
    RunDone(&done);
  }

  void CancelLocked(int64_t id, std::vector<Done>* done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = takes_.begin(); it != takes_.end(); ++it) {
      if (it->id != id) continue;
      it->ctx->SetStatus(errors::Cancelled("TakeGrad operation was cancelled"));
      done->push_back(Finish(&*it));
      takes_.erase(it);
      return;
    }
  }

  static void RunDone(std::vector<Done>* done) {
    for (Done& d : *done) {
      if (d.registered) d.cm->DeregisterCallback(d.token);
      d.fn();
    }
  }

  const std::string name_;
  const AccumulatorDefinition def_;
  int64_t global_step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::list<Take> takes_ ABSL_GUARDED_BY(mu_);
};

// Dense gradients: input 2 is the gradient, output 0 the result.
class DenseAccumulator : public Accumulator {
 public:
  using Accumulator::Accumulator;

 protected:
  Status AddLocked(OpKernelContext* ctx, bool) override {
    const Tensor& g = ctx->input(2);
    if (g.dtype() != def().dtype) {
      return errors::InvalidArgument(
          "gradient has type ", DataTypeString(g.dtype()),
          " but the accumulator holds ", DataTypeString(def().dtype));
    }
    if (counter_ > 0 && g.shape() != sum_.shape()) {
      return errors::InvalidArgument("Shape mismatch: expected ",
                                     sum_.shape().DebugString(), ", got ",
                                     g.shape().DebugString());
    }
    if (!def().shape.IsCompatibleWith(g.shape())) {
      return errors::InvalidArgument("Shape mismatch: expected ",
                                     def().shape.DebugString(), ", got ",
                                     g.shape().DebugString());
    }
    if (counter_ == 0) {
      RETURN_IF_ERROR(ctx->allocate_temp(g.dtype(), g.shape(), &sum_));
      if (g.TotalBytes() > 0) {
        std::memcpy(sum_.raw_data(), g.raw_data(), g.TotalBytes());
      }
      return absl::OkStatus();
    }
    DispatchFloat(g.dtype(), [&]<typename T>() {
      AddValues(g.data<T>(), g.NumElements(), sum_.data<T>());
    });
    return absl::OkStatus();
  }

  Status TakeLocked(OpKernelContext* ctx) override {
    if (def().mean && counter_ > 1) {
      DispatchFloat(sum_.dtype(), [&]<typename T>() {
        ScaleValues(sum_.data<T>(), sum_.NumElements(),
                    static_cast<T>(counter_));
      });
    }
    ctx->set_output(0, std::move(sum_));
    sum_ = Tensor();
    return absl::OkStatus();
  }

 private:
  Tensor sum_ ABSL_GUARDED_BY(mu_);
};

// IndexedSlices: inputs 2..4 are indices, values and dense shape; outputs
// 0..2 the same.
class SparseAccumulator : public Accumulator {
 public:
  using Accumulator::Accumulator;

 protected:
  Status AddLocked(OpKernelContext* ctx, bool has_known_shape) override {
    const Tensor& indices = ctx->input(2);
    const Tensor& values = ctx->input(3);
    const Tensor& dense_shape = ctx->input(4);
    const PartialTensorShape& shape = def().shape;
    if (values.dtype() != def().dtype) {
      return errors::InvalidArgument(
          "gradient_values has type ", DataTypeString(values.dtype()),
          " but the accumulator holds ", DataTypeString(def().dtype));
    }
    if (indices.dims() != 1) {
      return errors::InvalidArgument(
          "Input indices should be vector but received shape: ",
          indices.shape().DebugString());
    }
    if (values.dims() < 1) {
      return errors::InvalidArgument("Values cannot be 0-dimensional.");
    }
    const int64_t nnz = indices.dim_size(0);
    if (values.dim_size(0) != nnz) {
      return errors::InvalidArgument("Expected ", nnz,
                                     " non-empty input values, got ",
                                     values.dim_size(0));
    }
    if (has_known_shape) {
      if (dense_shape.dims() != 1) {
        return errors::InvalidArgument(
            "gradient_shape must be a vector, got shape ",
            dense_shape.shape().DebugString());
      }
      if (shape.dims() > dense_shape.NumElements()) {
        return errors::InvalidArgument(
            "Shape mismatch: expected shape rank at least ", shape.dims(),
            ", got ", dense_shape.NumElements());
      }
      for (int i = 0; i < shape.dims(); ++i) {
        const int64_t got = dense_shape.data<int64_t>()[i];
        if (shape.dim_size(i) != -1 && shape.dim_size(i) != got) {
          return errors::InvalidArgument("Shape mismatch: expected shape dim ",
                                         i, " to be ", shape.dim_size(i),
                                         ", got ", got);
        }
      }
    }
    const int64_t* idx = indices.data<int64_t>();
    for (int64_t i = 0; i < nnz; ++i) {
      if (idx[i] < 0) {
        return errors::InvalidArgument("index of slice ", i,
                                       " is negative: ", idx[i]);
      }
      if (shape.dims() > 0 && shape.dim_size(0) != -1 &&
          idx[i] >= shape.dim_size(0)) {
        return errors::InvalidArgument("Shape mismatch: index of slice ", i,
                                       " exceeded limits of shape; index is ",
                                       idx[i], " exceeded ", shape.dim_size(0));
      }
    }
    TensorShape row_shape = values.shape();
    row_shape.RemoveDim(0);
    if (counter_ > 0) {
      if (row_shape != row_shape_) {
        return errors::InvalidArgument(
            "Shape mismatch: expected rows of shape ", row_shape_.DebugString(),
            ", got values of shape ", values.shape().DebugString());
      }
    } else {
      if (shape.dims() > values.dims()) {
        return errors::InvalidArgument(
            "Shape mismatch: expected values rank at least ", shape.dims(),
            ", got ", values.dims());
      }
      for (int i = 1; i < shape.dims(); ++i) {
        if (shape.dim_size(i) != -1 &&
            shape.dim_size(i) != values.dim_size(i)) {
          return errors::InvalidArgument("Shape mismatch: expected values dim ",
                                         i, " to be ", shape.dim_size(i),
                                         ", got ", values.dim_size(i));
        }
      }
      rows_.clear();
      row_shape_ = row_shape;
    }
    const int64_t width = row_shape.num_elements();
    DispatchFloat(values.dtype(), [&]<typename T>() {
      const T* v = values.data<T>();
      // Rows of a repeated index within this gradient count once.
      std::vector<int64_t> seen;
      seen.reserve(static_cast<size_t>(nnz));
      for (int64_t i = 0; i < nnz; ++i) {
        Row& row = rows_[idx[i]];
        if (row.values.empty()) row.values.assign(width * sizeof(T), 0);
        AddValues(v + i * width, width,
                  reinterpret_cast<T*>(row.values.data()));
        if (row.last_gradient != counter_ + 1) {
          row.last_gradient = counter_ + 1;
          ++row.count;
        }
      }
    });
    return absl::OkStatus();
  }

  Status TakeLocked(OpKernelContext* ctx) override {
    const int64_t n = static_cast<int64_t>(rows_.size());
    TensorShape values_shape = row_shape_;
    values_shape.InsertDim(0, n);
    Tensor indices, values, dense_shape;
    RETURN_IF_ERROR(ctx->allocate_temp(DT_INT64, TensorShape({n}), &indices));
    RETURN_IF_ERROR(ctx->allocate_temp(def().dtype, values_shape, &values));
    RETURN_IF_ERROR(ctx->allocate_temp(
        DT_INT64, TensorShape({values_shape.dims()}), &dense_shape));
    const int64_t width = row_shape_.num_elements();
    DispatchFloat(def().dtype, [&]<typename T>() {
      T* out = values.data<T>();
      int64_t k = 0;
      for (auto& [index, row] : rows_) {
        indices.data<int64_t>()[k] = index;
        const T* sum = reinterpret_cast<const T*>(row.values.data());
        for (int64_t j = 0; j < width; ++j) {
          out[k * width + j] =
              def().mean ? sum[j] / static_cast<T>(row.count) : sum[j];
        }
        ++k;
      }
    });
    int64_t* ds = dense_shape.data<int64_t>();
    ds[0] = def().shape.dims() > 0 ? def().shape.dim_size(0) : -1;
    for (int i = 0; i < row_shape_.dims(); ++i)
      ds[i + 1] = row_shape_.dim_size(i);
    rows_.clear();
    ctx->set_output(0, std::move(indices));
    ctx->set_output(1, std::move(values));
    ctx->set_output(2, std::move(dense_shape));
    return absl::OkStatus();
  }

 private:
  struct Row {
    std::vector<char> values;   // The row's sum, as T[width].
    int32_t count = 0;          // Gradients that touched the row.
    int32_t last_gradient = 0;  // The counter_ + 1 of the last one.
  };
  std::map<int64_t, Row> rows_ ABSL_GUARDED_BY(mu_);
  TensorShape row_shape_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------
// Creating ops

constexpr char kCreateDoc[] =
    "dtype: the type of the gradients (float or double).\n"
    "shape: the shape of the gradients; gradients must be compatible with "
    "it.\n"
    "container: the ResourceMgr container (the device's default when "
    "empty).\n"
    "shared_name: the accumulator's name in the container (the node name "
    "when empty); nodes naming the same accumulator must agree on its "
    "definition.\n"
    "reduction_type: MEAN (the default) or SUM of the gradients.";

#define RUNNEL_ACCUMULATOR_ATTRS        \
  Attr("dtype: numbertype")             \
      .Attr("shape: shape")             \
      .Attr("container: string = ''")   \
      .Attr("shared_name: string = ''") \
      .Attr("reduction_type: {'MEAN', 'SUM'} = 'MEAN'")

Status RefHandleShape(InferenceContext* c) {
  c->set_output(0, PartialTensorShape({2}));
  return absl::OkStatus();
}

REGISTER_OP("ConditionalAccumulator")
    .Output("handle: Ref(string)")
    .RUNNEL_ACCUMULATOR_ATTRS.SetIsStateful()
    .SetShapeFn(RefHandleShape)
    .Doc(absl::StrCat(
        "An accumulator of dense gradients (Note [Accumulator semantics]).\n"
        "handle: [container, name] of the accumulator, by reference.\n",
        kCreateDoc));

REGISTER_OP("ResourceConditionalAccumulator")
    .Output("handle: resource")
    .RUNNEL_ACCUMULATOR_ATTRS.SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat("An accumulator of dense gradients, by resource handle.\n"
                      "handle: the handle to the accumulator.\n",
                      kCreateDoc));

REGISTER_OP("SparseConditionalAccumulator")
    .Output("handle: Ref(string)")
    .RUNNEL_ACCUMULATOR_ATTRS.SetIsStateful()
    .SetShapeFn(RefHandleShape)
    .Doc(absl::StrCat(
        "An accumulator of sparse gradients (IndexedSlices: indices, rows "
        "and dense shape).\n"
        "handle: [container, name] of the accumulator, by reference.\n",
        kCreateDoc));

// Makes (or finds) the accumulator; kRef: outputs a Ref(string) handle,
// else a DT_RESOURCE handle.
template <bool kRef>
class AccumulatorCreateKernel : public OpKernel {
 public:
  AccumulatorCreateKernel(OpKernelConstruction* c, const char* kind)
      : OpKernel(c) {
    def_.kind = kind;
    std::string reduction;
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &def_.dtype));
    OP_REQUIRES_OK(c, c->GetAttr("shape", &def_.shape));
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name_));
    OP_REQUIRES_OK(c, c->GetAttr("reduction_type", &reduction));
    def_.mean = reduction != "SUM";
    OP_REQUIRES(c, def_.dtype == DT_FLOAT || def_.dtype == DT_DOUBLE,
                errors::InvalidArgument(
                    kind, " accumulates float or double gradients, not ",
                    DataTypeString(def_.dtype)));
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    ResourceMgr* rm = ctx->resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no resource manager"));
    const std::string container =
        container_.empty() ? rm->default_container() : container_;
    const std::string name = shared_name_.empty() ? this->name() : shared_name_;
    Accumulator* acc = nullptr;
    OP_REQUIRES_OK(ctx,
                   rm->LookupOrCreate<Accumulator>(
                       container, name, &acc, [&](Accumulator** out) -> Status {
                         if (def_.kind == kDense) {
                           *out = new DenseAccumulator(name, def_);
                         } else {
                           *out = new SparseAccumulator(name, def_);
                         }
                         return absl::OkStatus();
                       }));
    ScopedUnref unref(acc);
    OP_REQUIRES_OK(ctx, acc->Matches(def_));
    if constexpr (kRef) {
      absl::MutexLock l(&mu_);
      if (!handle_.IsInitialized()) {
        OP_REQUIRES_OK(
            ctx, ctx->allocate_temp(DT_STRING, TensorShape({2}), &handle_));
        handle_.data<tstring>()[0] = container;
        handle_.data<tstring>()[1] = name;
      }
      ctx->set_output_ref(0, &mu_, &handle_);
    } else {
      Tensor handle;
      OP_REQUIRES_OK(ctx,
                     ctx->allocate_temp(DT_RESOURCE, TensorShape({}), &handle));
      handle.scalar<ResourceHandle>() = MakeResourceHandle<Accumulator>(
          container, name,
          ctx->device() != nullptr ? ctx->device()->name() : std::string());
      ctx->set_output(0, std::move(handle));
    }
  }

 private:
  AccumulatorDefinition def_;
  std::string container_;
  std::string shared_name_;
  absl::Mutex mu_;
  Tensor handle_ ABSL_GUARDED_BY(mu_);  // kRef: [container, name].
};

class DenseRefCreateKernel : public AccumulatorCreateKernel<true> {
 public:
  explicit DenseRefCreateKernel(OpKernelConstruction* c)
      : AccumulatorCreateKernel(c, kDense) {}
};
class DenseResourceCreateKernel : public AccumulatorCreateKernel<false> {
 public:
  explicit DenseResourceCreateKernel(OpKernelConstruction* c)
      : AccumulatorCreateKernel(c, kDense) {}
};
class SparseRefCreateKernel : public AccumulatorCreateKernel<true> {
 public:
  explicit SparseRefCreateKernel(OpKernelConstruction* c)
      : AccumulatorCreateKernel(c, kSparse) {}
};
REGISTER_KERNEL_BUILDER(Name("ConditionalAccumulator").Device(kDeviceCpu),
                        DenseRefCreateKernel);
REGISTER_KERNEL_BUILDER(
    Name("ResourceConditionalAccumulator").Device(kDeviceCpu),
    DenseResourceCreateKernel);
REGISTER_KERNEL_BUILDER(Name("SparseConditionalAccumulator").Device(kDeviceCpu),
                        SparseRefCreateKernel);

// ---------------------------------------------------------------------------
// Access: the accumulator named by input 0 (a Ref(string) or a resource).

Status LookupAccumulator(OpKernelContext* ctx, Accumulator** acc) {
  if (ctx->input_dtype(0) == DT_RESOURCE) {
    const ResourceHandle* h = nullptr;
    RETURN_IF_ERROR(HandleFromInput(ctx, 0, &h));
    return LookupResource(ctx, *h, acc);
  }
  std::string container, name;
  {
    absl::Mutex* mu = ctx->input_ref_mutex(0);  // Null for a non-ref input.
    std::optional<absl::MutexLock> l;
    if (mu != nullptr) l.emplace(mu);
    const Tensor& t = ctx->input(0);
    if (t.dtype() != DT_STRING || t.NumElements() != 2) {
      return errors::InvalidArgument(
          "Resource handle must have 2 elements, but had shape: ",
          t.shape().DebugString());
    }
    container = t.data<tstring>()[0];
    name = t.data<tstring>()[1];
  }
  ResourceMgr* rm = ctx->resource_manager();
  if (rm == nullptr) return errors::FailedPrecondition("no resource manager");
  return rm->Lookup<Accumulator>(container, name, acc);
}

// InvalidArgument unless input `i` is a scalar; returns its value.
template <typename T>
Status ScalarInput(OpKernelContext* ctx, int i, const char* what, T* value) {
  const Tensor& t = ctx->input(i);
  if (t.dims() != 0) {
    return errors::InvalidArgument("Argument ", what,
                                   " must be scalar, but had bad shape ",
                                   t.shape().DebugString());
  }
  *value = t.scalar<T>();
  return absl::OkStatus();
}

// InvalidArgument unless the accumulator is of `kind` and the node's dtype
// attr is its dtype.
Status CheckKindAndType(OpKernelContext* ctx, const Accumulator& acc,
                        const char* kind, DataType node_dtype) {
  if (acc.def().kind != kind) {
    return errors::InvalidArgument("this op needs a ", kind, " but got a ",
                                   acc.def().kind);
  }
  if (node_dtype != acc.def().dtype) {
    return errors::InvalidArgument("dtype ", DataTypeString(node_dtype),
                                   " does not match the accumulator's ",
                                   DataTypeString(acc.def().dtype));
  }
  return absl::OkStatus();
}

// AccumulatorNumAccumulated / ResourceAccumulatorNumAccumulated.
class NumAccumulatedKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    Accumulator* acc = nullptr;
    OP_REQUIRES_OK(ctx, LookupAccumulator(ctx, &acc));
    ScopedUnref unref(acc);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<int32_t>() = acc->num_accumulated();
  }
};

// AccumulatorSetGlobalStep / ResourceAccumulatorSetGlobalStep.
class SetGlobalStepKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    int64_t step = 0;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "new_global_step", &step));
    Accumulator* acc = nullptr;
    OP_REQUIRES_OK(ctx, LookupAccumulator(ctx, &acc));
    ScopedUnref unref(acc);
    acc->SetGlobalStep(step);
  }
};

// (Sparse)AccumulatorApplyGradient / ResourceAccumulatorApplyGradient.
class ApplyGradientKernel : public OpKernel {
 public:
  ApplyGradientKernel(OpKernelConstruction* c, const char* kind)
      : OpKernel(c), kind_(kind) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    if (kind_ == kSparse) {
      OP_REQUIRES_OK(c, c->GetAttr("has_known_shape", &has_known_shape_));
    }
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    int64_t local_step = 0;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "local_step", &local_step));
    Accumulator* acc = nullptr;
    OP_REQUIRES_OK(ctx, LookupAccumulator(ctx, &acc));
    ScopedUnref unref(acc);
    OP_REQUIRES_OK(ctx, CheckKindAndType(ctx, *acc, kind_, dtype_));
    OP_REQUIRES_OK(ctx, acc->ApplyGrad(local_step, ctx, has_known_shape_));
  }

 private:
  const char* kind_;
  DataType dtype_ = DT_INVALID;
  bool has_known_shape_ = false;
};

// (Sparse)AccumulatorTakeGradient / ResourceAccumulatorTakeGradient.
class TakeGradientKernel : public AsyncOpKernel {
 public:
  TakeGradientKernel(OpKernelConstruction* c, const char* kind)
      : AsyncOpKernel(c), kind_(kind) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
  }
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    int32_t num_required = 0;
    OP_REQUIRES_OK_ASYNC(
        ctx, ScalarInput(ctx, 1, "num_required", &num_required), done);
    OP_REQUIRES_ASYNC(
        ctx, num_required > 0,
        errors::InvalidArgument(
            "Argument num_required must be positive, but was ", num_required),
        done);
    Accumulator* acc = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, LookupAccumulator(ctx, &acc), done);
    Status s = CheckKindAndType(ctx, *acc, kind_, dtype_);
    if (!s.ok()) {
      acc->Unref();
      ctx->SetStatus(s);
      done();
      return;
    }
    acc->TryTakeGrad(num_required, ctx, [acc, done = std::move(done)] {
      done();
      acc->Unref();
    });
  }

 private:
  const char* kind_;
  DataType dtype_ = DT_INVALID;
};

class DenseApplyKernel : public ApplyGradientKernel {
 public:
  explicit DenseApplyKernel(OpKernelConstruction* c)
      : ApplyGradientKernel(c, kDense) {}
};
class SparseApplyKernel : public ApplyGradientKernel {
 public:
  explicit SparseApplyKernel(OpKernelConstruction* c)
      : ApplyGradientKernel(c, kSparse) {}
};
class DenseTakeKernel : public TakeGradientKernel {
 public:
  explicit DenseTakeKernel(OpKernelConstruction* c)
      : TakeGradientKernel(c, kDense) {}
};
class SparseTakeKernel : public TakeGradientKernel {
 public:
  explicit SparseTakeKernel(OpKernelConstruction* c)
      : TakeGradientKernel(c, kSparse) {}
};

Status ScalarInput1(InferenceContext* c) {
  PartialTensorShape unused;
  return c->WithRank(1, 0, &unused);
}

REGISTER_OP("AccumulatorNumAccumulated")
    .Input("handle: Ref(string)")
    .Output("num_accumulated: int32")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("The number of gradients the accumulator holds.");
REGISTER_OP("ResourceAccumulatorNumAccumulated")
    .Input("handle: resource")
    .Output("num_accumulated: int32")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("The number of gradients the accumulator holds.");

constexpr char kSetGlobalStepDoc[] =
    "Sets the accumulator's global step; gradients of older local steps are "
    "dropped from then on.\n"
    "new_global_step: an int64 scalar.";
REGISTER_OP("AccumulatorSetGlobalStep")
    .Input("handle: Ref(string)")
    .Input("new_global_step: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarInput1)
    .Doc(kSetGlobalStepDoc);
REGISTER_OP("ResourceAccumulatorSetGlobalStep")
    .Input("handle: resource")
    .Input("new_global_step: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarInput1)
    .Doc(kSetGlobalStepDoc);

constexpr char kApplyDoc[] =
    "Adds a gradient to the accumulator, or drops it if local_step is older "
    "than the accumulator's global step.\n"
    "local_step: the step the gradient was computed at (int64 scalar).";
REGISTER_OP("AccumulatorApplyGradient")
    .Input("handle: Ref(string)")
    .Input("local_step: int64")
    .Input("gradient: dtype")
    .Attr("dtype: numbertype")
    .SetIsStateful()
    .SetShapeFn(ScalarInput1)
    .Doc(kApplyDoc);
REGISTER_OP("ResourceAccumulatorApplyGradient")
    .Input("handle: resource")
    .Input("local_step: int64")
    .Input("gradient: dtype")
    .Attr("dtype: numbertype")
    .SetIsStateful()
    .SetShapeFn(ScalarInput1)
    .Doc(kApplyDoc);
REGISTER_OP("SparseAccumulatorApplyGradient")
    .Input("handle: Ref(string)")
    .Input("local_step: int64")
    .Input("gradient_indices: int64")
    .Input("gradient_values: dtype")
    .Input("gradient_shape: int64")
    .Attr("dtype: numbertype")
    .Attr("has_known_shape: bool")
    .SetIsStateful()
    .SetShapeFn(ScalarInput1)
    .Doc(absl::StrCat(
        kApplyDoc,
        "\ngradient_indices: the rows' indices in the dense gradient.\n"
        "gradient_values: the rows.\n"
        "gradient_shape: the dense shape (read when has_known_shape)."));

// The average's shape is the accumulator's, which the graph does not know.
Status TakeGradientShape(InferenceContext* c) {
  RETURN_IF_ERROR(ScalarInput1(c));
  return shape_fns::UnknownShape(c);
}

constexpr char kTakeDoc[] =
    "Waits until the accumulator holds at least num_required gradients, "
    "then returns their mean (or sum), empties it and adds one to its "
    "global step.\n"
    "num_required: a positive int32 scalar.";
REGISTER_OP("AccumulatorTakeGradient")
    .Input("handle: Ref(string)")
    .Input("num_required: int32")
    .Output("average: dtype")
    .Attr("dtype: numbertype")
    .SetIsStateful()
    .SetShapeFn(TakeGradientShape)
    .Doc(kTakeDoc);
REGISTER_OP("ResourceAccumulatorTakeGradient")
    .Input("handle: resource")
    .Input("num_required: int32")
    .Output("average: dtype")
    .Attr("dtype: numbertype")
    .SetIsStateful()
    .SetShapeFn(TakeGradientShape)
    .Doc(kTakeDoc);
REGISTER_OP("SparseAccumulatorTakeGradient")
    .Input("handle: Ref(string)")
    .Input("num_required: int32")
    .Output("indices: int64")
    .Output("values: dtype")
    .Output("shape: int64")
    .Attr("dtype: numbertype")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) -> Status {
      RETURN_IF_ERROR(ScalarInput1(c));
      c->set_output(0, PartialTensorShape({-1}));
      c->set_output(1, PartialTensorShape());
      c->set_output(2, PartialTensorShape({-1}));
      return absl::OkStatus();
    })
    .Doc(absl::StrCat(kTakeDoc,
                      "\nindices: the rows' indices, increasing.\n"
                      "values: the rows' means (or sums).\n"
                      "shape: the dense shape (dimension 0 is -1 when the "
                      "accumulator's shape does not give it)."));

REGISTER_KERNEL_BUILDER(Name("AccumulatorNumAccumulated").Device(kDeviceCpu),
                        NumAccumulatedKernel);
REGISTER_KERNEL_BUILDER(
    Name("ResourceAccumulatorNumAccumulated").Device(kDeviceCpu),
    NumAccumulatedKernel);
REGISTER_KERNEL_BUILDER(Name("AccumulatorSetGlobalStep").Device(kDeviceCpu),
                        SetGlobalStepKernel);
REGISTER_KERNEL_BUILDER(
    Name("ResourceAccumulatorSetGlobalStep").Device(kDeviceCpu),
    SetGlobalStepKernel);
REGISTER_KERNEL_BUILDER(Name("AccumulatorApplyGradient").Device(kDeviceCpu),
                        DenseApplyKernel);
REGISTER_KERNEL_BUILDER(
    Name("ResourceAccumulatorApplyGradient").Device(kDeviceCpu),
    DenseApplyKernel);
REGISTER_KERNEL_BUILDER(
    Name("SparseAccumulatorApplyGradient").Device(kDeviceCpu),
    SparseApplyKernel);
REGISTER_KERNEL_BUILDER(Name("AccumulatorTakeGradient").Device(kDeviceCpu),
                        DenseTakeKernel);
REGISTER_KERNEL_BUILDER(
    Name("ResourceAccumulatorTakeGradient").Device(kDeviceCpu),
    DenseTakeKernel);
REGISTER_KERNEL_BUILDER(
    Name("SparseAccumulatorTakeGradient").Device(kDeviceCpu), SparseTakeKernel);

REGISTER_NO_GRADIENT("AccumulatorTakeGradient",
                     "an accumulator's contents are not a differentiable "
                     "function of its handle");
REGISTER_NO_GRADIENT("ResourceAccumulatorTakeGradient",
                     "an accumulator's contents are not a differentiable "
                     "function of its handle");
REGISTER_NO_GRADIENT("SparseAccumulatorTakeGradient",
                     "an accumulator's contents are not a differentiable "
                     "function of its handle");
REGISTER_NO_GRADIENT("AccumulatorNumAccumulated", "its output is a count");
REGISTER_NO_GRADIENT("ResourceAccumulatorNumAccumulated",
                     "its output is a count");

}  // namespace
}  // namespace runnel
