// Kernels: the code that runs one node on one device.
//
// An OpKernel is built once per node (per executor) from an
// OpKernelConstruction, which reads the node's attrs; it then runs once per
// step in Compute(OpKernelContext*), possibly on several threads at once for
// different steps, so Compute must not mutate kernel members without a lock.
//
// Kernels validate, then compute: the first lines check every input (rank,
// sizes, index ranges) with OP_REQUIRES, and only then touch data. Error
// messages need not name the node: the executor prefixes every kernel error
// with "<Op> '<node>': ".
//
//   class AddOneKernel : public OpKernel {
//    public:
//     using OpKernel::OpKernel;
//     void Compute(OpKernelContext* ctx) override {
//       const Tensor& x = ctx->input(0);
//       Tensor* y;
//       OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
//       ...
//     }
//   };
//   REGISTER_KERNEL_BUILDER(Name("AddOne").Device(kDeviceCpu)
//                               .TypeConstraint<float>("T"), AddOneKernel);
#ifndef RUNNEL_FRAMEWORK_OP_KERNEL_H_
#define RUNNEL_FRAMEWORK_OP_KERNEL_H_

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runnel/base/status.h"
#include "runnel/base/threadpool.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/device_base.h"
#include "runnel/framework/node_properties.h"
#include "runnel/framework/rendezvous.h"
#include "runnel/framework/tensor.h"

namespace runnel {

class AsyncOpKernel;
class FunctionLibraryRuntime;
class OpKernelContext;

// Arguments and results of a function-like execution (a session step):
// _Arg nodes read feeds from it, _Retval nodes write fetches into it.
class CallFrameInterface {
 public:
  virtual ~CallFrameInterface() = default;
  virtual int num_args() const = 0;
  virtual int num_retvals() const = 0;
  virtual Status GetArg(int index, const Tensor** value) const = 0;
  virtual Status SetRetval(int index, const Tensor& value) = 0;
};

class OpKernelConstruction {
 public:
  OpKernelConstruction(std::string device_type, DeviceBase* device,
                       std::shared_ptr<const NodeProperties> props)
      : device_type_(std::move(device_type)),
        device_(device),
        props_(std::move(props)) {}

  const std::string& name() const { return props_->name; }
  const std::string& type_string() const { return props_->op; }
  const std::string& device_type() const { return device_type_; }
  DeviceBase* device() const { return device_; }
  const NodeProperties& props() const { return *props_; }
  const std::shared_ptr<const NodeProperties>& props_shared() const {
    return props_;
  }
  const OpDef& op_def() const { return props_->op_def(); }
  const AttrMap& attrs() const { return props_->attrs; }
  const DataTypeVector& input_types() const { return props_->input_types; }
  const DataTypeVector& output_types() const { return props_->output_types; }
  int num_inputs() const {
    return static_cast<int>(props_->input_types.size());
  }
  int num_outputs() const {
    return static_cast<int>(props_->output_types.size());
  }

  template <typename T>
  Status GetAttr(absl::string_view attr, T* value) const {
    return runnel::GetAttr(props_->attrs, attr, value);
  }
  bool HasAttr(absl::string_view attr) const {
    return props_->attrs.find(attr) != props_->attrs.end();
  }

  // Records a construction failure (first one wins).
  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  void CtxFailure(const Status& s) { SetStatus(s); }
  const Status& status() const { return status_; }

 private:
  std::string device_type_;
  DeviceBase* device_;
  std::shared_ptr<const NodeProperties> props_;
  Status status_;
};

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* ctx);
  virtual ~OpKernel();
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Compute(OpKernelContext* ctx) = 0;
  virtual AsyncOpKernel* AsAsync() { return nullptr; }

  // Cheap kernels (const, identity, shape ops, scalar math) always run
  // inline on the thread that made them ready; expensive ones may be handed
  // to another thread when there is parallel work.
  virtual bool IsExpensive() const { return true; }

  const std::string& name() const { return props_->name; }
  const std::string& type_string() const { return props_->op; }
  const NodeProperties& props() const { return *props_; }
  int num_inputs() const {
    return static_cast<int>(props_->input_types.size());
  }
  int num_outputs() const {
    return static_cast<int>(props_->output_types.size());
  }
  DataType input_type(int i) const { return props_->input_types[i]; }
  DataType output_type(int i) const { return props_->output_types[i]; }
  // "<Op> '<node>': ", the prefix of every error this kernel reports.
  std::string ErrorPrefix() const;

 private:
  std::shared_ptr<const NodeProperties> props_;
};

class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  using DoneCallback = std::function<void()>;

  // Must call `done` exactly once, possibly on another thread, after setting
  // outputs or status. The context stays valid until then.
  virtual void ComputeAsync(OpKernelContext* ctx, DoneCallback done) = 0;

  AsyncOpKernel* AsAsync() override { return this; }
  void Compute(OpKernelContext* ctx) override;  // Runs ComputeAsync and waits.
};

// An input slot: a value, or a reference (to a variable's tensor) with the
// mutex that guards it.
struct TensorValue {
  Tensor* tensor = nullptr;
  absl::Mutex* mutex_if_ref = nullptr;
  bool is_ref() const { return mutex_if_ref != nullptr; }
};

class OpKernelContext {
 public:
  struct Params {
    OpKernel* op_kernel = nullptr;
    DeviceBase* device = nullptr;
    absl::Span<const TensorValue> inputs;
    CallFrameInterface* call_frame = nullptr;
    CancellationManager* cancellation_manager = nullptr;
    ResourceMgr* resource_manager = nullptr;
    // Resources that live for one step only (TensorArrays, stacks); the
    // session deletes them when the step ends.
    StepResources* step_resources = nullptr;
    int64_t step_id = 0;
    // Runs a closure on the inter-op pool (for kernels that spawn work).
    std::function<void(std::function<void()>)>* runner = nullptr;
    bool track_allocations = false;
    // The step's rendezvous, for _Send/_Recv; null outside a session step.
    Rendezvous* rendezvous = nullptr;
    // The loop frame instance and iteration this execution belongs to.
    FrameAndIter frame_iter;
    // True when the executor runs a transfer node (_Send) on a dead input:
    // it forwards the dead token instead of a value.
    bool is_input_dead = false;
    // Runs library functions on this device (framework/function_runtime.h);
    // null where the graph has no function library.
    FunctionLibraryRuntime* function_library = nullptr;
    // How many function calls enclose this execution.
    int function_call_depth = 0;
    // Where allocate_output and allocate_temp take memory from: the step's
    // LimitedAllocator when the step has a memory limit, else null for the
    // device's allocator.
    Allocator* allocator = nullptr;
  };

  explicit OpKernelContext(Params* params);
  ~OpKernelContext();

  const OpKernel& op_kernel() const { return *params_->op_kernel; }
  DeviceBase* device() const { return params_->device; }
  int64_t step_id() const { return params_->step_id; }
  CallFrameInterface* call_frame() const { return params_->call_frame; }
  CancellationManager* cancellation_manager() const {
    return params_->cancellation_manager;
  }
  ResourceMgr* resource_manager() const { return params_->resource_manager; }
  // Per-step resources; may be null outside a session step (kernels then
  // fail with FailedPrecondition).
  ResourceMgr* step_resource_manager() const {
    return params_->step_resources == nullptr ? nullptr
                                              : params_->step_resources->Get();
  }
  ThreadPool* intra_op_threadpool() const {
    return params_->device->intra_op_pool();
  }
  std::function<void(std::function<void()>)>* runner() const {
    return params_->runner;
  }
  Rendezvous* rendezvous() const { return params_->rendezvous; }
  StepResources* step_resources() const { return params_->step_resources; }
  FunctionLibraryRuntime* function_library() const {
    return params_->function_library;
  }
  int function_call_depth() const { return params_->function_call_depth; }
  // The allocator this kernel's outputs and temps come from (the step's,
  // when it has a memory limit; the device's otherwise).
  Allocator* allocator() const {
    return params_->allocator != nullptr ? params_->allocator
                                         : device()->GetAllocator();
  }
  // The step's own allocator, or null: what a kernel passes on to the
  // functions it calls within the step.
  Allocator* step_allocator() const { return params_->allocator; }
  const FrameAndIter& frame_iter() const { return params_->frame_iter; }
  const DeviceContext* op_device_context() const {
    return params_->device->device_context();
  }
  // Transfer nodes only: the input is a dead token (Note [Frames and dead
  // tensors] in runtime/executor.h), and a _Recv that received one marks its
  // output dead, which the executor then propagates.
  bool is_input_dead() const { return params_->is_input_dead; }
  bool is_output_dead() const { return is_output_dead_; }
  void set_is_output_dead(bool dead) { is_output_dead_ = dead; }

  // Inputs.
  int num_inputs() const { return static_cast<int>(params_->inputs.size()); }
  // False only for a dead input of a Merge (the one kernel the executor runs
  // with inputs missing); input(i) must not be called then.
  bool has_input(int i) const { return params_->inputs[i].tensor != nullptr; }
  // The value of input i (for a ref input, the referenced tensor; read it
  // under input_ref_mutex(i) if others may write it).
  const Tensor& input(int i) const { return *params_->inputs[i].tensor; }
  DataType input_dtype(int i) const { return op_kernel().input_type(i); }
  bool input_is_ref(int i) const { return params_->inputs[i].is_ref(); }
  absl::Mutex* input_ref_mutex(int i) const {
    return params_->inputs[i].mutex_if_ref;
  }
  // The referenced tensor of ref input i, for kernels that write it (Assign).
  Tensor* mutable_input(int i) const { return params_->inputs[i].tensor; }
  // Like input(i) but copies the Tensor under the ref mutex for ref inputs.
  Tensor input_value(int i) const;

  // Outputs.
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  DataType expected_output_dtype(int i) const {
    return op_kernel().output_type(i);
  }
  // Allocates output i from the device allocator.
  Status allocate_output(int i, const TensorShape& shape, Tensor** out);
  // Reuses the buffer of one of `candidate_inputs` when this kernel holds the
  // only reference and dtype and size match; otherwise allocates.
  Status forward_input_or_allocate_output(
      std::initializer_list<int> candidate_inputs, int output,
      const TensorShape& shape, Tensor** out);
  Status allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out);
  // Sets output i to `t` (sharing its buffer). Its dtype must match.
  void set_output(int i, Tensor t);
  // Makes output i a reference to `*ref`, guarded by `mu` (variables).
  void set_output_ref(int i, absl::Mutex* mu, Tensor* ref);
  void forward_ref_input_to_ref_output(int input, int output);
  Tensor* mutable_output(int i) { return &outputs_[i].value; }

  // Status.
  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  // Records `s` (if not OK) and returns it; for OP_REQUIRES.
  void CtxFailure(const Status& s) { SetStatus(s); }
  const Status& status() const { return status_; }

  // For the executor: output slot i as value or ref.
  struct Output {
    Tensor value;
    Tensor* ref = nullptr;
    absl::Mutex* ref_mu = nullptr;
    bool has_value = false;
  };
  Output* mutable_output_slot(int i) { return &outputs_[i]; }

 private:
  Params* params_;
  Status status_;
  bool is_output_dead_ = false;
  absl::InlinedVector<Output, 2> outputs_;
};

// Kernel-side checks. On failure they record the status and return from the
// enclosing function.
#define OP_REQUIRES(CTX, EXP, STATUS) \
  do {                                \
    if (ABSL_PREDICT_FALSE(!(EXP))) { \
      (CTX)->CtxFailure(STATUS);      \
      return;                         \
    }                                 \
  } while (0)

#define OP_REQUIRES_OK(CTX, ...)        \
  do {                                  \
    ::absl::Status _s(__VA_ARGS__);     \
    if (ABSL_PREDICT_FALSE(!_s.ok())) { \
      (CTX)->CtxFailure(_s);            \
      return;                           \
    }                                   \
  } while (0)

// For async kernels: also calls CALLBACK before returning.
#define OP_REQUIRES_ASYNC(CTX, EXP, STATUS, CALLBACK) \
  do {                                                \
    if (ABSL_PREDICT_FALSE(!(EXP))) {                 \
      (CTX)->CtxFailure(STATUS);                      \
      (CALLBACK)();                                   \
      return;                                         \
    }                                                 \
  } while (0)

#define OP_REQUIRES_OK_ASYNC(CTX, STATUS, CALLBACK) \
  do {                                              \
    ::absl::Status _s(STATUS);                      \
    if (ABSL_PREDICT_FALSE(!_s.ok())) {             \
      (CTX)->CtxFailure(_s);                        \
      (CALLBACK)();                                 \
      return;                                       \
    }                                               \
  } while (0)

// ---------------------------------------------------------------------------
// Kernel registry

struct KernelDef {
  std::string op;
  std::string device_type;
  // attr name -> allowed types.
  std::vector<std::pair<std::string, std::vector<DataType>>> type_constraints;
  std::vector<std::string> host_memory_args;
  std::string label;
  int priority = 0;
  std::string DebugString() const;
};

class KernelDefBuilder {
 public:
  explicit KernelDefBuilder(const char* op) { def_.op = op; }
  KernelDefBuilder& Device(const char* device_type) {
    def_.device_type = device_type;
    return *this;
  }
  template <typename T>
  KernelDefBuilder& TypeConstraint(const char* attr) {
    return TypeConstraint(attr, DataTypeToEnum<T>::value);
  }
  KernelDefBuilder& TypeConstraint(const char* attr, DataType dt) {
    def_.type_constraints.push_back({attr, {dt}});
    return *this;
  }
  KernelDefBuilder& TypeConstraint(const char* attr,
                                   std::vector<DataType> dts) {
    def_.type_constraints.push_back({attr, std::move(dts)});
    return *this;
  }
  KernelDefBuilder& HostMemory(const char* arg) {
    def_.host_memory_args.push_back(arg);
    return *this;
  }
  KernelDefBuilder& Label(const char* label) {
    def_.label = label;
    return *this;
  }
  KernelDefBuilder& Priority(int p) {
    def_.priority = p;
    return *this;
  }
  const KernelDef& Build() const { return def_; }

 private:
  KernelDef def_;
};

// TensorFlow's spelling: REGISTER_KERNEL_BUILDER(Name("Op").Device(...), K).
class Name : public KernelDefBuilder {
 public:
  explicit Name(const char* op) : KernelDefBuilder(op) {}
};

using KernelFactory = std::function<OpKernel*(OpKernelConstruction*)>;

class KernelRegistry {
 public:
  static KernelRegistry* Global();

  void Register(KernelDef def, std::string class_name, KernelFactory factory);

  // Finds the best kernel for a node on `device_type`: type constraints must
  // match the node's attrs, the label must equal the node's "_kernel" attr
  // (empty if unset), and among matches the highest priority wins. NotFound
  // lists the kernels that do exist for the op.
  Status FindKernel(const std::string& device_type, const NodeProperties& node,
                    const KernelDef** def, const KernelFactory** factory) const;
  // All registered kernels for `op` (any device).
  std::vector<const KernelDef*> KernelsForOp(absl::string_view op) const;
  // True if some kernel for the node exists on `device_type`.
  bool HasKernel(const std::string& device_type,
                 const NodeProperties& node) const;

 private:
  struct Entry {
    KernelDef def;
    std::string class_name;
    KernelFactory factory;
  };
  std::multimap<std::string, Entry, std::less<>> kernels_;
};

// Instantiates the kernel for `props` on `device`. Errors name the node.
Status CreateOpKernel(const std::string& device_type, DeviceBase* device,
                      std::shared_ptr<const NodeProperties> props,
                      std::unique_ptr<OpKernel>* kernel);

namespace kernel_factory {
struct KernelRegistrar {
  KernelRegistrar(const KernelDef& def, const char* class_name,
                  KernelFactory f) {
    KernelRegistry::Global()->Register(def, class_name, std::move(f));
  }
};
}  // namespace kernel_factory

#define REGISTER_KERNEL_BUILDER(kernel_builder, ...) \
  REGISTER_KERNEL_BUILDER_UNIQ_HELPER(__COUNTER__, kernel_builder, __VA_ARGS__)
#define REGISTER_KERNEL_BUILDER_UNIQ_HELPER(ctr, kernel_builder, ...) \
  REGISTER_KERNEL_BUILDER_UNIQ(ctr, kernel_builder, __VA_ARGS__)
#define REGISTER_KERNEL_BUILDER_UNIQ(ctr, kernel_builder, ...)           \
  static ::runnel::kernel_factory::KernelRegistrar                       \
      registrar__body__##ctr##__object [[maybe_unused]] (                \
          ::runnel::kernel_builder.Build(), #__VA_ARGS__,                \
          [](::runnel::OpKernelConstruction* c) -> ::runnel::OpKernel* { \
            return new __VA_ARGS__(c);                                   \
          })

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OP_KERNEL_H_
