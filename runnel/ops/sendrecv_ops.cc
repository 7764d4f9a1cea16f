// _Send / _Recv (and _HostSend / _HostRecv): the two ends of an edge the
// partitioner cut between devices (whitepaper §3.2.2). The send side leaves
// its input in the step's rendezvous under a key naming both devices, the
// edge and the loop iteration; the receive side, asynchronously, picks it up.
// A dead input (an untaken conditional branch) travels as a dead token, so
// dead tensors cross devices as dead.
#include "absl/strings/str_format.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/rendezvous.h"

namespace runnel {
namespace {

// Attrs of all four ops:
//   tensor_name: the name of the edge, unique per (sender, receiver) pair in
//     a step.
//   send_device: full name of the sending device.
//   send_device_incarnation: the sending device's incarnation (an int64
//     holding the 64 bits), part of the rendezvous key.
//   recv_device: full name of the receiving device.
//   client_terminated: the other end is the client (a feed or fetch), not a
//     node.

#define REGISTER_SEND_OP(NAME, DOC)            \
  REGISTER_OP(NAME)                            \
      .Input("tensor: T")                      \
      .Attr("T: type")                         \
      .Attr("tensor_name: string")             \
      .Attr("send_device: string")             \
      .Attr("send_device_incarnation: int")    \
      .Attr("recv_device: string")             \
      .Attr("client_terminated: bool = false") \
      .SetIsStateful()                         \
      .SetShapeFn(shape_fns::NoOutputs)        \
      .Doc(DOC)

#define REGISTER_RECV_OP(NAME, DOC)            \
  REGISTER_OP(NAME)                            \
      .Output("tensor: tensor_type")           \
      .Attr("tensor_type: type")               \
      .Attr("tensor_name: string")             \
      .Attr("send_device: string")             \
      .Attr("send_device_incarnation: int")    \
      .Attr("recv_device: string")             \
      .Attr("client_terminated: bool = false") \
      .SetIsStateful()                         \
      .SetShapeFn(shape_fns::UnknownShape)     \
      .Doc(DOC)

REGISTER_SEND_OP("_Send",
                 "Sends `tensor` to `recv_device` through the step's "
                 "rendezvous.");
REGISTER_RECV_OP("_Recv",
                 "Receives the tensor `send_device` sent under "
                 "`tensor_name`.");
REGISTER_SEND_OP("_HostSend",
                 "Like _Send, for a tensor in host memory on any device.");
REGISTER_RECV_OP("_HostRecv", "Like _Recv, into host memory on any device.");

// The key parts fixed by the node's attrs; the frame and iteration are
// appended per execution.
class TransferKey {
 public:
  explicit TransferKey(OpKernelConstruction* c) {
    std::string send_device, recv_device, name;
    int64_t incarnation = 0;
    OP_REQUIRES_OK(c, c->GetAttr("send_device", &send_device));
    OP_REQUIRES_OK(c, c->GetAttr("recv_device", &recv_device));
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    OP_REQUIRES_OK(c, c->GetAttr("send_device_incarnation", &incarnation));
    OP_REQUIRES(c, !name.empty(),
                errors::InvalidArgument("tensor_name must not be empty"));
    prefix_ = absl::StrCat(
        send_device, ";",
        absl::StrFormat("%016x", static_cast<uint64_t>(incarnation)), ";",
        recv_device, ";", name, ";");
    OP_REQUIRES_OK(
        c, Rendezvous::ParseKey(absl::StrCat(prefix_, "0:0"), &root_key_));
  }

  // The key for `frame_iter`: the precomputed one outside loops.
  const Rendezvous::ParsedKey* Get(const FrameAndIter& frame_iter,
                                   Rendezvous::ParsedKey* scratch,
                                   Status* status) const {
    if (frame_iter == FrameAndIter{}) return &root_key_;
    *status = Rendezvous::ParseKey(
        absl::StrCat(prefix_, frame_iter.frame_id, ":", frame_iter.iter_id),
        scratch);
    return scratch;
  }

 private:
  std::string prefix_;
  Rendezvous::ParsedKey root_key_;
};

class SendKernel : public OpKernel {
 public:
  explicit SendKernel(OpKernelConstruction* c) : OpKernel(c), key_(c) {}
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    Rendezvous* rendezvous = ctx->rendezvous();
    OP_REQUIRES(ctx, rendezvous != nullptr,
                errors::Internal("no rendezvous for this step (a _Send runs "
                                 "only inside a session step)"));
    Rendezvous::ParsedKey scratch;
    Status s;
    const Rendezvous::ParsedKey* key =
        key_.Get(ctx->frame_iter(), &scratch, &s);
    OP_REQUIRES_OK(ctx, s);
    Rendezvous::Args args;
    args.device_context = ctx->op_device_context();
    if (ctx->is_input_dead()) {
      OP_REQUIRES_OK(ctx, rendezvous->Send(*key, args, Tensor(), true));
    } else {
      OP_REQUIRES_OK(ctx,
                     rendezvous->Send(*key, args, ctx->input_value(0), false));
    }
  }

 private:
  TransferKey key_;
};

class RecvKernel : public AsyncOpKernel {
 public:
  explicit RecvKernel(OpKernelConstruction* c) : AsyncOpKernel(c), key_(c) {}
  // Starting a Recv only registers a callback (or starts an RPC): a
  // partition's many root Recvs start inline instead of one pool task each.
  bool IsExpensive() const override { return false; }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Rendezvous* rendezvous = ctx->rendezvous();
    OP_REQUIRES_ASYNC(ctx, rendezvous != nullptr,
                      errors::Internal("no rendezvous for this step (a _Recv "
                                       "runs only inside a session step)"),
                      done);
    Rendezvous::ParsedKey scratch;
    Status s;
    const Rendezvous::ParsedKey* key =
        key_.Get(ctx->frame_iter(), &scratch, &s);
    OP_REQUIRES_OK_ASYNC(ctx, s, done);
    Rendezvous::Args args;
    args.device_context = ctx->op_device_context();
    const DataType want = output_type(0);
    rendezvous->RecvAsync(
        *key, args,
        [ctx, want, done = std::move(done)](
            const Status& status, const Rendezvous::Args&,
            const Rendezvous::Args&, const Tensor& value, bool is_dead) {
          if (!status.ok()) {
            ctx->SetStatus(status);
          } else if (is_dead) {
            ctx->set_is_output_dead(true);
          } else if (value.dtype() != want) {
            ctx->SetStatus(errors::Internal(
                "received a ", DataTypeString(value.dtype()),
                " tensor but expected ", DataTypeString(want)));
          } else {
            ctx->set_output(0, value);
          }
          done();
        });
  }

 private:
  TransferKey key_;
};

REGISTER_KERNEL_BUILDER(Name("_Send").Device(kDeviceCpu), SendKernel);
REGISTER_KERNEL_BUILDER(Name("_Recv").Device(kDeviceCpu), RecvKernel);
REGISTER_KERNEL_BUILDER(Name("_HostSend").Device(kDeviceCpu), SendKernel);
REGISTER_KERNEL_BUILDER(Name("_HostRecv").Device(kDeviceCpu), RecvKernel);

}  // namespace
}  // namespace runnel
