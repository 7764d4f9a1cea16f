// Collective ops: TF's CollectiveReduceV2, the all-reduce of data-parallel
// training, over the process's collective groups (runnel/framework/
// collective.h; on a cluster, Gloo's ring all-reduce between the worker
// processes, runnel/distributed/gloo_group.h).
//
//   CollectiveReduceV2(input: T, group_size: int32, group_key: int32,
//                      instance_key: int32,
//                      ordering_token: Nordering_token * resource)
//       -> data: T
//   attrs merge_op in {Min, Max, Mul, Add}, final_op in {Id, Div},
//         communication_hint (ignored), timeout_seconds (0: 600 s),
//         Nordering_token, max_subdivs_per_device (ignored)
//
// Every member of group `group_key` (group_size members) runs it with the
// same instance_key and the same input shape; each gets the elementwise
// merge_op of all members' inputs, divided by group_size when final_op is
// Div (TF's mean of the replicas' gradients). The op definition accepts TF's
// dtypes; the kernel reduces float and double. Errors name the node: no
// group of that key in this process (NotFound), a group_size other than
// the group's (InvalidArgument), a group that does not meet within the
// timeout (DeadlineExceeded), a member gone (Unavailable). Note
// [Collective order] in collective.h: a group runs its collectives one at
// a time, in the same order everywhere.
#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "runnel/framework/collective.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

REGISTER_OP("CollectiveReduceV2")
    .Input("input: T")
    .Output("data: T")
    .Attr("T: {bfloat16, float, float16, float64, int32, int64}")
    .Input("group_size: int32")
    .Input("group_key: int32")
    .Input("instance_key: int32")
    .Input("ordering_token: Nordering_token * resource")
    .Attr("merge_op: {'Min', 'Max', 'Mul', 'Add'}")
    .Attr("final_op: {'Id', 'Div'}")
    .Attr("communication_hint: string = 'auto'")
    .Attr("timeout_seconds: float = 0")
    .Attr("Nordering_token: int >= 0 = 0")
    .Attr("max_subdivs_per_device: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("All-reduce of `input` over the members of a collective group.");

constexpr double kDefaultTimeoutSeconds = 600;

Status ScalarInt32(OpKernelContext* ctx, int index, const char* name,
                   int32_t* out) {
  const Tensor& t = ctx->input(index);
  if (t.dtype() != DT_INT32 || t.NumElements() != 1 || t.dims() > 1) {
    return errors::InvalidArgument(name, " must be an int32 scalar, got ",
                                   DataTypeString(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  *out = t.flat<int32_t>()[0];
  return absl::OkStatus();
}

// Asynchronous: the all-reduce runs on the group's thread, and the step's
// other kernels go on meanwhile (Note [Collective order]).
class CollectiveReduceV2Kernel : public AsyncOpKernel {
 public:
  explicit CollectiveReduceV2Kernel(OpKernelConstruction* c)
      : AsyncOpKernel(c) {
    std::string merge, final_op;
    OP_REQUIRES_OK(c, c->GetAttr("merge_op", &merge));
    OP_REQUIRES_OK(c, c->GetAttr("final_op", &final_op));
    if (merge == "Add") {
      op_ = ReduceOp::kSum;
    } else if (merge == "Mul") {
      op_ = ReduceOp::kProd;
    } else if (merge == "Min") {
      op_ = ReduceOp::kMin;
    } else if (merge == "Max") {
      op_ = ReduceOp::kMax;
    } else {
      c->CtxFailure(errors::InvalidArgument("unknown merge_op '", merge, "'"));
      return;
    }
    OP_REQUIRES(c, final_op == "Id" || final_op == "Div",
                errors::InvalidArgument("unknown final_op '", final_op, "'"));
    divide_ = final_op == "Div";
    float timeout = 0;
    OP_REQUIRES_OK(c, c->GetAttr("timeout_seconds", &timeout));
    OP_REQUIRES(
        c, timeout >= 0,
        errors::InvalidArgument("timeout_seconds must be >= 0, got ", timeout));
    timeout_ = absl::Seconds(timeout > 0 ? timeout : kDefaultTimeoutSeconds);
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    int32_t group_size = 0, group_key = 0, instance_key = 0;
    OP_REQUIRES_OK_ASYNC(ctx, ScalarInt32(ctx, 1, "group_size", &group_size),
                         done);
    OP_REQUIRES_OK_ASYNC(ctx, ScalarInt32(ctx, 2, "group_key", &group_key),
                         done);
    OP_REQUIRES_OK_ASYNC(
        ctx, ScalarInt32(ctx, 3, "instance_key", &instance_key), done);
    const Tensor& input = ctx->input(0);
    OP_REQUIRES_ASYNC(ctx,
                      input.dtype() == DT_FLOAT || input.dtype() == DT_DOUBLE,
                      errors::InvalidArgument("reduces float and double, not ",
                                              DataTypeString(input.dtype())),
                      done);
    std::shared_ptr<CollectiveGroup> group = FindCollectiveGroup(group_key);
    OP_REQUIRES_ASYNC(
        ctx, group != nullptr,
        errors::NotFound("this process is no member of collective group ",
                         group_key,
                         " (a group is registered before the steps that use "
                         "it: runnel/framework/collective.h)"),
        done);
    OP_REQUIRES_ASYNC(
        ctx, group_size == group->size(),
        errors::InvalidArgument("group_size is ", group_size,
                                " but collective group ", group_key, " has ",
                                group->size(), " members"),
        done);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, input.shape(), &out),
                         done);
    if (input.TotalBytes() > 0) {
      std::memcpy(out->raw_data(), input.raw_data(), input.TotalBytes());
    }
    const bool divide = divide_;
    // The group drains its queue before it goes: no reference is needed.
    group->AllReduceAsync(out, op_, instance_key, timeout_,
                          [ctx, out, group_size, divide,
                           done = std::move(done)](const Status& s) {
                            if (!s.ok()) {
                              ctx->SetStatus(s);
                            } else if (divide && out->dtype() == DT_FLOAT) {
                              const float n = static_cast<float>(group_size);
                              for (float& v : out->flat<float>()) v /= n;
                            } else if (divide) {
                              const double n = group_size;
                              for (double& v : out->flat<double>()) v /= n;
                            }
                            done();
                          });
  }

 private:
  ReduceOp op_ = ReduceOp::kSum;
  bool divide_ = false;
  absl::Duration timeout_;
};

REGISTER_KERNEL_BUILDER(Name("CollectiveReduceV2")
                            .Device(kDeviceCpu)
                            .HostMemory("group_size")
                            .HostMemory("group_key")
                            .HostMemory("instance_key"),
                        CollectiveReduceV2Kernel);

// TF registers none either: the op reduces gradients, after differentiation.
REGISTER_NO_GRADIENT("CollectiveReduceV2",
                     "an all-reduce runs on gradients, after the backward "
                     "pass (runnel/training/allreduce.h)");

}  // namespace
}  // namespace runnel
