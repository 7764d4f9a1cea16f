#include "runnel/distributed/tensor_coding.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/named_tensor.pb.h"
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
constexpr int kResponseFloatAsBfloat16 = 1001;
constexpr int kTensorDtype = 1;
constexpr int kTensorShape = 2;
constexpr int kTensorContent = 4;
constexpr int kNamedName = 1;  // NamedTensorProto (proto/named_tensor.proto).
constexpr int kNamedTensor = 2;

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
  proto.set_runnel_float_as_bfloat16(r.float_as_bfloat16);
  if (!r.is_dead) r.tensor.AsProtoTensorContent(proto.mutable_tensor());
  SerializeToByteBuffer(proto, out);
}

Status DecodeSlow(const grpc::ByteBuffer& in, TensorResponse* out) {
  RecvTensorResponse proto;
  RETURN_IF_ERROR(ParseFromByteBuffer(in, &proto, "RecvTensor"));
  out->is_dead = proto.is_dead();
  out->send_start_micros = proto.send_start_micros();
  out->float_as_bfloat16 = proto.runnel_float_as_bfloat16();
  out->tensor = Tensor();
  if (!out->is_dead) {
    ASSIGN_OR_RETURN(out->tensor, Tensor::FromProto(proto.tensor()));
  }
  return absl::OkStatus();
}

// Holds the tensor (so its buffer) while gRPC sends from it.
void UnrefTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

void PutVarint(std::string* s, uint64_t v) {
  while (v >= 0x80) {
    s->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s->push_back(static_cast<char>(v));
}

void PutTag(std::string* s, int field, WireFormatLite::WireType type) {
  PutVarint(s, Tag(field, type));
}

size_t VarintSize(uint64_t v) { return CodedOutputStream::VarintSize64(v); }

// Reads a length-delimited TensorProto whose tensor_content holds the
// values, straight into a new tensor. False when the layout is another
// (protobuf's job); errors in the data itself go to `status` (with true).
bool ReadTensorFast(CodedInputStream* in, absl::string_view what, Tensor* out,
                    Status* status) {
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
    } else if (t ==
               Tag(kTensorShape, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      uint32_t n;
      std::string bytes;
      if (have_shape || !in->ReadVarint32(&n) || !in->ReadString(&bytes, n) ||
          !shape.ParseFromString(bytes)) {
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
        *status = errors::InvalidArgument(what, ": ", s.status().message());
        return true;
      }
      const int64_t cap = MaxDecodedTensorBytes();
      if (s->num_elements() > cap / std::max<int64_t>(1, DataTypeSize(dtype))) {
        *status = errors::ResourceExhausted(
            what, ": a tensor of ", DataTypeString(dtype), " with shape ",
            s->DebugString(), " is over the limit of ", cap,
            " bytes for a decoded tensor");
        return true;
      }
      StatusOr<Tensor> t2 = Tensor::Allocate(cpu_allocator(), dtype, *s);
      if (!t2.ok()) {
        *status = t2.status();
        return true;
      }
      if (n != t2->TotalBytes()) {
        *status = errors::InvalidArgument(what, ": tensor_content has ", n,
                                          " bytes but shape ", s->DebugString(),
                                          " of ", DataTypeString(dtype),
                                          " needs ", t2->TotalBytes());
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
      *out = *std::move(t2);
    } else {
      return false;  // float_val, version_number, ...: protobuf's job.
    }
  }
  if (!in->ConsumedEntireMessage()) return false;
  in->PopLimit(limit);
  return have_content;  // An empty or value-list tensor: protobuf's job.
}

// The fast path of Decode; false when the layout is not the expected one
// (the caller then parses with protobuf). Errors in the data itself are
// returned through `status`.
bool DecodeFast(CodedInputStream* in, TensorResponse* out, Status* status) {
  out->is_dead = false;
  out->send_start_micros = 0;
  out->float_as_bfloat16 = false;
  out->tensor = Tensor();
  bool have_tensor = false;
  for (;;) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) {
      return in->ConsumedEntireMessage() && (have_tensor || out->is_dead);
    }
    if (tag == Tag(kResponseIsDead, WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      out->is_dead = v != 0;
    } else if (tag ==
               Tag(kResponseSendStartMicros, WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      out->send_start_micros = static_cast<int64_t>(v);
    } else if (tag ==
               Tag(kResponseFloatAsBfloat16, WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      out->float_as_bfloat16 = v != 0;
    } else if (tag == Tag(kResponseTensor,
                          WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      if (have_tensor) return false;  // Merged submessages: let protobuf.
      have_tensor = true;
      if (!ReadTensorFast(in, "RecvTensor", &out->tensor, status)) {
        return false;
      }
      if (!status->ok()) return true;
    } else {
      if (!WireFormatLite::SkipField(in, tag)) return false;
    }
  }
}

// Entries of at most this many bytes are parsed by protobuf.
constexpr uint32_t kSmallEntryBytes = 64 << 10;

// One NamedTensorProto entry (its length already read) into `tensors`.
bool ReadNamedTensor(CodedInputStream* in, uint32_t len, absl::string_view what,
                     NamedTensorList* tensors, Status* status) {
  if (len <= kSmallEntryBytes) {
    std::string bytes;
    NamedTensorProto proto;
    if (!in->ReadString(&bytes, static_cast<int>(len)) ||
        !proto.ParseFromString(bytes)) {
      return false;
    }
    StatusOr<Tensor> t = Tensor::FromProto(proto.tensor());
    if (!t.ok()) {
      *status = errors::InvalidArgument(what, ": tensor '", proto.name(),
                                        "': ", t.status().message());
      return true;
    }
    tensors->emplace_back(proto.name(), *std::move(t));
    return true;
  }
  const CodedInputStream::Limit limit = in->PushLimit(static_cast<int>(len));
  std::string name;
  Tensor value;
  bool have_name = false, have_tensor = false;
  for (;;) {
    const uint32_t t = in->ReadTag();
    if (t == 0) break;
    if (t == Tag(kNamedName, WireFormatLite::WIRETYPE_LENGTH_DELIMITED) &&
        !have_name) {
      uint32_t n;
      if (!in->ReadVarint32(&n) || !in->ReadString(&name, static_cast<int>(n)))
        return false;
      have_name = true;
    } else if (t == Tag(kNamedTensor,
                        WireFormatLite::WIRETYPE_LENGTH_DELIMITED) &&
               !have_tensor) {
      have_tensor = true;
      const std::string entry = absl::StrCat(what, ": tensor '", name, "'");
      if (!ReadTensorFast(in, entry, &value, status)) return false;
      if (!status->ok()) return true;
    } else {
      return false;
    }
  }
  if (!have_tensor || !in->ConsumedEntireMessage()) return false;
  in->PopLimit(limit);
  tensors->emplace_back(std::move(name), std::move(value));
  return true;
}

// Copies one field other than the tensors' (its tag already read) to
// `rest`. False for a wire type protobuf 3 does not write (groups).
bool CopyField(CodedInputStream* in, uint32_t tag, std::string* rest) {
  PutVarint(rest, tag);
  switch (WireFormatLite::GetTagWireType(tag)) {
    case WireFormatLite::WIRETYPE_VARINT: {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      PutVarint(rest, v);
      return true;
    }
    case WireFormatLite::WIRETYPE_FIXED64: {
      uint64_t v;
      if (!in->ReadLittleEndian64(&v)) return false;
      rest->append(reinterpret_cast<const char*>(&v), 8);
      return true;
    }
    case WireFormatLite::WIRETYPE_FIXED32: {
      uint32_t v;
      if (!in->ReadLittleEndian32(&v)) return false;
      rest->append(reinterpret_cast<const char*>(&v), 4);
      return true;
    }
    case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
      uint32_t n;
      std::string bytes;
      if (!in->ReadVarint32(&n) || !in->ReadString(&bytes, static_cast<int>(n)))
        return false;
      PutVarint(rest, n);
      rest->append(bytes);
      return true;
    }
    default:
      return false;
  }
}

// The fast path of DecodeMessageWithTensors: the tensors' entries decoded,
// every other field copied to `rest` for protobuf. False when the layout
// is not the expected one.
bool DecodeWithTensorsFast(CodedInputStream* in, int field,
                           absl::string_view what, NamedTensorList* tensors,
                           std::string* rest, Status* status) {
  const uint32_t entry_tag =
      Tag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  for (;;) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return in->ConsumedEntireMessage();
    if (tag == entry_tag) {
      uint32_t len;
      if (!in->ReadVarint32(&len) || len > INT32_MAX) return false;
      if (!ReadNamedTensor(in, len, what, tensors, status)) return false;
      if (!status->ok()) return true;
    } else if (!CopyField(in, tag, rest)) {
      return false;
    }
  }
}

// Appends the bytes of a NamedTensorProto entry of `field`.
class SliceWriter {
 public:
  std::string* bytes() { return &pending_; }
  // The tensor's buffer as the next slice (holding a reference to it).
  void AppendTensorBuffer(const Tensor& t) {
    Flush();
    slices_.emplace_back(t.raw_data(), t.TotalBytes(), &UnrefTensor,
                         new Tensor(t));
  }
  void Finish(grpc::ByteBuffer* out) {
    Flush();
    grpc::ByteBuffer tmp(slices_.data(), slices_.size());
    out->Swap(&tmp);
  }

 private:
  void Flush() {
    if (pending_.empty()) return;
    slices_.emplace_back(pending_);
    pending_.clear();
  }
  std::string pending_;
  std::vector<grpc::Slice> slices_;
};

void AppendNamedTensor(int field, const std::string& name, const Tensor& t,
                       SliceWriter* w) {
  std::string* b = w->bytes();
  if (!Memcpyable(t.dtype()) || t.TotalBytes() <= kLargeTensorBytes) {
    NamedTensorProto proto;
    proto.set_name(name);
    t.AsProtoTensorContent(proto.mutable_tensor());
    PutTag(b, field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    PutVarint(b, proto.ByteSizeLong());
    proto.AppendToString(b);
    return;
  }
  TensorProto skeleton;
  skeleton.set_dtype(t.dtype());
  t.shape().AsProto(skeleton.mutable_tensor_shape());
  const std::string head = skeleton.SerializeAsString();
  const size_t n = t.TotalBytes();
  const size_t tensor_len = head.size() + 1 + VarintSize(n) + n;
  const size_t name_len =
      name.empty() ? 0 : 1 + VarintSize(name.size()) + name.size();
  const size_t entry_len = name_len + 1 + VarintSize(tensor_len) + tensor_len;
  PutTag(b, field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  PutVarint(b, entry_len);
  if (!name.empty()) {
    PutTag(b, kNamedName, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    PutVarint(b, name.size());
    b->append(name);
  }
  PutTag(b, kNamedTensor, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  PutVarint(b, tensor_len);
  b->append(head);
  PutTag(b, kTensorContent, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  PutVarint(b, n);
  w->AppendTensorBuffer(t);
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
  if (r.float_as_bfloat16) {
    google::protobuf::io::StringOutputStream sos(&last);
    CodedOutputStream cos(&sos);
    cos.WriteTag(
        Tag(kResponseFloatAsBfloat16, WireFormatLite::WIRETYPE_VARINT));
    cos.WriteVarint64(1);
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

StatusOr<Tensor> FloatToBfloat16Truncated(const Tensor& floats) {
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(cpu_allocator(), DT_BFLOAT16,
                                                floats.shape()));
  const uint32_t* src = static_cast<const uint32_t*>(floats.raw_data());
  uint16_t* dst = static_cast<uint16_t*>(out.raw_data());
  const int64_t n = floats.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = src[i];
    // A NaN whose payload is all in the low bits would truncate to Inf.
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    dst[i] = nan ? static_cast<uint16_t>((u >> 16) | 0x0040u)
                 : static_cast<uint16_t>(u >> 16);
  }
  return out;
}

StatusOr<Tensor> Bfloat16ToFloat(const Tensor& bf16) {
  ASSIGN_OR_RETURN(Tensor out,
                   Tensor::Allocate(cpu_allocator(), DT_FLOAT, bf16.shape()));
  const uint16_t* src = static_cast<const uint16_t*>(bf16.raw_data());
  uint32_t* dst = static_cast<uint32_t*>(out.raw_data());
  const int64_t n = bf16.NumElements();
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint32_t>(src[i]) << 16;
  return out;
}

void EncodeMessageWithTensors(const google::protobuf::Message& msg, int field,
                              const NamedTensorList& tensors,
                              grpc::ByteBuffer* out) {
  SliceWriter w;
  msg.AppendToString(w.bytes());
  for (const auto& [name, t] : tensors) AppendNamedTensor(field, name, t, &w);
  w.Finish(out);
}

Status DecodeMessageWithTensors(const grpc::ByteBuffer& in, int field,
                                google::protobuf::Message* msg,
                                NamedTensorList* tensors,
                                absl::string_view what) {
  tensors->clear();
  {
    grpc::ByteBuffer copy(in);
    grpc::ProtoBufferReader reader(&copy);
    CodedInputStream cis(&reader);
    cis.SetTotalBytesLimit(INT32_MAX);
    std::string rest;
    Status status;
    if (DecodeWithTensorsFast(&cis, field, what, tensors, &rest, &status)) {
      if (!status.ok()) {
        tensors->clear();
        return status;
      }
      if (!msg->ParseFromString(rest)) {
        tensors->clear();
        return errors::InvalidArgument(what, ": the message is not a valid ",
                                       msg->GetTypeName());
      }
      return absl::OkStatus();
    }
  }
  // Another layout: protobuf parses it all, then the entries move out.
  tensors->clear();
  RETURN_IF_ERROR(ParseFromByteBuffer(in, msg, what));
  const google::protobuf::FieldDescriptor* fd =
      msg->GetDescriptor()->FindFieldByNumber(field);
  if (fd == nullptr || !fd->is_repeated() ||
      fd->message_type() != NamedTensorProto::descriptor()) {
    return errors::Internal(msg->GetTypeName(), " has no repeated ",
                            "NamedTensorProto field ", field);
  }
  const google::protobuf::Reflection* refl = msg->GetReflection();
  const int size = refl->FieldSize(*msg, fd);
  for (int i = 0; i < size; ++i) {
    const auto& e = static_cast<const NamedTensorProto&>(
        refl->GetRepeatedMessage(*msg, fd, i));
    StatusOr<Tensor> t = Tensor::FromProto(e.tensor());
    if (!t.ok()) {
      tensors->clear();
      return errors::InvalidArgument(what, ": tensor '", e.name(),
                                     "': ", t.status().message());
    }
    tensors->emplace_back(e.name(), *std::move(t));
  }
  refl->ClearField(msg, fd);
  return absl::OkStatus();
}

}  // namespace runnel
