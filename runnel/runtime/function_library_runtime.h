// The FunctionLibraryRuntime of one device (framework/function_runtime.h):
// instantiates library functions as executors on that device and runs
// them. A PartitionedExecutor makes one per partition of a graph that has a
// function library, and every kernel of that partition reaches it through
// OpKernelContext::function_library().
//
// An instantiation is the function's body graph (InstantiateFunction), with
// its own calls inlined and control flow lowered (InlineFunctionCalls), run
// by one Executor whose kernels live as long as the runtime: a stateful
// kernel in a body keeps its state from call to call, as TF's does. Each
// call runs on its own call frame; it shares the caller's step (step id,
// cancellation, per-step resources) and the device's resources.
//
// Thread safety: as the interface; instantiation is serialised.
#ifndef RUNNEL_RUNTIME_FUNCTION_LIBRARY_RUNTIME_H_
#define RUNNEL_RUNTIME_FUNCTION_LIBRARY_RUNTIME_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "runnel/framework/device.h"
#include "runnel/framework/function_runtime.h"
#include "runnel/graph/function.h"
#include "runnel/runtime/executor.h"

namespace runnel {

class DeviceFunctionLibraryRuntime final : public FunctionLibraryRuntime {
 public:
  // `device` must outlive this.
  DeviceFunctionLibraryRuntime(
      std::shared_ptr<const FunctionLibraryDefinition> library, Device* device);
  ~DeviceFunctionLibraryRuntime() override;

  Status Instantiate(const std::string& name, const AttrMap& attrs,
                     Handle* handle) override;
  const DataTypeVector& ArgTypes(Handle handle) const override;
  const DataTypeVector& RetTypes(Handle handle) const override;
  std::unique_ptr<FunctionLibraryRuntime> Clone() const override;
  void Run(const Options& options, Handle handle, std::vector<Tensor> args,
           std::vector<Tensor>* rets, DoneCallback done) override;

 private:
  struct Item {
    std::string name;
    std::unique_ptr<Graph> graph;
    std::unique_ptr<Executor> executor;
    DataTypeVector arg_types, ret_types;
  };
  const Item* Get(Handle handle) const;

  const std::shared_ptr<const FunctionLibraryDefinition> library_;
  Device* const device_;
  mutable absl::Mutex mu_;
  std::map<std::string, Handle> handles_ ABSL_GUARDED_BY(mu_);
  // Items are never removed, so a handle's Item outlives its use.
  std::vector<std::unique_ptr<Item>> items_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_FUNCTION_LIBRARY_RUNTIME_H_
