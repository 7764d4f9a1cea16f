// RecvTensor's wire coding without copies of large tensors (TF:
// distributed_runtime/rpc/grpc_tensor_coding.cc; FORMATS.md (d) "Fast
// tensors over gRPC").
//
// Encode: a RecvTensorResponse hand-written in gRPC slices. The first holds
// the fields before the tensor's bytes (the tags and lengths of `tensor`
// and `tensor_content`, the dtype and shape); the second points at the
// tensor's own buffer and holds a reference to it until gRPC is done with
// it; a third, if needed, the fields after. Tensors of at most
// kLargeTensorBytes, and strings and resources, go through protobuf in one
// slice. The bytes are exactly what protobuf would write for the same message,
// field for field.
//
// Decode: reads the response's fields in place and copies tensor_content
// straight into a freshly allocated tensor (validated like
// Tensor::FromProto: dtype, shape, the decoded-tensor cap, the byte count);
// any layout it does not expect (another peer's field order, values in
// float_val, unknown fields inside the tensor) falls back to a full protobuf
// parse, so every valid message decodes.
#ifndef RUNNEL_DISTRIBUTED_TENSOR_CODING_H_
#define RUNNEL_DISTRIBUTED_TENSOR_CODING_H_

#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"

namespace runnel {

inline constexpr size_t kLargeTensorBytes = 1024;

// What a RecvTensor returns, decoded.
struct TensorResponse {
  Tensor tensor;
  bool is_dead = false;
  int64_t send_start_micros = 0;
  // `tensor` holds bfloat16 values of a float tensor, to be widened
  // (RecvTensorResponse.runnel_float_as_bfloat16).
  bool float_as_bfloat16 = false;
};

// Lossy 16-bit transfer compression (whitepaper §5.5): a bfloat16 tensor of
// the upper 16 bits of each float of `floats` (truncation, as the paper
// does; NaN stays NaN), and back to float exactly. ResourceExhausted when
// the result cannot be allocated.
StatusOr<Tensor> FloatToBfloat16Truncated(const Tensor& floats);
StatusOr<Tensor> Bfloat16ToFloat(const Tensor& bf16);

void EncodeRecvTensorResponse(const TensorResponse& response,
                              grpc::ByteBuffer* out);

// InvalidArgument (or ResourceExhausted for a tensor over the cap) naming
// what is wrong with the bytes.
Status DecodeRecvTensorResponse(const grpc::ByteBuffer& in,
                                TensorResponse* out);

// Note [Tensors beside messages]: RunStep's feeds and fetches and
// RunGraph's sends and recvs are repeated NamedTensorProto fields
// (RunStepRequest.feed = 2, RunStepResponse.tensor = 1, RunGraphRequest.send
// = 3, RunGraphResponse.recv = 1). Runnel carries their values as Tensors
// beside the message instead (TF does not, which made client fetches 40x
// slower than in-process: tensorflow#6256). On the wire they are ordinary
// entries of that field, after the message's other fields (protobuf accepts
// fields in any order), so any protobuf peer reads and writes them.
using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;

// Serializes `msg` followed by `tensors` as entries of its repeated
// NamedTensorProto field number `field`; a tensor of more than
// kLargeTensorBytes travels as a slice of its own buffer (held until gRPC is
// done with it).
void EncodeMessageWithTensors(const google::protobuf::Message& msg, int field,
                              const NamedTensorList& tensors,
                              grpc::ByteBuffer* out);

// Parses `in` into `msg`, except the entries of its repeated
// NamedTensorProto field `field`, which are decoded into `tensors` in wire
// order (a large tensor_content straight into a freshly allocated tensor,
// validated like Tensor::FromProto). InvalidArgument naming `what` for bytes
// that are not a valid message, or (naming the entry) a tensor that is not
// valid; ResourceExhausted for a tensor over the decoded-tensor cap.
Status DecodeMessageWithTensors(const grpc::ByteBuffer& in, int field,
                                google::protobuf::Message* msg,
                                NamedTensorList* tensors,
                                absl::string_view what);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_TENSOR_CODING_H_
