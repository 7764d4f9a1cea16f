#include "runnel/runtime/function_library_runtime.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/devices/cpu_device.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// The cache key of (name, attrs): attrs are in name order (AttrMap).
std::string InstantiationKey(const std::string& name, const AttrMap& attrs) {
  std::string key = name;
  for (const auto& [attr, value] : attrs) {
    absl::StrAppend(&key, "\n", attr, "=", value.SerializeAsString());
  }
  return key;
}

// One call's arguments and results.
class FunctionCallFrame final : public CallFrameInterface {
 public:
  FunctionCallFrame(std::vector<Tensor> args, int num_rets)
      : args_(std::move(args)), rets_(num_rets), set_(num_rets, false) {}
  int num_args() const override { return static_cast<int>(args_.size()); }
  int num_retvals() const override { return static_cast<int>(rets_.size()); }
  Status GetArg(int index, const Tensor** value) const override {
    if (index < 0 || index >= num_args()) {
      return errors::InvalidArgument("argument ", index, " of ", num_args());
    }
    *value = &args_[index];
    return absl::OkStatus();
  }
  Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || index >= num_retvals()) {
      return errors::InvalidArgument("result ", index, " of ", num_retvals());
    }
    rets_[index] = value;
    set_[index] = true;
    return absl::OkStatus();
  }
  // Moves the results out; Internal if one was never set.
  Status TakeResults(std::vector<Tensor>* rets) {
    for (size_t i = 0; i < set_.size(); ++i) {
      if (!set_[i]) {
        return errors::Internal("the function did not produce result ", i);
      }
    }
    *rets = std::move(rets_);
    return absl::OkStatus();
  }

 private:
  std::vector<Tensor> args_;
  std::vector<Tensor> rets_;
  // One byte per result, not vector<bool>: _Retval kernels set different
  // results concurrently, and bits of one word would race.
  std::vector<char> set_;
};

}  // namespace

DeviceFunctionLibraryRuntime::DeviceFunctionLibraryRuntime(
    std::shared_ptr<const FunctionLibraryDefinition> library, Device* device)
    : library_(std::move(library)), device_(device) {}

DeviceFunctionLibraryRuntime::~DeviceFunctionLibraryRuntime() = default;

std::unique_ptr<FunctionLibraryRuntime> DeviceFunctionLibraryRuntime::Clone()
    const {
  return std::make_unique<DeviceFunctionLibraryRuntime>(library_, device_);
}

Status DeviceFunctionLibraryRuntime::Instantiate(const std::string& name,
                                                 const AttrMap& attrs,
                                                 Handle* handle) {
  const std::string key = InstantiationKey(name, attrs);
  absl::MutexLock l(&mu_);
  if (auto it = handles_.find(key); it != handles_.end()) {
    *handle = it->second;
    return absl::OkStatus();
  }
  if (static_cast<int>(items_.size()) >= kMaxInstantiations) {
    return errors::InvalidArgument(
        "instantiating function '", name, "' would make more than ",
        kMaxInstantiations, " instantiations on ", device_->name());
  }
  if (library_ == nullptr || library_->Find(name) == nullptr) {
    return errors::NotFound("function '", name,
                            "' is not in the graph's function library");
  }
  auto item = std::make_unique<Item>();
  item->name = name;
  ASSIGN_OR_RETURN(std::unique_ptr<FunctionBody> body,
                   InstantiateFunction(library_, name, attrs));
  item->arg_types = body->arg_types;
  item->ret_types = body->ret_types;
  item->graph = std::move(body->graph);
  auto prefix = [&](const Status& s) {
    return Status(s.code(),
                  absl::StrCat("in function '", name, "': ", s.message()));
  };
  if (Status s = InlineFunctionCalls(item->graph.get()); !s.ok()) {
    return prefix(s);
  }
  for (Node* n : item->graph->nodes()) {
    n->set_assigned_device_name(device_->name());
  }
  ExecutorParams params;
  params.device = device_;
  params.pool = CpuThreadPool();
  Device* device = device_;
  params.create_kernel = [device](const Node& n,
                                  std::shared_ptr<OpKernel>* kernel) {
    std::unique_ptr<OpKernel> k;
    RETURN_IF_ERROR(
        CreateOpKernel(device->device_type(), device, n.props_shared(), &k));
    *kernel = std::shared_ptr<OpKernel>(std::move(k));
    return absl::OkStatus();
  };
  auto executor = Executor::Create(params, *item->graph);
  if (!executor.ok()) return prefix(executor.status());
  item->executor = std::move(*executor);
  *handle = static_cast<Handle>(items_.size());
  items_.push_back(std::move(item));
  handles_[key] = *handle;
  return absl::OkStatus();
}

const DeviceFunctionLibraryRuntime::Item* DeviceFunctionLibraryRuntime::Get(
    Handle handle) const {
  absl::MutexLock l(&mu_);
  if (handle < 0 || handle >= static_cast<Handle>(items_.size())) {
    return nullptr;
  }
  return items_[handle].get();
}

const DataTypeVector& DeviceFunctionLibraryRuntime::ArgTypes(
    Handle handle) const {
  static const DataTypeVector* kNone = new DataTypeVector;
  const Item* item = Get(handle);
  return item == nullptr ? *kNone : item->arg_types;
}

const DataTypeVector& DeviceFunctionLibraryRuntime::RetTypes(
    Handle handle) const {
  static const DataTypeVector* kNone = new DataTypeVector;
  const Item* item = Get(handle);
  return item == nullptr ? *kNone : item->ret_types;
}

void DeviceFunctionLibraryRuntime::Run(const Options& options, Handle handle,
                                       std::vector<Tensor> args,
                                       std::vector<Tensor>* rets,
                                       DoneCallback done) {
  const Item* item = Get(handle);
  if (item == nullptr) {
    done(errors::InvalidArgument("no function instantiation ", handle));
    return;
  }
  if (options.call_depth > kMaxFunctionCallDepth) {
    done(errors::InvalidArgument("calling function '", item->name,
                                 "' at call depth ", options.call_depth,
                                 ", more than ", kMaxFunctionCallDepth,
                                 ": is it recursive without a base case?"));
    return;
  }
  if (args.size() != item->arg_types.size()) {
    done(errors::InvalidArgument("function '", item->name, "' takes ",
                                 item->arg_types.size(), " arguments, not ",
                                 args.size()));
    return;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].dtype() != BaseType(item->arg_types[i])) {
      done(errors::InvalidArgument("function '", item->name, "' argument ", i,
                                   " must be ",
                                   DataTypeString(item->arg_types[i]), ", not ",
                                   DataTypeString(args[i].dtype())));
      return;
    }
  }
  auto* frame = new FunctionCallFrame(std::move(args),
                                      static_cast<int>(item->ret_types.size()));
  Executor::Args a;
  a.step_id = options.step_id;
  a.call_frame = frame;
  a.cancellation_manager = options.cancellation_manager;
  a.resource_manager = device_->resource_manager();
  a.step_resources = options.step_resources;
  a.rendezvous = options.rendezvous;
  a.function_library = this;
  a.function_call_depth = options.call_depth;
  a.allocator = options.allocator;
  item->executor->RunAsync(
      a, [frame, rets, done = std::move(done)](const Status& s) {
        Status result = s.ok() ? frame->TakeResults(rets) : s;
        delete frame;
        done(result);
      });
}

}  // namespace runnel
