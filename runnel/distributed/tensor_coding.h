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
};

void EncodeRecvTensorResponse(const TensorResponse& response,
                              grpc::ByteBuffer* out);

// InvalidArgument (or ResourceExhausted for a tensor over the cap) naming
// what is wrong with the bytes.
Status DecodeRecvTensorResponse(const grpc::ByteBuffer& in,
                                TensorResponse* out);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_TENSOR_CODING_H_
