// tf.data iterators (TF's iterator_ops.cc): a resource holding the
// iterator of one dataset, made by IteratorV2 (TF 1.x's
// make_initializable_iterator, with MakeIterator as the initializer),
// AnonymousIteratorV2/V3 (TF 2's `iter(dataset)` inside a tf.function) or
// OneShotIterator (TF 1.x's make_one_shot_iterator, whose dataset comes from
// a factory function run on first use), and read by IteratorGetNext.
//
// Note [Iterator state]: the resource keeps the dataset and its current
// IteratorBase under a mutex, so concurrent GetNexts take elements one at a
// time; MakeIterator starts the sequence over. Running past the end is
// OutOfRange ("End of sequence"), as TF's, which is how TF 1.x training
// loops end an epoch; every later GetNext is OutOfRange too until the next
// MakeIterator. An element whose dtypes or shapes differ from the
// iterator's declared ones is InvalidArgument.
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "proto/resource_handle.pb.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_mgr.h"
#include "runnel/framework/resource_var.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// What the iterator of one MakeIterator (or restore) may use between
// steps: IteratorContext::background, with a clone of the function runtime
// of the first GetNext that had one.
struct IteratorBackground {
  explicit IteratorBackground(const FunctionLibraryRuntime& flr)
      : function_library(flr.Clone()) {
    ctx.function_library = function_library.get();
    ctx.cancellation_manager = &cancellation;
    ctx.background = &ctx;
  }
  std::unique_ptr<FunctionLibraryRuntime> function_library;
  CancellationManager cancellation;
  IteratorContext ctx;
};

// Ends an iterator and then what it used between steps: the work it does
// ahead is cancelled and joined (by its destructor) before its runtime goes.
void Retire(std::unique_ptr<IteratorBase> iterator,
            std::unique_ptr<IteratorBackground> background) {
  if (background != nullptr) background->cancellation.StartCancel();
  iterator.reset();
  background.reset();
}

class IteratorResource : public ResourceBase {
 public:
  IteratorResource(DataTypeVector dtypes,
                   std::vector<PartialTensorShape> shapes)
      : dtypes_(std::move(dtypes)), shapes_(std::move(shapes)) {}

  std::string DebugString() const override {
    absl::MutexLock l(&mu_);
    return dataset_ == nullptr
               ? "Iterator(uninitialized)"
               : absl::StrCat("Iterator(", dataset_->DebugString(), ")");
  }

  // Binds the iterator to `dataset`, at its start.
  Status SetDataset(DatasetPtr dataset) {
    if (dataset->output_dtypes() != dtypes_) {
      return errors::InvalidArgument(
          "the dataset ", dataset->DebugString(),
          " does not match the iterator's output_types");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it, dataset->MakeIterator());
    Replace(std::move(it), nullptr, std::move(dataset));
    return absl::OkStatus();
  }

  ~IteratorResource() override {
    Retire(std::move(iterator_), std::move(background_));
  }

  bool initialized() const {
    absl::MutexLock l(&mu_);
    return iterator_ != nullptr;
  }

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out) {
    absl::MutexLock l(&mu_);
    if (iterator_ == nullptr) {
      return errors::FailedPrecondition(
          "GetNext() failed because the iterator has not been initialized. "
          "Ensure that you have run the initializer operation for this "
          "iterator before getting the next element.");
    }
    bool end = false;
    ctx->background = BackgroundFor(*ctx);
    RETURN_IF_ERROR(iterator_->GetNext(ctx, out, &end));
    if (end) return errors::OutOfRange("End of sequence");
    return CheckElement(
        *out, dtypes_, shapes_,
        absl::StrCat("the iterator over ", dataset_->DebugString()));
  }

  const DataTypeVector& dtypes() const { return dtypes_; }

  // The state of the iterator (Note [Iterator checkpoints] in
  // framework/dataset.h), under the key prefix "iterator".
  StatusOr<std::shared_ptr<const IteratorState>> Save() {
    absl::MutexLock l(&mu_);
    if (iterator_ == nullptr) {
      return errors::FailedPrecondition(
          "cannot save an iterator that has not been initialized");
    }
    auto state = std::make_shared<IteratorState>();
    RETURN_IF_ERROR(SaveIterator(state.get(), "iterator", iterator_.get()));
    return std::shared_ptr<const IteratorState>(std::move(state));
  }

  // Replaces the iterator by a new one over the same dataset, restored
  // from `state`. On error the current iterator is kept.
  Status Restore(IteratorContext* ctx, const IteratorState& state) {
    DatasetPtr dataset;
    {
      absl::MutexLock l(&mu_);
      dataset = dataset_;
    }
    if (dataset == nullptr) {
      return errors::FailedPrecondition(
          "cannot restore an iterator that has not been initialized: run "
          "its initializer (MakeIterator) first so that its dataset is "
          "known");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it, dataset->MakeIterator());
    std::unique_ptr<IteratorBackground> background;
    if (ctx->function_library != nullptr) {
      background = std::make_unique<IteratorBackground>(*ctx->function_library);
    }
    ctx->background = background == nullptr ? nullptr : &background->ctx;
    if (Status s = RestoreIterator(ctx, &state, "iterator", it.get());
        !s.ok()) {
      Retire(std::move(it), std::move(background));
      return s;
    }
    Replace(std::move(it), std::move(background), std::move(dataset));
    return absl::OkStatus();
  }

 private:
  // The background context for an iterator pulled with `ctx`, made on the
  // first pull that has a function runtime (null before).
  const IteratorContext* BackgroundFor(const IteratorContext& ctx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (background_ == nullptr && ctx.function_library != nullptr) {
      background_ = std::make_unique<IteratorBackground>(*ctx.function_library);
    }
    return background_ == nullptr ? nullptr : &background_->ctx;
  }

  // Makes `iterator` (with what it uses between steps) the current one,
  // over `dataset`. The old iterator goes first: it may use its dataset and
  // runtime until it is gone (a prefetch thread joins in its destructor).
  void Replace(std::unique_ptr<IteratorBase> iterator,
               std::unique_ptr<IteratorBackground> background,
               DatasetPtr dataset) {
    std::unique_ptr<IteratorBase> old_iterator;
    std::unique_ptr<IteratorBackground> old_background;
    DatasetPtr old_dataset;
    {
      absl::MutexLock l(&mu_);
      old_iterator = std::exchange(iterator_, std::move(iterator));
      old_background = std::exchange(background_, std::move(background));
      old_dataset = std::exchange(dataset_, std::move(dataset));
    }
    Retire(std::move(old_iterator), std::move(old_background));
  }

  const DataTypeVector dtypes_;
  const std::vector<PartialTensorShape> shapes_;
  mutable absl::Mutex mu_;
  DatasetPtr dataset_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<IteratorBase> iterator_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<IteratorBackground> background_ ABSL_GUARDED_BY(mu_);
};

Status ReadIteratorStructure(OpKernelConstruction* c, DataTypeVector* dtypes,
                             std::vector<PartialTensorShape>* shapes) {
  std::vector<DataType> types;
  RETURN_IF_ERROR(c->GetAttr("output_types", &types));
  RETURN_IF_ERROR(c->GetAttr("output_shapes", shapes));
  dtypes->assign(types.begin(), types.end());
  if (shapes->size() != dtypes->size()) {
    return errors::InvalidArgument("output_types has ", dtypes->size(),
                                   " types but output_shapes has ",
                                   shapes->size(), " shapes");
  }
  return absl::OkStatus();
}

Tensor HandleTensor(OpKernelContext* ctx, const std::string& container,
                    const std::string& name) {
  Tensor h(DT_RESOURCE, TensorShape({}));
  h.scalar<ResourceHandle>() = MakeResourceHandle<IteratorResource>(
      container, name,
      ctx->device() != nullptr ? ctx->device()->name() : std::string());
  return h;
}

// Creates (or finds) the iterator resource named `name` and outputs its
// handle.
Status CreateIterator(OpKernelContext* ctx, const std::string& container,
                      const std::string& name, const DataTypeVector& dtypes,
                      const std::vector<PartialTensorShape>& shapes,
                      IteratorResource** out) {
  ResourceMgr* rm = ctx->resource_manager();
  if (rm == nullptr) return errors::FailedPrecondition("no resource manager");
  const std::string c = container.empty() ? rm->default_container() : container;
  IteratorResource* it = nullptr;
  RETURN_IF_ERROR(rm->LookupOrCreate<IteratorResource>(
      c, name, &it, [&](IteratorResource** r) {
        *r = new IteratorResource(dtypes, shapes);
        return absl::OkStatus();
      }));
  if (it->dtypes() != dtypes) {
    it->Unref();
    return errors::InvalidArgument("the iterator '", name,
                                   "' already exists with other output_types");
  }
  ctx->set_output(0, HandleTensor(ctx, c, name));
  if (out != nullptr) {
    *out = it;
  } else {
    it->Unref();
  }
  return absl::OkStatus();
}

Status LookupIterator(OpKernelContext* ctx, int input, IteratorResource** it) {
  const ResourceHandle* h = nullptr;
  RETURN_IF_ERROR(HandleFromInput(ctx, input, &h));
  Status s = LookupResource<IteratorResource>(ctx, *h, it);
  if (absl::IsNotFound(s)) {
    return errors::FailedPrecondition("the iterator '", h->name(),
                                      "' does not exist (was it deleted?)");
  }
  return s;
}

// ---------------------------------------------------------------------------
// IteratorV2 / Iterator

REGISTER_OP("IteratorV2")
    .Output("handle: resource")
    .Attr("shared_name: string")
    .Attr("container: string")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "An iterator resource, uninitialised until MakeIterator binds it to "
        "a dataset (TF 1.x's make_initializable_iterator).");

REGISTER_OP("Iterator")
    .Output("handle: resource")
    .Attr("shared_name: string")
    .Attr("container: string")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("IteratorV2 under its TF 1.x name.");

class IteratorHandleKernel : public OpKernel {
 public:
  explicit IteratorHandleKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name_));
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, ReadIteratorStructure(c, &dtypes_, &shapes_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const std::string name = shared_name_.empty() ? this->name() : shared_name_;
    OP_REQUIRES_OK(
        ctx, CreateIterator(ctx, container_, name, dtypes_, shapes_, nullptr));
  }

 private:
  std::string shared_name_, container_;
  DataTypeVector dtypes_;
  std::vector<PartialTensorShape> shapes_;
};
REGISTER_KERNEL_BUILDER(Name("IteratorV2").Device(kDeviceCpu),
                        IteratorHandleKernel);
REGISTER_KERNEL_BUILDER(Name("Iterator").Device(kDeviceCpu),
                        IteratorHandleKernel);

// ---------------------------------------------------------------------------
// AnonymousIteratorV2 / V3, DeleteIterator

REGISTER_OP("AnonymousIteratorV2")
    .Output("handle: resource")
    .Output("deleter: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "A new iterator resource with a unique name each run, and a deleter "
        "for DeleteIterator.");

REGISTER_OP("AnonymousIteratorV3")
    .Output("handle: resource")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "A new iterator resource with a unique name each run. It lives until "
        "DestroyResourceOp or the session's resources are cleared.");

REGISTER_OP("DeleteIterator")
    .Input("handle: resource")
    .Input("deleter: variant")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc("Deletes the iterator resource `handle`.");

// The deleter of AnonymousIteratorV2: carries nothing (DeleteIterator
// deletes by handle) but is a variant as TF's.
class IteratorDeleter final : public VariantValue {
 public:
  std::string TypeName() const override { return "IteratorDeleter"; }
};

class AnonymousIteratorKernel : public OpKernel {
 public:
  explicit AnonymousIteratorKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ReadIteratorStructure(c, &dtypes_, &shapes_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    static std::atomic<int64_t> next{0};
    const std::string name =
        absl::StrCat("_AnonymousIterator", next.fetch_add(1));
    OP_REQUIRES_OK(ctx,
                   CreateIterator(ctx, "", name, dtypes_, shapes_, nullptr));
    if (ctx->num_outputs() > 1) {
      Tensor deleter(DT_VARIANT, TensorShape({}));
      deleter.scalar<Variant>() = Variant(std::make_shared<IteratorDeleter>());
      ctx->set_output(1, std::move(deleter));
    }
  }

 private:
  DataTypeVector dtypes_;
  std::vector<PartialTensorShape> shapes_;
};
REGISTER_KERNEL_BUILDER(Name("AnonymousIteratorV2").Device(kDeviceCpu),
                        AnonymousIteratorKernel);
REGISTER_KERNEL_BUILDER(Name("AnonymousIteratorV3").Device(kDeviceCpu),
                        AnonymousIteratorKernel);

class DeleteIteratorKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h = nullptr;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    OP_REQUIRES_OK(ctx,
                   ValidateHandle(ctx, *h, ResourceTypeHash<IteratorResource>(),
                                  typeid(IteratorResource).name()));
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr,
                errors::FailedPrecondition("no resource manager"));
    OP_REQUIRES_OK(ctx, ctx->resource_manager()->Delete<IteratorResource>(
                            h->container(), h->name()));
  }
};
REGISTER_KERNEL_BUILDER(Name("DeleteIterator").Device(kDeviceCpu),
                        DeleteIteratorKernel);

// ---------------------------------------------------------------------------
// MakeIterator

REGISTER_OP("MakeIterator")
    .Input("dataset: variant")
    .Input("iterator: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Binds `iterator` to the start of `dataset` (the initializer of an "
        "initializable iterator; running it again starts over).");

class MakeIteratorKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<DatasetPtr> ds = DatasetFromVariantTensor(ctx->input(0));
    OP_REQUIRES_OK(ctx, ds.status());
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(ctx, LookupIterator(ctx, 1, &it));
    ScopedUnref unref(it);
    OP_REQUIRES_OK(ctx, it->SetDataset(*std::move(ds)));
  }
};
REGISTER_KERNEL_BUILDER(Name("MakeIterator").Device(kDeviceCpu),
                        MakeIteratorKernel);

// ---------------------------------------------------------------------------
// OneShotIterator

REGISTER_OP("OneShotIterator")
    .Output("handle: resource")
    .Attr("dataset_factory: func")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "An iterator initialised on first use from the dataset that "
        "`dataset_factory` (a function without inputs returning a dataset "
        "variant) makes (TF 1.x's make_one_shot_iterator).");

class OneShotIteratorKernel : public OpKernel {
 public:
  explicit OneShotIteratorKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name_));
    OP_REQUIRES_OK(c, ReadIteratorStructure(c, &dtypes_, &shapes_));
    auto it = c->attrs().find("dataset_factory");
    if (it != c->attrs().end()) factory_ = it->second.func();
  }
  void Compute(OpKernelContext* ctx) override {
    const std::string name = shared_name_.empty() ? this->name() : shared_name_;
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(
        ctx, CreateIterator(ctx, container_, name, dtypes_, shapes_, &it));
    ScopedUnref unref(it);
    absl::MutexLock l(&mu_);
    if (it->initialized()) return;
    IteratorContext ictx = IteratorContext::FromKernel(ctx);
    CapturedFunction factory(factory_, {});
    std::vector<Tensor> rets;
    Status s = factory.Run(&ictx, {}, &rets);
    OP_REQUIRES_OK(ctx, s);
    OP_REQUIRES(ctx, rets.size() == 1,
                errors::InvalidArgument("dataset_factory '", factory_.name(),
                                        "' returned ", rets.size(),
                                        " values, not one dataset"));
    StatusOr<DatasetPtr> ds = DatasetFromVariantTensor(rets[0]);
    OP_REQUIRES_OK(ctx, ds.status());
    OP_REQUIRES_OK(ctx, it->SetDataset(*std::move(ds)));
  }

 private:
  std::string container_, shared_name_;
  DataTypeVector dtypes_;
  std::vector<PartialTensorShape> shapes_;
  NameAttrList factory_;
  absl::Mutex mu_;  // One initialisation at a time.
};
REGISTER_KERNEL_BUILDER(Name("OneShotIterator").Device(kDeviceCpu),
                        OneShotIteratorKernel);

// ---------------------------------------------------------------------------
// IteratorGetNext / IteratorGetNextSync

constexpr char kGetNextDoc[] =
    "The next element of the iterator; OutOfRange (\"End of sequence\") "
    "once it is exhausted.";

REGISTER_OP("IteratorGetNext")
    .Input("iterator: resource")
    .Output("components: output_types")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      std::vector<PartialTensorShape> shapes;
      if (c->GetAttr("output_shapes", &shapes).ok() &&
          static_cast<int>(shapes.size()) == c->num_outputs()) {
        for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, shapes[i]);
        return absl::OkStatus();
      }
      return shape_fns::UnknownShape(c);
    })
    .Doc(kGetNextDoc);

REGISTER_OP("IteratorGetNextSync")
    .Input("iterator: resource")
    .Output("components: output_types")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(kGetNextDoc);

class IteratorGetNextKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(ctx, LookupIterator(ctx, 0, &it));
    ScopedUnref unref(it);
    IteratorContext ictx = IteratorContext::FromKernel(ctx);
    std::vector<Tensor> element;
    OP_REQUIRES_OK(ctx, it->GetNext(&ictx, &element));
    OP_REQUIRES(
        ctx, static_cast<int>(element.size()) == ctx->num_outputs(),
        errors::InvalidArgument("the iterator produced ", element.size(),
                                " components, the op "
                                "has ",
                                ctx->num_outputs(), " outputs"));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      OP_REQUIRES(ctx, element[i].dtype() == ctx->expected_output_dtype(i),
                  errors::InvalidArgument(
                      "component ", i, " is ",
                      DataTypeString(element[i].dtype()), ", the op expects ",
                      DataTypeString(ctx->expected_output_dtype(i))));
      ctx->set_output(i, std::move(element[i]));
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("IteratorGetNext").Device(kDeviceCpu),
                        IteratorGetNextKernel);
REGISTER_KERNEL_BUILDER(Name("IteratorGetNextSync").Device(kDeviceCpu),
                        IteratorGetNextKernel);

// ---------------------------------------------------------------------------
// IteratorToStringHandle / IteratorFromStringHandle(V2): TF 1.x's feedable
// iterators (tf.data.Iterator.from_string_handle): the handle travels as a
// serialized ResourceHandleProto, fed back in to choose the iterator.

REGISTER_OP("IteratorToStringHandle")
    .Input("resource_handle: resource")
    .Output("string_handle: string")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "The iterator's handle as a string (a serialized "
        "ResourceHandleProto).");

REGISTER_OP("IteratorFromStringHandleV2")
    .Input("string_handle: string")
    .Output("resource_handle: resource")
    .Attr("output_types: list(type) >= 0 = []")
    .Attr("output_shapes: list(shape) >= 0 = []")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "The iterator handle a string from IteratorToStringHandle names; "
        "with output_types, the iterator must produce them.");

REGISTER_OP("IteratorFromStringHandle")
    .Input("string_handle: string")
    .Output("resource_handle: resource")
    .Attr("output_types: list(type) >= 0 = []")
    .Attr("output_shapes: list(shape) >= 0 = []")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("IteratorFromStringHandleV2 under its first name.");

class IteratorToStringHandleKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(ctx, LookupIterator(ctx, 0, &it));
    it->Unref();
    const ResourceHandle* h = nullptr;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    ResourceHandleProto proto;
    h->AsProto(&proto);
    ctx->set_output(0, Tensor::Scalar<tstring>(proto.SerializeAsString()));
  }
};
REGISTER_KERNEL_BUILDER(Name("IteratorToStringHandle").Device(kDeviceCpu),
                        IteratorToStringHandleKernel);

class IteratorFromStringHandleKernel : public OpKernel {
 public:
  explicit IteratorFromStringHandleKernel(OpKernelConstruction* c)
      : OpKernel(c) {
    std::vector<DataType> types;
    OP_REQUIRES_OK(c, c->GetAttr("output_types", &types));
    dtypes_.assign(types.begin(), types.end());
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& s = ctx->input(0);
    OP_REQUIRES(ctx, s.dtype() == DT_STRING && s.NumElements() == 1,
                errors::InvalidArgument(
                    "string_handle must be a scalar string, not ",
                    DataTypeString(s.dtype()), " ", s.shape().DebugString()));
    ResourceHandleProto proto;
    OP_REQUIRES(
        ctx, proto.ParseFromString(s.flat<tstring>()[0]),
        errors::InvalidArgument(
            "string_handle is not a handle from IteratorToStringHandle"));
    StatusOr<ResourceHandle> h = ResourceHandle::FromProto(proto);
    OP_REQUIRES_OK(ctx, h.status());
    Tensor out(DT_RESOURCE, TensorShape({}));
    out.scalar<ResourceHandle>() = *h;
    IteratorResource* it = nullptr;
    Status found = LookupResource<IteratorResource>(ctx, *h, &it);
    OP_REQUIRES(ctx, found.ok(),
                errors::InvalidArgument("string_handle names no iterator: ",
                                        found.message()));
    ScopedUnref unref(it);
    OP_REQUIRES(ctx, dtypes_.empty() || it->dtypes() == dtypes_,
                errors::InvalidArgument(
                    "the iterator the string_handle names has other "
                    "output_types"));
    ctx->set_output(0, std::move(out));
  }

 private:
  DataTypeVector dtypes_;
};
REGISTER_KERNEL_BUILDER(Name("IteratorFromStringHandleV2").Device(kDeviceCpu),
                        IteratorFromStringHandleKernel);
REGISTER_KERNEL_BUILDER(Name("IteratorFromStringHandle").Device(kDeviceCpu),
                        IteratorFromStringHandleKernel);

// ---------------------------------------------------------------------------
// Optionals (tf.experimental.Optional): IteratorGetNextAsOptional is how a
// TF 2 `for x in dataset` loop inside a tf.function reads, ending the loop
// when OptionalHasValue is false instead of on OutOfRange.

class OptionalValue final : public VariantValue {
 public:
  OptionalValue() = default;
  explicit OptionalValue(std::vector<Tensor> value)
      : has_value_(true), value_(std::move(value)) {}
  std::string TypeName() const override { return "Optional"; }
  std::string DebugString() const override {
    return has_value_ ? absl::StrCat("Optional(", value_.size(), " tensors)")
                      : "Optional(none)";
  }
  bool has_value() const { return has_value_; }
  const std::vector<Tensor>& value() const { return value_; }

 private:
  bool has_value_ = false;
  std::vector<Tensor> value_;
};

Tensor OptionalTensor(std::shared_ptr<const OptionalValue> v) {
  Tensor t(DT_VARIANT, TensorShape({}));
  t.scalar<Variant>() = Variant(std::move(v));
  return t;
}

StatusOr<const OptionalValue*> OptionalFromInput(OpKernelContext* ctx, int i) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_VARIANT || t.dims() != 0) {
    return errors::InvalidArgument("an optional must be a scalar variant, not ",
                                   DataTypeString(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  const OptionalValue* v = t.scalar<Variant>().get<OptionalValue>();
  if (v == nullptr) {
    return errors::InvalidArgument("the variant holds ",
                                   t.scalar<Variant>().TypeName(),
                                   ", not an Optional");
  }
  return v;
}

REGISTER_OP("IteratorGetNextAsOptional")
    .Input("iterator: resource")
    .Output("optional: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "The iterator's next element as an Optional: empty at the end of the "
        "sequence (where IteratorGetNext fails with OutOfRange).");

REGISTER_OP("OptionalNone")
    .Output("optional: variant")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("An empty Optional.");

REGISTER_OP("OptionalFromValue")
    .Input("components: Toutput_types")
    .Output("optional: variant")
    .Attr("Toutput_types: list(type) >= 1")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("An Optional holding `components`.");

REGISTER_OP("OptionalHasValue")
    .Input("optional: variant")
    .Output("has_value: bool")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Whether the Optional holds a value.");

REGISTER_OP("OptionalGetValue")
    .Input("optional: variant")
    .Output("components: output_types")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(
        "The Optional's value; InvalidArgument if it is empty or its dtypes "
        "differ from output_types.");

class IteratorGetNextAsOptionalKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(ctx, LookupIterator(ctx, 0, &it));
    ScopedUnref unref(it);
    IteratorContext ictx = IteratorContext::FromKernel(ctx);
    std::vector<Tensor> element;
    Status s = it->GetNext(&ictx, &element);
    if (absl::IsOutOfRange(s)) {
      ctx->set_output(0, OptionalTensor(std::make_shared<OptionalValue>()));
      return;
    }
    OP_REQUIRES_OK(ctx, s);
    ctx->set_output(
        0, OptionalTensor(std::make_shared<OptionalValue>(std::move(element))));
  }
};
REGISTER_KERNEL_BUILDER(Name("IteratorGetNextAsOptional").Device(kDeviceCpu),
                        IteratorGetNextAsOptionalKernel);

class OptionalNoneKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, OptionalTensor(std::make_shared<OptionalValue>()));
  }
};
REGISTER_KERNEL_BUILDER(Name("OptionalNone").Device(kDeviceCpu),
                        OptionalNoneKernel);

class OptionalFromValueKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    std::vector<Tensor> value;
    for (int i = 0; i < ctx->num_inputs(); ++i) value.push_back(ctx->input(i));
    ctx->set_output(
        0, OptionalTensor(std::make_shared<OptionalValue>(std::move(value))));
  }
};
REGISTER_KERNEL_BUILDER(Name("OptionalFromValue").Device(kDeviceCpu),
                        OptionalFromValueKernel);

class OptionalHasValueKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<const OptionalValue*> v = OptionalFromInput(ctx, 0);
    OP_REQUIRES_OK(ctx, v.status());
    ctx->set_output(0, Tensor::Scalar<bool>((*v)->has_value()));
  }
};
REGISTER_KERNEL_BUILDER(Name("OptionalHasValue").Device(kDeviceCpu),
                        OptionalHasValueKernel);

class OptionalGetValueKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<const OptionalValue*> v = OptionalFromInput(ctx, 0);
    OP_REQUIRES_OK(ctx, v.status());
    OP_REQUIRES(ctx, (*v)->has_value(),
                errors::InvalidArgument("The optional does not have a value."));
    const std::vector<Tensor>& value = (*v)->value();
    OP_REQUIRES(ctx, static_cast<int>(value.size()) == ctx->num_outputs(),
                errors::InvalidArgument("the optional holds ", value.size(),
                                        " components, the op has ",
                                        ctx->num_outputs(), " outputs"));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      OP_REQUIRES(ctx, value[i].dtype() == ctx->expected_output_dtype(i),
                  errors::InvalidArgument(
                      "component ", i, " of the optional is ",
                      DataTypeString(value[i].dtype()), ", not ",
                      DataTypeString(ctx->expected_output_dtype(i))));
      ctx->set_output(i, value[i]);
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("OptionalGetValue").Device(kDeviceCpu),
                        OptionalGetValueKernel);

// ---------------------------------------------------------------------------
// SerializeIterator / DeserializeIterator (Note [Iterator checkpoints] in
// framework/dataset.h), and EncodeIteratorState / DecodeIteratorState, a
// Runnel addition: variant tensors cannot go into a checkpoint file
// (tensor_bundle), so a Saver stores the state as a DT_STRING scalar
// (Note [Iterator state encoding] in framework/dataset.cc).

REGISTER_OP("SerializeIterator")
    .Input("resource_handle: resource")
    .Attr("external_state_policy: int = 0")
    .Output("serialized: variant")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Converts the given `resource_handle` representing an iterator to a "
        "variant tensor.\n"
        "resource_handle: A handle to an iterator resource.\n"
        "serialized: A scalar variant tensor holding the iterator's state "
        "(positions, buffered elements, random engine states). A dataset "
        "that cannot be checkpointed is Unimplemented naming it.\n"
        "external_state_policy: 0 (warn), 1 (ignore) or 2 (fail), as in "
        "TensorFlow; Runnel saves no state outside the iterator chain (the "
        "state of stateful ops inside map functions is not saved) and "
        "accepts all three.");

REGISTER_OP("DeserializeIterator")
    .Input("resource_handle: resource")
    .Input("serialized: variant")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      RETURN_IF_ERROR(c->WithRank(1, 0, &unused));
      return shape_fns::NoOutputs(c);
    })
    .Doc(
        "Converts the given variant tensor to an iterator and stores it in "
        "the given resource.\n"
        "resource_handle: A handle to an iterator resource, initialized "
        "(MakeIterator) with the dataset the state was saved from.\n"
        "serialized: A variant tensor storing the state of the iterator "
        "contained in the resource (from SerializeIterator or "
        "DecodeIteratorState). A state saved from another dataset is "
        "InvalidArgument, and the iterator is left as it was.");

// One scalar in, one scalar out.
Status ScalarToScalar(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(0, 0, &unused));
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("EncodeIteratorState")
    .Input("serialized: variant")
    .Output("encoded: string")
    .SetShapeFn(ScalarToScalar)
    .Doc(
        "Runnel: the iterator state `serialized` (from SerializeIterator) as "
        "bytes, a scalar string a checkpoint can hold.");

REGISTER_OP("DecodeIteratorState")
    .Input("encoded: string")
    .Output("serialized: variant")
    .SetShapeFn(ScalarToScalar)
    .Doc(
        "Runnel: the iterator state encoded by EncodeIteratorState, for "
        "DeserializeIterator. Corrupt or truncated bytes are DataLoss.");

// Errors need not name the node: the executor prefixes them with it
// ("DeserializeIterator 'restore': ...").

class SerializeIteratorKernel : public OpKernel {
 public:
  explicit SerializeIteratorKernel(OpKernelConstruction* c) : OpKernel(c) {
    int64_t policy = 0;
    OP_REQUIRES_OK(c, c->GetAttr("external_state_policy", &policy));
    OP_REQUIRES(c, policy >= 0 && policy <= 2,
                errors::InvalidArgument(
                    "external_state_policy must be 0, 1 or 2, got ", policy));
  }
  void Compute(OpKernelContext* ctx) override {
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(ctx, LookupIterator(ctx, 0, &it));
    ScopedUnref unref(it);
    StatusOr<std::shared_ptr<const IteratorState>> state = it->Save();
    OP_REQUIRES_OK(ctx, state.status());
    ctx->set_output(0, IteratorStateToVariantTensor(*std::move(state)));
  }
};
REGISTER_KERNEL_BUILDER(Name("SerializeIterator").Device(kDeviceCpu),
                        SerializeIteratorKernel);

class DeserializeIteratorKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<std::shared_ptr<const IteratorState>> state =
        IteratorStateFromVariantTensor(ctx->input(1));
    OP_REQUIRES_OK(ctx, state.status());
    IteratorResource* it = nullptr;
    OP_REQUIRES_OK(ctx, LookupIterator(ctx, 0, &it));
    ScopedUnref unref(it);
    IteratorContext ictx = IteratorContext::FromKernel(ctx);
    OP_REQUIRES_OK(ctx, it->Restore(&ictx, **state));
  }
};
REGISTER_KERNEL_BUILDER(Name("DeserializeIterator").Device(kDeviceCpu),
                        DeserializeIteratorKernel);

class EncodeIteratorStateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<std::shared_ptr<const IteratorState>> state =
        IteratorStateFromVariantTensor(ctx->input(0));
    OP_REQUIRES_OK(ctx, state.status());
    ctx->set_output(0, Tensor::Scalar<tstring>((*state)->Encode()));
  }
};
REGISTER_KERNEL_BUILDER(Name("EncodeIteratorState").Device(kDeviceCpu),
                        EncodeIteratorStateKernel);

class DecodeIteratorStateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    OP_REQUIRES(ctx, t.dtype() == DT_STRING && t.dims() == 0,
                errors::InvalidArgument("encoded must be a scalar string, not ",
                                        DataTypeString(t.dtype()), " ",
                                        t.shape().DebugString()));
    StatusOr<std::shared_ptr<IteratorState>> state =
        IteratorState::Decode(std::string(t.scalar<tstring>()));
    OP_REQUIRES_OK(ctx, state.status());
    ctx->set_output(0, IteratorStateToVariantTensor(*std::move(state)));
  }
};
REGISTER_KERNEL_BUILDER(Name("DecodeIteratorState").Device(kDeviceCpu),
                        DecodeIteratorStateKernel);

REGISTER_NO_GRADIENT("SerializeIterator", "an iterator is not differentiable");
REGISTER_NO_GRADIENT("DeserializeIterator",
                     "an iterator is not differentiable");
REGISTER_NO_GRADIENT("EncodeIteratorState",
                     "an iterator state is not differentiable");
REGISTER_NO_GRADIENT("DecodeIteratorState",
                     "an iterator state is not differentiable");
REGISTER_NO_GRADIENT("IteratorGetNextAsOptional",
                     "input data is not differentiable");
REGISTER_NO_GRADIENT("OptionalNone", "an optional is not differentiable");
REGISTER_NO_GRADIENT("OptionalFromValue", "an optional is not differentiable");
REGISTER_NO_GRADIENT("OptionalHasValue", "a bool is not differentiable");
REGISTER_NO_GRADIENT("OptionalGetValue", "an optional is not differentiable");
REGISTER_NO_GRADIENT("IteratorToStringHandle",
                     "an iterator is not differentiable");
REGISTER_NO_GRADIENT("IteratorFromStringHandleV2",
                     "an iterator is not differentiable");
REGISTER_NO_GRADIENT("IteratorFromStringHandle",
                     "an iterator is not differentiable");
REGISTER_NO_GRADIENT("IteratorV2", "an iterator is not differentiable");
REGISTER_NO_GRADIENT("Iterator", "an iterator is not differentiable");
REGISTER_NO_GRADIENT("AnonymousIteratorV2",
                     "an iterator is not differentiable");
REGISTER_NO_GRADIENT("AnonymousIteratorV3",
                     "an iterator is not differentiable");
REGISTER_NO_GRADIENT("DeleteIterator", "an iterator is not differentiable");
REGISTER_NO_GRADIENT("MakeIterator", "an iterator is not differentiable");
REGISTER_NO_GRADIENT("OneShotIterator", "an iterator is not differentiable");
REGISTER_NO_GRADIENT("IteratorGetNext", "input data is not differentiable");
REGISTER_NO_GRADIENT("IteratorGetNextSync", "input data is not differentiable");

}  // namespace
}  // namespace runnel
