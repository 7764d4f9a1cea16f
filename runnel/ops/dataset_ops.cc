// tf.data's source and structural datasets (TF's dataset_ops.cc): tensors
// and slices of tensors, ranges, and repeat / take / skip / batch over
// another dataset, plus the pass-throughs TF 2 puts around every input
// pipeline (ModelDataset, OptimizeDataset[V2]: autotuning and graph
// rewrites Runnel does not do) and DatasetCardinality. Each op outputs a
// scalar variant holding its DatasetBase (runnel/framework/dataset.h);
// iterators are in iterator_ops.cc.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Shared pieces

// The dtypes and shapes every dataset op declares.
struct Structure {
  DataTypeVector dtypes;
  std::vector<PartialTensorShape> shapes;
};

Status ReadStructure(OpKernelConstruction* c, const char* types_attr,
                     Structure* s) {
  std::vector<DataType> dtypes;
  RETURN_IF_ERROR(c->GetAttr(types_attr, &dtypes));
  RETURN_IF_ERROR(c->GetAttr("output_shapes", &s->shapes));
  s->dtypes.assign(dtypes.begin(), dtypes.end());
  if (s->shapes.size() != s->dtypes.size()) {
    return errors::InvalidArgument(types_attr, " has ", s->dtypes.size(),
                                   " types but output_shapes has ",
                                   s->shapes.size(), " shapes");
  }
  return absl::OkStatus();
}

// A dataset with a fixed structure and a name for errors.
class StructuredDataset : public DatasetBase {
 public:
  StructuredDataset(Structure s, std::string debug)
      : structure_(std::move(s)), debug_(std::move(debug)) {}
  const DataTypeVector& output_dtypes() const override {
    return structure_.dtypes;
  }
  const std::vector<PartialTensorShape>& output_shapes() const override {
    return structure_.shapes;
  }
  std::string DebugString() const override { return debug_; }

 private:
  const Structure structure_;
  const std::string debug_;
};

// A scalar int64 input (a count, a size); InvalidArgument naming `what`.
Status ScalarInt64(OpKernelContext* ctx, int i, const char* what,
                   int64_t* out) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_INT64 || t.NumElements() != 1) {
    return errors::InvalidArgument(what, " must be a scalar int64, not ",
                                   DataTypeString(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  *out = t.flat<int64_t>()[0];
  return absl::OkStatus();
}

// The input dataset of a transformation, with its structure checked
// against the op's declared output structure where they must agree.
Status InputDataset(OpKernelContext* ctx, int i, DatasetPtr* out) {
  ASSIGN_OR_RETURN(*out, DatasetFromVariantTensor(ctx->input(i)));
  return absl::OkStatus();
}

// Base of the kernels here: reads the structure, builds the dataset in
// MakeDataset, outputs it.
class DatasetOpKernel : public OpKernel {
 public:
  DatasetOpKernel(OpKernelConstruction* c, const char* types_attr)
      : OpKernel(c) {
    OP_REQUIRES_OK(c, ReadStructure(c, types_attr, &structure_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<DatasetPtr> ds = MakeDataset(ctx);
    OP_REQUIRES_OK(ctx, ds.status());
    ctx->set_output(0, DatasetToVariantTensor(*std::move(ds)));
  }

 protected:
  virtual StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) = 0;
  const Structure& structure() const { return structure_; }

 private:
  Structure structure_;
};

Status CheckComponents(OpKernelContext* ctx, const Structure& s, bool sliced) {
  if (ctx->num_inputs() != static_cast<int>(s.dtypes.size())) {
    return errors::InvalidArgument("expected ", s.dtypes.size(),
                                   " components, got ", ctx->num_inputs());
  }
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    const Tensor& t = ctx->input(i);
    if (t.dtype() != s.dtypes[i]) {
      return errors::InvalidArgument("component ", i, " is ",
                                     DataTypeString(t.dtype()), ", expected ",
                                     DataTypeString(s.dtypes[i]));
    }
    if (sliced) {
      if (t.dims() < 1) {
        return errors::InvalidArgument(
            "component ", i,
            " is a scalar; every component of a "
            "TensorSliceDataset needs a leading dimension to slice");
      }
      if (t.dim_size(0) != ctx->input(0).dim_size(0)) {
        return errors::InvalidArgument(
            "all components must have the same size in dimension 0: "
            "component 0 has shape ",
            ctx->input(0).shape().DebugString(), ", component ", i,
            " has shape ", t.shape().DebugString());
      }
    }
  }
  return absl::OkStatus();
}

std::string ShapeList(const std::vector<Tensor>& ts) {
  std::string s;
  for (const Tensor& t : ts) {
    absl::StrAppend(&s, s.empty() ? "" : ", ", t.shape().DebugString());
  }
  return s;
}

// ---------------------------------------------------------------------------
// TensorDataset: one element, the components.

class TensorDataset final : public StructuredDataset {
 public:
  TensorDataset(Structure s, std::vector<Tensor> components)
      : StructuredDataset(
            std::move(s),
            absl::StrCat("TensorDataset(", ShapeList(components), ")")),
        components_(std::move(components)) {}
  int64_t Cardinality() const override { return 1; }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    return std::unique_ptr<IteratorBase>(new Iterator(this));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(const TensorDataset* d) : d_(d) {}
    Status GetNext(IteratorContext*, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      *end = done_;
      if (!done_) *out = d_->components_;
      done_ = true;
      return absl::OkStatus();
    }
    Status Save(IteratorStateWriter* w) override {
      return w->WriteScalar("done", done_ ? 1 : 0);
    }
    Status Restore(IteratorContext*, IteratorStateReader* r) override {
      int64_t done = 0;
      RETURN_IF_ERROR(ReadInt64InRange(r, "done", 0, 1, &done));
      done_ = done == 1;
      return absl::OkStatus();
    }

   private:
    const TensorDataset* d_;
    bool done_ = false;
  };
  const std::vector<Tensor> components_;
};

REGISTER_OP("TensorDataset")
    .Input("components: Toutput_types")
    .Output("handle: variant")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("A dataset of one element: `components`.");

class TensorDatasetKernel : public DatasetOpKernel {
 public:
  explicit TensorDatasetKernel(OpKernelConstruction* c)
      : DatasetOpKernel(c, "Toutput_types") {}
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckComponents(ctx, structure(), false));
    std::vector<Tensor> components;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      components.push_back(ctx->input(i));
    }
    RETURN_IF_ERROR(CheckElement(components, structure().dtypes,
                                 structure().shapes, "TensorDataset"));
    return std::make_shared<TensorDataset>(structure(), std::move(components));
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorDataset").Device(kDeviceCpu),
                        TensorDatasetKernel);

// ---------------------------------------------------------------------------
// TensorSliceDataset: element i is row i of every component.

class TensorSliceDataset final : public StructuredDataset {
 public:
  TensorSliceDataset(Structure s, std::vector<Tensor> components)
      : StructuredDataset(
            std::move(s),
            absl::StrCat("TensorSliceDataset(", ShapeList(components), ")")),
        components_(std::move(components)) {}
  int64_t Cardinality() const override { return components_[0].dim_size(0); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    return std::unique_ptr<IteratorBase>(new Iterator(this));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(const TensorSliceDataset* d) : d_(d) {}
    Status GetNext(IteratorContext*, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      *end = next_ >= d_->Cardinality();
      if (*end) return absl::OkStatus();
      for (const Tensor& c : d_->components_) {
        ASSIGN_OR_RETURN(Tensor row, CopyBatchSlice(c, next_));
        out->push_back(std::move(row));
      }
      ++next_;
      return absl::OkStatus();
    }
    Status Save(IteratorStateWriter* w) override {
      return w->WriteScalar("next", next_);
    }
    Status Restore(IteratorContext*, IteratorStateReader* r) override {
      return ReadInt64InRange(r, "next", 0, d_->Cardinality(), &next_);
    }

   private:
    const TensorSliceDataset* d_;
    int64_t next_ = 0;
  };
  const std::vector<Tensor> components_;
};

REGISTER_OP("TensorSliceDataset")
    .Input("components: Toutput_types")
    .Output("handle: variant")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("is_files: bool = false")
    .Attr("metadata: string = ''")
    .Attr("replicate_on_split: bool = false")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "A dataset whose element i is row i (along dimension 0) of every "
        "component; all components must have the same size in dimension 0.");

class TensorSliceDatasetKernel : public DatasetOpKernel {
 public:
  explicit TensorSliceDatasetKernel(OpKernelConstruction* c)
      : DatasetOpKernel(c, "Toutput_types") {}
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckComponents(ctx, structure(), true));
    std::vector<Tensor> components;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      TensorShape row = t.shape();
      row.RemoveDim(0);
      if (!structure().shapes[i].IsCompatibleWith(row)) {
        return errors::InvalidArgument(
            "component ", i, " slices have shape ", row.DebugString(),
            ", but output_shapes says ", structure().shapes[i].DebugString());
      }
      components.push_back(t);
    }
    return std::make_shared<TensorSliceDataset>(structure(),
                                                std::move(components));
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorSliceDataset").Device(kDeviceCpu),
                        TensorSliceDatasetKernel);

// ---------------------------------------------------------------------------
// RangeDataset: start, start + step, ... before stop.

class RangeDataset final : public StructuredDataset {
 public:
  RangeDataset(Structure s, int64_t start, int64_t stop, int64_t step)
      : StructuredDataset(
            std::move(s),
            absl::StrCat("RangeDataset(", start, ", ", stop, ", ", step, ")")),
        start_(start),
        stop_(stop),
        step_(step) {}
  int64_t Cardinality() const override {
    // Computed in 128 bits: stop - start may overflow int64.
    const __int128 span = static_cast<__int128>(stop_) - start_;
    if (step_ > 0 ? span <= 0 : span >= 0) return 0;
    const __int128 n = (span + (step_ > 0 ? step_ - 1 : step_ + 1)) / step_;
    return static_cast<int64_t>(n);
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    return std::unique_ptr<IteratorBase>(new Iterator(this));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(const RangeDataset* d) : d_(d), n_(d->Cardinality()) {}
    Status GetNext(IteratorContext*, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      *end = i_ >= n_;
      if (*end) return absl::OkStatus();
      const int64_t v =
          static_cast<int64_t>(static_cast<__int128>(d_->start_) +
                               static_cast<__int128>(i_) * d_->step_);
      ++i_;
      const DataType dt = d_->output_dtypes()[0];
      Tensor t(dt, TensorShape({}));
      switch (dt) {
        case DT_INT64:
          t.scalar<int64_t>() = v;
          break;
        case DT_INT32:
          t.scalar<int32_t>() = static_cast<int32_t>(v);
          break;
        case DT_FLOAT:
          t.scalar<float>() = static_cast<float>(v);
          break;
        case DT_DOUBLE:
          t.scalar<double>() = static_cast<double>(v);
          break;
        default:
          return errors::InvalidArgument("RangeDataset cannot produce ",
                                         DataTypeString(dt));
      }
      out->push_back(std::move(t));
      return absl::OkStatus();
    }
    Status Save(IteratorStateWriter* w) override {
      return w->WriteScalar("next", i_);
    }
    Status Restore(IteratorContext*, IteratorStateReader* r) override {
      return ReadInt64InRange(r, "next", 0, n_, &i_);
    }

   private:
    const RangeDataset* d_;
    const int64_t n_;
    int64_t i_ = 0;
  };
  const int64_t start_, stop_, step_;
};

REGISTER_OP("RangeDataset")
    .Input("start: int64")
    .Input("stop: int64")
    .Input("step: int64")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .Attr("replicate_on_split: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "The dataset start, start + step, ... up to (not including) stop, "
        "as scalars of output_types[0] (int64, int32, float or double). "
        "`step` must not be 0.");

class RangeDatasetKernel : public DatasetOpKernel {
 public:
  explicit RangeDatasetKernel(OpKernelConstruction* c)
      : DatasetOpKernel(c, "output_types") {
    OP_REQUIRES(c, structure().dtypes.size() == 1,
                errors::InvalidArgument("RangeDataset has one component, not ",
                                        structure().dtypes.size()));
  }
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    int64_t start, stop, step;
    RETURN_IF_ERROR(ScalarInt64(ctx, 0, "start", &start));
    RETURN_IF_ERROR(ScalarInt64(ctx, 1, "stop", &stop));
    RETURN_IF_ERROR(ScalarInt64(ctx, 2, "step", &step));
    if (step == 0) {
      return errors::InvalidArgument("step must be a non-zero integer.");
    }
    return std::make_shared<RangeDataset>(structure(), start, stop, step);
  }
};
REGISTER_KERNEL_BUILDER(Name("RangeDataset").Device(kDeviceCpu),
                        RangeDatasetKernel);

// ---------------------------------------------------------------------------
// Transformations of one input dataset.

class UnaryDataset : public StructuredDataset {
 public:
  UnaryDataset(Structure s, std::string debug, DatasetPtr input)
      : StructuredDataset(std::move(s), std::move(debug)),
        input_(std::move(input)) {}

 protected:
  const DatasetPtr input_;
};

// Checks a transformation's declared structure against its input's dtypes
// (shapes may be refined, so only the dtypes must agree).
Status SameDtypes(const Structure& s, const DatasetBase& input,
                  const std::string& op) {
  if (s.dtypes != input.output_dtypes()) {
    std::vector<std::string> want, have;
    for (DataType t : s.dtypes) want.push_back(DataTypeString(t));
    for (DataType t : input.output_dtypes()) have.push_back(DataTypeString(t));
    return errors::InvalidArgument(
        op, " declares output_types [", absl::StrJoin(want, ", "),
        "] but its input ", input.DebugString(), " produces [",
        absl::StrJoin(have, ", "), "]");
  }
  return absl::OkStatus();
}

// RepeatDataset: the input `count` times (-1: forever).
class RepeatDataset final : public UnaryDataset {
 public:
  RepeatDataset(Structure s, DatasetPtr input, int64_t count)
      : UnaryDataset(std::move(s),
                     absl::StrCat("RepeatDataset(", input->DebugString(), ", ",
                                  count, ")"),
                     input),
        count_(count) {}
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (count_ < 0) return kInfiniteCardinality;
    if (n < 0) return n;
    if (n > std::numeric_limits<int64_t>::max() / count_) {
      return kUnknownCardinality;
    }
    return n * count_;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    return std::unique_ptr<IteratorBase>(new Iterator(this));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(const RepeatDataset* d) : d_(d) {}
    Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      while (d_->count_ < 0 || epoch_ < d_->count_) {
        if (ctx->IsCancelled()) {
          return errors::Cancelled("the step was cancelled");
        }
        if (it_ == nullptr) {
          ASSIGN_OR_RETURN(it_, d_->input_->MakeIterator());
          produced_ = false;
        }
        RETURN_IF_ERROR(it_->GetNext(ctx, out, end));
        if (!*end) {
          produced_ = true;
          return absl::OkStatus();
        }
        it_.reset();
        ++epoch_;
        // An empty input repeated forever would spin: it ends instead (as
        // TF's RepeatDataset does).
        if (!produced_) break;
      }
      *end = true;
      out->clear();
      return absl::OkStatus();
    }
    Status Save(IteratorStateWriter* w) override {
      // Between epochs (and before the first), makes the input iterator
      // the next GetNext would make, so that what its making decides (a
      // reshuffling ShuffleDataset's epoch) is in the checkpoint; the
      // restored chain then continues with the same epochs.
      if (it_ == nullptr && (d_->count_ < 0 || epoch_ < d_->count_)) {
        ASSIGN_OR_RETURN(it_, d_->input_->MakeIterator());
        produced_ = false;
      }
      RETURN_IF_ERROR(w->WriteScalar("epoch", epoch_));
      RETURN_IF_ERROR(w->WriteScalar("produced", produced_ ? 1 : 0));
      RETURN_IF_ERROR(w->WriteScalar("has_input", it_ != nullptr ? 1 : 0));
      if (it_ != nullptr) RETURN_IF_ERROR(SaveIterator(w, "input", it_.get()));
      return absl::OkStatus();
    }
    Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
      int64_t produced = 0, has_input = 0;
      RETURN_IF_ERROR(ReadInt64InRange(
          r, "epoch", 0,
          d_->count_ < 0 ? std::numeric_limits<int64_t>::max() : d_->count_,
          &epoch_));
      RETURN_IF_ERROR(ReadInt64InRange(r, "produced", 0, 1, &produced));
      RETURN_IF_ERROR(ReadInt64InRange(r, "has_input", 0, 1, &has_input));
      produced_ = produced == 1;
      it_.reset();
      if (has_input == 1) {
        ASSIGN_OR_RETURN(it_, d_->input_->MakeIterator());
        RETURN_IF_ERROR(RestoreIterator(ctx, r, "input", it_.get()));
      }
      return absl::OkStatus();
    }

   private:
    const RepeatDataset* d_;
    std::unique_ptr<IteratorBase> it_;
    int64_t epoch_ = 0;
    bool produced_ = false;
  };
  const int64_t count_;
};

// TakeDataset: the first `count` elements (-1: all).
class TakeDataset final : public UnaryDataset {
 public:
  TakeDataset(Structure s, DatasetPtr input, int64_t count)
      : UnaryDataset(std::move(s),
                     absl::StrCat("TakeDataset(", input->DebugString(), ", ",
                                  count, ")"),
                     input),
        count_(count) {}
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (count_ < 0) return n;
    if (n == kUnknownCardinality) return n;
    if (n == kInfiniteCardinality) return count_;
    return std::min(n, count_);
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(new Iterator(this, std::move(in)));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    Iterator(const TakeDataset* d, std::unique_ptr<IteratorBase> in)
        : d_(d), in_(std::move(in)) {}
    Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      if (d_->count_ >= 0 && taken_ >= d_->count_) {
        *end = true;
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(in_->GetNext(ctx, out, end));
      if (!*end) ++taken_;
      return absl::OkStatus();
    }
    Status Save(IteratorStateWriter* w) override {
      RETURN_IF_ERROR(w->WriteScalar("taken", taken_));
      return SaveIterator(w, "input", in_.get());
    }
    Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
      RETURN_IF_ERROR(ReadInt64InRange(
          r, "taken", 0,
          d_->count_ < 0 ? std::numeric_limits<int64_t>::max() : d_->count_,
          &taken_));
      return RestoreIterator(ctx, r, "input", in_.get());
    }

   private:
    const TakeDataset* d_;
    std::unique_ptr<IteratorBase> in_;
    int64_t taken_ = 0;
  };
  const int64_t count_;
};

// SkipDataset: all but the first `count` elements (-1: none).
class SkipDataset final : public UnaryDataset {
 public:
  SkipDataset(Structure s, DatasetPtr input, int64_t count)
      : UnaryDataset(std::move(s),
                     absl::StrCat("SkipDataset(", input->DebugString(), ", ",
                                  count, ")"),
                     input),
        count_(count) {}
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return count_ < 0 && n == kInfiniteCardinality ? 0 : n;
    if (count_ < 0) return 0;
    return std::max<int64_t>(0, n - count_);
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(new Iterator(this, std::move(in)));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    Iterator(const SkipDataset* d, std::unique_ptr<IteratorBase> in)
        : d_(d), in_(std::move(in)) {}
    Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                   bool* end) override {
      while (d_->count_ < 0 || skipped_ < d_->count_) {
        if (ctx->IsCancelled()) {
          return errors::Cancelled("the step was cancelled");
        }
        RETURN_IF_ERROR(in_->GetNext(ctx, out, end));
        if (*end) return absl::OkStatus();
        ++skipped_;
      }
      return in_->GetNext(ctx, out, end);
    }
    Status Save(IteratorStateWriter* w) override {
      RETURN_IF_ERROR(w->WriteScalar("skipped", skipped_));
      return SaveIterator(w, "input", in_.get());
    }
    Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
      RETURN_IF_ERROR(ReadInt64InRange(
          r, "skipped", 0, std::numeric_limits<int64_t>::max(), &skipped_));
      return RestoreIterator(ctx, r, "input", in_.get());
    }

   private:
    const SkipDataset* d_;
    std::unique_ptr<IteratorBase> in_;
    int64_t skipped_ = 0;
  };
  const int64_t count_;
};

constexpr char kRepeat[] = "RepeatDataset";
constexpr char kTake[] = "TakeDataset";
constexpr char kSkip[] = "SkipDataset";

template <const char* kOp>
class CountDatasetKernel : public DatasetOpKernel {
 public:
  explicit CountDatasetKernel(OpKernelConstruction* c)
      : DatasetOpKernel(c, "output_types") {}
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    DatasetPtr input;
    RETURN_IF_ERROR(InputDataset(ctx, 0, &input));
    RETURN_IF_ERROR(SameDtypes(structure(), *input, kOp));
    int64_t count;
    RETURN_IF_ERROR(ScalarInt64(ctx, 1, "count", &count));
    if (std::string_view(kOp) == kRepeat) {
      return std::make_shared<RepeatDataset>(structure(), input, count);
    }
    if (std::string_view(kOp) == kTake) {
      return std::make_shared<TakeDataset>(structure(), input, count);
    }
    return std::make_shared<SkipDataset>(structure(), input, count);
  }
};

#define REGISTER_COUNT_DATASET(OP, DOC)        \
  REGISTER_OP(OP)                              \
      .Input("input_dataset: variant")         \
      .Input("count: int64")                   \
      .Output("handle: variant")               \
      .Attr("output_types: list(type) >= 1")   \
      .Attr("output_shapes: list(shape) >= 1") \
      .Attr("metadata: string = ''")           \
      .SetShapeFn(shape_fns::ScalarShape)      \
      .Doc(DOC)

REGISTER_COUNT_DATASET(kRepeat,
                       "The input's elements `count` times over (-1: "
                       "forever). An empty input ends even when repeated "
                       "forever.");
REGISTER_COUNT_DATASET(kTake,
                       "The first `count` elements of the input (-1: all).");
REGISTER_COUNT_DATASET(kSkip,
                       "The input's elements after the first `count` (-1: "
                       "none).");
REGISTER_KERNEL_BUILDER(Name(kRepeat).Device(kDeviceCpu),
                        CountDatasetKernel<kRepeat>);
REGISTER_KERNEL_BUILDER(Name(kTake).Device(kDeviceCpu),
                        CountDatasetKernel<kTake>);
REGISTER_KERNEL_BUILDER(Name(kSkip).Device(kDeviceCpu),
                        CountDatasetKernel<kSkip>);

// ---------------------------------------------------------------------------
// BatchDataset / BatchDatasetV2: `batch_size` consecutive elements stacked
// along a new dimension 0; the last batch is smaller unless
// drop_remainder.

class BatchDataset final : public UnaryDataset {
 public:
  BatchDataset(Structure s, DatasetPtr input, int64_t batch_size,
               bool drop_remainder)
      : UnaryDataset(std::move(s),
                     absl::StrCat("BatchDataset(", input->DebugString(), ", ",
                                  batch_size, ", ", drop_remainder, ")"),
                     input),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_
                           : (n + batch_size_ - 1) / batch_size_;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(new Iterator(this, std::move(in)));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    Iterator(const BatchDataset* d, std::unique_ptr<IteratorBase> in)
        : d_(d), in_(std::move(in)) {}
    Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      *end = false;
      std::vector<std::vector<Tensor>> elements;
      while (!in_end_ &&
             static_cast<int64_t>(elements.size()) < d_->batch_size_) {
        std::vector<Tensor> e;
        bool e_end = false;
        RETURN_IF_ERROR(in_->GetNext(ctx, &e, &e_end));
        if (e_end) {
          in_end_ = true;
          break;
        }
        elements.push_back(std::move(e));
      }
      if (elements.empty() ||
          (d_->drop_remainder_ &&
           static_cast<int64_t>(elements.size()) < d_->batch_size_)) {
        *end = true;
        return absl::OkStatus();
      }
      const int64_t n = static_cast<int64_t>(elements.size());
      for (size_t c = 0; c < elements[0].size(); ++c) {
        const Tensor& first = elements[0][c];
        TensorShape shape = first.shape();
        shape.InsertDim(0, n);
        ASSIGN_OR_RETURN(Tensor batch, Tensor::Allocate(cpu_allocator(),
                                                        first.dtype(), shape));
        for (int64_t i = 0; i < n; ++i) {
          if (elements[i][c].shape() != first.shape()) {
            return errors::InvalidArgument(
                "Cannot batch tensors with different shapes in component ", c,
                ". First element had shape ", first.shape().DebugString(),
                " and element ", i, " had shape ",
                elements[i][c].shape().DebugString(), ".");
          }
          RETURN_IF_ERROR(CopyToBatchSlice(elements[i][c], &batch, i));
        }
        out->push_back(std::move(batch));
      }
      return absl::OkStatus();
    }

    Status Save(IteratorStateWriter* w) override {
      RETURN_IF_ERROR(w->WriteScalar("input_ended", in_end_ ? 1 : 0));
      return SaveIterator(w, "input", in_.get());
    }
    Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
      int64_t ended = 0;
      RETURN_IF_ERROR(ReadInt64InRange(r, "input_ended", 0, 1, &ended));
      in_end_ = ended == 1;
      return RestoreIterator(ctx, r, "input", in_.get());
    }

   private:
    const BatchDataset* d_;
    std::unique_ptr<IteratorBase> in_;
    bool in_end_ = false;
  };
  const int64_t batch_size_;
  const bool drop_remainder_;
};

REGISTER_OP("BatchDataset")
    .Input("input_dataset: variant")
    .Input("batch_size: int64")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("BatchDatasetV2 without drop_remainder (a smaller last batch).");

REGISTER_OP("BatchDatasetV2")
    .Input("input_dataset: variant")
    .Input("batch_size: int64")
    .Input("drop_remainder: bool")
    .Output("handle: variant")
    .Attr("parallel_copy: bool = false")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Stacks `batch_size` consecutive elements of the input along a new "
        "dimension 0 (their shapes must be equal); the last batch has the "
        "rest unless `drop_remainder`, which drops it.");

class BatchDatasetKernel : public DatasetOpKernel {
 public:
  explicit BatchDatasetKernel(OpKernelConstruction* c)
      : DatasetOpKernel(c, "output_types") {}
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    DatasetPtr input;
    RETURN_IF_ERROR(InputDataset(ctx, 0, &input));
    RETURN_IF_ERROR(SameDtypes(structure(), *input, type_string()));
    int64_t batch_size;
    RETURN_IF_ERROR(ScalarInt64(ctx, 1, "batch_size", &batch_size));
    if (batch_size <= 0) {
      return errors::InvalidArgument("Batch size must be greater than zero.");
    }
    bool drop_remainder = false;
    if (ctx->num_inputs() > 2) {
      const Tensor& t = ctx->input(2);
      if (t.dtype() != DT_BOOL || t.NumElements() != 1) {
        return errors::InvalidArgument("drop_remainder must be a scalar bool");
      }
      drop_remainder = t.flat<bool>()[0];
    }
    return std::make_shared<BatchDataset>(structure(), input, batch_size,
                                          drop_remainder);
  }
};
REGISTER_KERNEL_BUILDER(Name("BatchDataset").Device(kDeviceCpu),
                        BatchDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("BatchDatasetV2").Device(kDeviceCpu),
                        BatchDatasetKernel);

// ---------------------------------------------------------------------------
// PaddedBatchDataset / PaddedBatchDatasetV2: batches of elements whose
// shapes may differ, each component padded with its padding value to its
// padded shape (a -1 dimension: the largest in the batch).

class PaddedBatchDataset final : public UnaryDataset {
 public:
  PaddedBatchDataset(Structure s, DatasetPtr input, int64_t batch_size,
                     bool drop_remainder,
                     std::vector<std::vector<int64_t>> padded_shapes,
                     std::vector<Tensor> padding_values)
      : UnaryDataset(std::move(s),
                     absl::StrCat("PaddedBatchDataset(", input->DebugString(),
                                  ", ", batch_size, ", ", drop_remainder, ")"),
                     input),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padded_shapes_(std::move(padded_shapes)),
        padding_values_(std::move(padding_values)) {}
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_
                           : (n + batch_size_ - 1) / batch_size_;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(new Iterator(this, std::move(in)));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    Iterator(const PaddedBatchDataset* d, std::unique_ptr<IteratorBase> in)
        : d_(d), in_(std::move(in)) {}
    Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      *end = false;
      std::vector<std::vector<Tensor>> elements;
      while (!in_end_ &&
             static_cast<int64_t>(elements.size()) < d_->batch_size_) {
        std::vector<Tensor> e;
        bool e_end = false;
        RETURN_IF_ERROR(in_->GetNext(ctx, &e, &e_end));
        if (e_end) {
          in_end_ = true;
          break;
        }
        elements.push_back(std::move(e));
      }
      if (elements.empty() ||
          (d_->drop_remainder_ &&
           static_cast<int64_t>(elements.size()) < d_->batch_size_)) {
        *end = true;
        return absl::OkStatus();
      }
      const int64_t n = static_cast<int64_t>(elements.size());
      for (size_t c = 0; c < d_->padded_shapes_.size(); ++c) {
        const std::vector<int64_t>& padded = d_->padded_shapes_[c];
        TensorShape shape({n});
        for (size_t k = 0; k < padded.size(); ++k) {
          int64_t size = padded[k];
          for (int64_t i = 0; i < n; ++i) {
            const Tensor& t = elements[i][c];
            if (t.dims() != static_cast<int>(padded.size())) {
              return errors::InvalidArgument(
                  "component ", c, " of element ", i, " has shape ",
                  t.shape().DebugString(), ", of rank ", t.dims(),
                  ", but its padded shape has rank ", padded.size());
            }
            if (padded[k] < 0) {
              size = std::max(size, t.dim_size(k));
            } else if (t.dim_size(k) > padded[k]) {
              return errors::InvalidArgument(
                  "Attempted to pad to a smaller size than the input "
                  "element: component ",
                  c, " of shape ", t.shape().DebugString(),
                  " into padded shape dimension ", k, " of size ", padded[k]);
            }
          }
          shape.AddDim(std::max<int64_t>(size, 0));
        }
        ASSIGN_OR_RETURN(
            Tensor batch,
            Tensor::Allocate(cpu_allocator(), d_->padding_values_[c].dtype(),
                             shape));
        RETURN_IF_ERROR(FillWithScalar(d_->padding_values_[c], &batch));
        for (int64_t i = 0; i < n; ++i) {
          RETURN_IF_ERROR(CopyToPaddedBatchSlice(elements[i][c], &batch, i));
        }
        out->push_back(std::move(batch));
      }
      return absl::OkStatus();
    }

    Status Save(IteratorStateWriter* w) override {
      RETURN_IF_ERROR(w->WriteScalar("input_ended", in_end_ ? 1 : 0));
      return SaveIterator(w, "input", in_.get());
    }
    Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
      int64_t ended = 0;
      RETURN_IF_ERROR(ReadInt64InRange(r, "input_ended", 0, 1, &ended));
      in_end_ = ended == 1;
      return RestoreIterator(ctx, r, "input", in_.get());
    }

   private:
    const PaddedBatchDataset* d_;
    std::unique_ptr<IteratorBase> in_;
    bool in_end_ = false;
  };
  const int64_t batch_size_;
  const bool drop_remainder_;
  const std::vector<std::vector<int64_t>> padded_shapes_;
  const std::vector<Tensor> padding_values_;
};

REGISTER_OP("PaddedBatchDataset")
    .Input("input_dataset: variant")
    .Input("batch_size: int64")
    .Input("padded_shapes: N * int64")
    .Input("padding_values: Toutput_types")
    .Output("handle: variant")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("N: int >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("PaddedBatchDatasetV2 without drop_remainder.");

REGISTER_OP("PaddedBatchDatasetV2")
    .Input("input_dataset: variant")
    .Input("batch_size: int64")
    .Input("padded_shapes: N * int64")
    .Input("padding_values: Toutput_types")
    .Input("drop_remainder: bool")
    .Output("handle: variant")
    .Attr("parallel_copy: bool = false")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("N: int >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Batches of `batch_size` elements whose component i is padded with "
        "the scalar padding_values[i] to padded_shapes[i] (a vector of the "
        "component's rank; -1: the largest size in the batch). The last "
        "batch is smaller unless `drop_remainder`.");

class PaddedBatchDatasetKernel : public DatasetOpKernel {
 public:
  explicit PaddedBatchDatasetKernel(OpKernelConstruction* c)
      : DatasetOpKernel(c, "Toutput_types") {}
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    DatasetPtr input;
    RETURN_IF_ERROR(InputDataset(ctx, 0, &input));
    RETURN_IF_ERROR(SameDtypes(structure(), *input, type_string()));
    int64_t batch_size;
    RETURN_IF_ERROR(ScalarInt64(ctx, 1, "batch_size", &batch_size));
    if (batch_size <= 0) {
      return errors::InvalidArgument("Batch size must be greater than zero.");
    }
    const int n = static_cast<int>(structure().dtypes.size());
    const bool v2 = type_string() == "PaddedBatchDatasetV2";
    if (ctx->num_inputs() != 2 + 2 * n + (v2 ? 1 : 0)) {
      return errors::InvalidArgument("expected ", n,
                                     " padded shapes and padding values");
    }
    std::vector<std::vector<int64_t>> padded_shapes;
    std::vector<Tensor> padding_values;
    for (int i = 0; i < n; ++i) {
      const Tensor& shape = ctx->input(2 + i);
      if (shape.dtype() != DT_INT64 || shape.dims() != 1) {
        return errors::InvalidArgument(
            "padded_shapes[", i, "] must be a vector of int64, not ",
            DataTypeString(shape.dtype()), " ", shape.shape().DebugString());
      }
      auto dims = shape.flat<int64_t>();
      for (int64_t d : dims) {
        if (d < -1) {
          return errors::InvalidArgument("padded_shapes[", i,
                                         "] has a size below -1: ", d);
        }
      }
      padded_shapes.emplace_back(dims.begin(), dims.end());
      const Tensor& value = ctx->input(2 + n + i);
      if (value.NumElements() != 1 || value.dims() != 0) {
        return errors::InvalidArgument("padding_values[", i,
                                       "] must be a scalar, not ",
                                       value.shape().DebugString());
      }
      padding_values.push_back(value);
    }
    bool drop_remainder = false;
    if (v2) {
      const Tensor& t = ctx->input(2 + 2 * n);
      if (t.dtype() != DT_BOOL || t.NumElements() != 1) {
        return errors::InvalidArgument("drop_remainder must be a scalar bool");
      }
      drop_remainder = t.flat<bool>()[0];
    }
    return std::make_shared<PaddedBatchDataset>(
        structure(), input, batch_size, drop_remainder,
        std::move(padded_shapes), std::move(padding_values));
  }
};
REGISTER_KERNEL_BUILDER(Name("PaddedBatchDataset").Device(kDeviceCpu),
                        PaddedBatchDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("PaddedBatchDatasetV2").Device(kDeviceCpu),
                        PaddedBatchDatasetKernel);

// ---------------------------------------------------------------------------
// Pass-throughs: the input dataset itself.

REGISTER_OP("ModelDataset")
    .Input("input_dataset: variant")
    .Output("handle: variant")
    .Attr("algorithm: int = 0")
    .Attr("cpu_budget: int = 0")
    .Attr("ram_budget: int = 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("TF's autotuning wrapper; Runnel passes the input through.");

REGISTER_OP("OptimizeDataset")
    .Input("input_dataset: variant")
    .Input("optimizations: string")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("optimization_configs: list(string) = []")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("TF's dataset graph rewrites; Runnel passes the input through.");

REGISTER_OP("OptimizeDatasetV2")
    .Input("input_dataset: variant")
    .Input("optimizations_enabled: string")
    .Input("optimizations_disabled: string")
    .Input("optimizations_default: string")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("optimization_configs: list(string) = []")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("TF's dataset graph rewrites; Runnel passes the input through.");

class PassThroughDatasetKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<DatasetPtr> input = DatasetFromVariantTensor(ctx->input(0));
    OP_REQUIRES_OK(ctx, input.status());
    ctx->set_output(0, ctx->input(0));
  }
};
REGISTER_KERNEL_BUILDER(Name("ModelDataset").Device(kDeviceCpu),
                        PassThroughDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("OptimizeDataset").Device(kDeviceCpu),
                        PassThroughDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("OptimizeDatasetV2").Device(kDeviceCpu),
                        PassThroughDatasetKernel);

// ---------------------------------------------------------------------------
// DatasetCardinality

REGISTER_OP("DatasetCardinality")
    .Input("input_dataset: variant")
    .Output("cardinality: int64")
    .Attr("cardinality_options: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "The number of elements of the dataset, -1 if infinite, -2 if "
        "unknown.");

class DatasetCardinalityKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<DatasetPtr> input = DatasetFromVariantTensor(ctx->input(0));
    OP_REQUIRES_OK(ctx, input.status());
    ctx->set_output(0, Tensor::Scalar<int64_t>((*input)->Cardinality()));
  }
};
REGISTER_KERNEL_BUILDER(Name("DatasetCardinality").Device(kDeviceCpu),
                        DatasetCardinalityKernel);

REGISTER_NO_GRADIENT("TensorDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("TensorSliceDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("RangeDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("RepeatDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("TakeDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("SkipDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("BatchDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("BatchDatasetV2", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("PaddedBatchDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("PaddedBatchDatasetV2", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("ModelDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("OptimizeDataset", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("OptimizeDatasetV2", "a dataset is not differentiable");
REGISTER_NO_GRADIENT("DatasetCardinality", "a dataset is not differentiable");

}  // namespace
}  // namespace runnel
