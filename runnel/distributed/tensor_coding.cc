#include "runnel/distributed/tensor_coding.h"

#include <cstring>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/worker.pb.h"
#include "runnel/distributed/grpc_util.h"
#include "runnel/framework/allocator.h"

namespace runnel {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// RecvTensorResponse / TensorProto field numbers (proto/worker.proto,
// proto/tensor.proto).
constexpr int kResponseTensor = 1;
constexpr int kResponseIsDead = 2;
constexpr int kResponseSendStartMicros = 3;
constexpr int kTensorDtype = 1;
constexpr int kTensorShape = 2;
constexpr int kTensorContent = 4;

uint32_t Tag(int field, WireFormatLite::WireType type) {
  return WireFormatLite::MakeTag(field, type);
}

bool Memcpyable(DataType dt) {
  return dt != DT_STRING && dt != DT_RESOURCE && dt != DT_VARIANT &&
         DataTypeIsKnown(dt, /*allow_ref=*/false);
}

void EncodeSlow(const TensorResponse& r, grpc::ByteBuffer* out) {
  RecvTensorResponse proto;
  proto.set_is_dead(r.is_dead);
  proto.set_send_start_micros(r.send_start_micros);
  if (!r.is_dead) r.tensor.AsProtoTensorContent(proto.mutable_tensor());
  SerializeToByteBuffer(proto, out);
}

Status DecodeSlow(const grpc::ByteBuffer& in, TensorResponse* out) {
  RecvTensorResponse proto;
  RETURN_IF_ERROR(ParseFromByteBuffer(in, &proto, "RecvTensor"));
  out->is_dead = proto.is_dead();
  out->send_start_micros = proto.send_start_micros();
  out->tensor = Tensor();
  if (!out->is_dead) {
    ASSIGN_OR_RETURN(out->tensor, Tensor::FromProto(proto.tensor()));
  }
  return absl::OkStatus();
}

// Holds the tensor (so its buffer) while gRPC sends from it.
void UnrefTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

// The fast path of Decode; false when the layout is not the expected one
// (the caller then parses with protobuf). Errors in the data itself are
// returned through `status`.
bool DecodeFast(CodedInputStream* in, TensorResponse* out, Status* status) {
  out->is_dead = false;
  out->send_start_micros = 0;
  out->tensor = Tensor();
  bool have_tensor = false;
  for (;;) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) {
      return in->ConsumedEntireMessage() && (have_tensor || out->is_dead);
    }
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (tag == Tag(kResponseIsDead, WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      out->is_dead = v != 0;
    } else if (tag ==
               Tag(kResponseSendStartMicros, WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      out->send_start_micros = static_cast<int64_t>(v);
    } else if (tag == Tag(kResponseTensor,
                          WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      if (have_tensor) return false;  // Merged submessages: let protobuf.
      have_tensor = true;
      uint32_t len;
      if (!in->ReadVarint32(&len)) return false;
      const CodedInputStream::Limit limit = in->PushLimit(len);
      DataType dtype = DT_INVALID;
      TensorShapeProto shape;
      bool have_shape = false, have_content = false;
      for (;;) {
        const uint32_t t = in->ReadTag();
        if (t == 0) break;
        if (t == Tag(kTensorDtype, WireFormatLite::WIRETYPE_VARINT)) {
          uint64_t v;
          if (!in->ReadVarint64(&v) || v > INT32_MAX) return false;
          dtype = static_cast<DataType>(v);
        } else if (t == Tag(kTensorShape,
                            WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
          uint32_t n;
          std::string bytes;
          if (have_shape || !in->ReadVarint32(&n) ||
              !in->ReadString(&bytes, n) || !shape.ParseFromString(bytes)) {
            return false;
          }
          have_shape = true;
        } else if (t == Tag(kTensorContent,
                            WireFormatLite::WIRETYPE_LENGTH_DELIMITED) &&
                   !have_content && Memcpyable(dtype)) {
          have_content = true;
          uint32_t n;
          if (!in->ReadVarint32(&n) || n > INT32_MAX) return false;
          // Validate as Tensor::FromProto does, then read in place.
          StatusOr<TensorShape> s = TensorShape::FromProto(shape);
          if (!s.ok()) {
            *status = s.status();
            return true;
          }
          const int64_t cap = MaxDecodedTensorBytes();
          if (s->num_elements() >
              cap / std::max<int64_t>(1, DataTypeSize(dtype))) {
            *status = errors::ResourceExhausted(
                "RecvTensor: a tensor of ", DataTypeString(dtype),
                " with shape ", s->DebugString(), " is over the limit of ", cap,
                " bytes for a decoded tensor");
            return true;
          }
          StatusOr<Tensor> t2 = Tensor::Allocate(cpu_allocator(), dtype, *s);
          if (!t2.ok()) {
            *status = t2.status();
            return true;
          }
          if (n != t2->TotalBytes()) {
            *status = errors::InvalidArgument(
                "RecvTensor: tensor_content has ", n, " bytes but shape ",
                s->DebugString(), " of ", DataTypeString(dtype), " needs ",
                t2->TotalBytes());
            return true;
          }
          if (n > 0 && !in->ReadRaw(t2->raw_data(), static_cast<int>(n))) {
            return false;
          }
          if (dtype == DT_BOOL) {
            // Normalize as FromProto does: any nonzero byte is true.
            auto* b = static_cast<uint8_t*>(t2->raw_data());
            for (uint32_t i = 0; i < n; ++i) b[i] = b[i] != 0;
          }
          out->tensor = *std::move(t2);
        } else {
          return false;  // float_val, version_number, ...: protobuf's job.
        }
      }
      if (!in->ConsumedEntireMessage()) return false;
      in->PopLimit(limit);
      if (!have_content) return false;  // An empty or value-list tensor.
    } else {
      (void)field;
      if (!WireFormatLite::SkipField(in, tag)) return false;
    }
  }
}

}  // namespace

void EncodeRecvTensorResponse(const TensorResponse& r, grpc::ByteBuffer* out) {
  if (r.is_dead || !Memcpyable(r.tensor.dtype()) ||
      r.tensor.TotalBytes() <= kLargeTensorBytes) {
    return EncodeSlow(r, out);
  }
  // The TensorProto skeleton: dtype and shape.
  TensorProto skeleton;
  skeleton.set_dtype(r.tensor.dtype());
  r.tensor.shape().AsProto(skeleton.mutable_tensor_shape());
  const std::string head = skeleton.SerializeAsString();
  const size_t n = r.tensor.TotalBytes();
  const size_t content_header =
      1 + CodedOutputStream::VarintSize64(n);  // Tag 4, length.
  const size_t tensor_len = head.size() + content_header + n;

  std::string first;
  first.reserve(32 + head.size());
  {
    google::protobuf::io::StringOutputStream sos(&first);
    CodedOutputStream cos(&sos);
    cos.WriteTag(
        Tag(kResponseTensor, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    cos.WriteVarint64(tensor_len);
    cos.WriteRaw(head.data(), static_cast<int>(head.size()));
    cos.WriteTag(
        Tag(kTensorContent, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    cos.WriteVarint64(n);
  }
  // Fields after the tensor, in field order (as protobuf writes them).
  std::string last;
  if (r.send_start_micros != 0) {
    google::protobuf::io::StringOutputStream sos(&last);
    CodedOutputStream cos(&sos);
    cos.WriteTag(
        Tag(kResponseSendStartMicros, WireFormatLite::WIRETYPE_VARINT));
    cos.WriteVarint64(static_cast<uint64_t>(r.send_start_micros));
  }
  grpc::Slice slices[3] = {
      grpc::Slice(first),
      grpc::Slice(r.tensor.raw_data(), n, &UnrefTensor, new Tensor(r.tensor)),
      grpc::Slice(last)};
  grpc::ByteBuffer tmp(slices, last.empty() ? 2 : 3);
  out->Swap(&tmp);
}

Status DecodeRecvTensorResponse(const grpc::ByteBuffer& in,
                                TensorResponse* out) {
  {
    grpc::ByteBuffer copy(in);
    grpc::ProtoBufferReader reader(&copy);
    CodedInputStream cis(&reader);
    cis.SetTotalBytesLimit(INT32_MAX);
    Status status;
    if (DecodeFast(&cis, out, &status)) return status;
  }
  return DecodeSlow(in, out);
}

}  // namespace runnel
