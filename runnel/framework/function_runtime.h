// How a kernel runs a library function (TF's FunctionLibraryRuntime): a
// call op that was not inlined (attr `_noinline`), and whatever else calls
// functions at run time (dataset map functions). The runtime
// (runnel/runtime/function_library_runtime.h) instantiates a function with
// its attrs as a graph and an executor on the caller's device, once per
// (name, attrs), and runs it per call:
//
//   FunctionLibraryRuntime* flr = ctx->function_library();
//   FunctionLibraryRuntime::Handle h;
//   RETURN_IF_ERROR(flr->Instantiate("MySquare", attrs, &h));
//   FunctionLibraryRuntime::Options opts;  // From the kernel's context.
//   opts.call_depth = ctx->function_call_depth() + 1;
//   flr->Run(opts, h, {x}, &rets, done);
//
// Errors: NotFound for a function the library lacks; the instantiation's
// errors (a malformed body, a node without a kernel) naming the function
// and node; InvalidArgument for arguments whose number or dtypes differ
// from the signature; the body's errors at run time; InvalidArgument past
// kMaxFunctionCallDepth nested calls (recursion without a base case) or
// past kMaxInstantiations different instantiations.
//
// Thread safety: every method may be called concurrently.
#ifndef RUNNEL_FRAMEWORK_FUNCTION_RUNTIME_H_
#define RUNNEL_FRAMEWORK_FUNCTION_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/types.h"

namespace runnel {

class CancellationManager;
class Rendezvous;
class StepResources;

// Calls nest at most this deep at run time (each level runs on the stack
// of the one that called it).
inline constexpr int kMaxFunctionCallDepth = 64;
// Different (function, attrs) pairs one runtime instantiates at most.
inline constexpr int kMaxInstantiations = 4096;

class FunctionLibraryRuntime {
 public:
  using Handle = int64_t;
  using DoneCallback = std::function<void(const Status&)>;

  struct Options {
    int64_t step_id = 0;
    CancellationManager* cancellation_manager = nullptr;
    StepResources* step_resources = nullptr;
    Rendezvous* rendezvous = nullptr;
    // How many calls enclose this one (0 for a call from a step's graph).
    int call_depth = 0;
    // The calling step's allocator (OpKernelContext::step_allocator), for a
    // call that ends within the step; null: the device's.
    Allocator* allocator = nullptr;
  };

  FunctionLibraryRuntime();
  virtual ~FunctionLibraryRuntime() = default;

  // Unique among the runtimes of this process, never reused: a kernel may
  // cache a handle per runtime by id (addresses can be reused).
  uint64_t id() const { return id_; }

  // A handle for `name` with `attrs` bound; the same handle for the same
  // pair. Instantiating builds the body's graph (inlining its own calls)
  // and its executor.
  virtual Status Instantiate(const std::string& name, const AttrMap& attrs,
                             Handle* handle) = 0;
  // The instantiation's argument and result dtypes.
  virtual const DataTypeVector& ArgTypes(Handle handle) const = 0;
  virtual const DataTypeVector& RetTypes(Handle handle) const = 0;

  // A new runtime over the same library and device, with instantiations
  // (and stateful kernels) of its own, owned by the caller: something that
  // runs functions longer than the step that made it (an iterator resource
  // prefetching between steps) keeps one. It may outlive this runtime but
  // not the device.
  virtual std::unique_ptr<FunctionLibraryRuntime> Clone() const = 0;

  // Runs the function on `args`; on success `*rets` holds one tensor per
  // result. `rets` must stay valid until `done` runs (exactly once,
  // possibly on another thread, possibly before Run returns).
  virtual void Run(const Options& options, Handle handle,
                   std::vector<Tensor> args, std::vector<Tensor>* rets,
                   DoneCallback done) = 0;

 private:
  const uint64_t id_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_FUNCTION_RUNTIME_H_
