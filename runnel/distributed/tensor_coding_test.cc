// RecvTensor's zero-copy coding: the bytes equal protobuf's own for the
// same message, every valid message decodes (fast path or not), and bad
// bytes are errors, never crashes.
#include "runnel/distributed/tensor_coding.h"

#include <gtest/gtest.h>

#include "proto/worker.pb.h"
#include "runnel/distributed/grpc_util.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

std::string Bytes(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(b.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

grpc::ByteBuffer FromBytes(const std::string& bytes) {
  grpc::Slice s(bytes);
  return grpc::ByteBuffer(&s, 1);
}

Tensor Floats(int64_t n) {
  Tensor t(DT_FLOAT, TensorShape({n / 2, 2}));
  for (int64_t i = 0; i < n; ++i) t.flat<float>()[i] = 0.5f * i - 3;
  return t;
}

TEST(TensorCodingTest, LargeTensorIsItsOwnSliceInProtobufsBytes) {
  TensorResponse r;
  r.tensor = Floats(1000);
  r.send_start_micros = 1234567;
  grpc::ByteBuffer buf;
  EncodeRecvTensorResponse(r, &buf);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buf.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 3u);
  // The second slice is the tensor's own buffer: no copy was made.
  EXPECT_EQ(static_cast<const void*>(slices[1].begin()), r.tensor.raw_data());

  RecvTensorResponse proto;
  proto.set_send_start_micros(r.send_start_micros);
  r.tensor.AsProtoTensorContent(proto.mutable_tensor());
  EXPECT_EQ(Bytes(buf), proto.SerializeAsString());

  TensorResponse back;
  ASSERT_OK(DecodeRecvTensorResponse(buf, &back));
  EXPECT_FALSE(back.is_dead);
  EXPECT_EQ(back.send_start_micros, r.send_start_micros);
  ASSERT_EQ(back.tensor.shape(), r.tensor.shape());
  EXPECT_EQ(back.tensor.tensor_data(), r.tensor.tensor_data());
}

TEST(TensorCodingTest, SmallDeadStringAndBoolTensorsRoundTrip) {
  for (int kind = 0; kind < 4; ++kind) {
    TensorResponse r;
    if (kind == 0) r.tensor = Floats(4);
    if (kind == 1) r.is_dead = true;
    if (kind == 2) {
      r.tensor = Tensor(DT_STRING, TensorShape({2}));
      r.tensor.flat<std::string>()[0] = "ab";
      r.tensor.flat<std::string>()[1] = std::string(5000, 'x');
    }
    if (kind == 3) {
      r.tensor = Tensor(DT_BOOL, TensorShape({3000}));
      for (int i = 0; i < 3000; ++i) r.tensor.flat<bool>()[i] = i % 3 == 0;
    }
    grpc::ByteBuffer buf;
    EncodeRecvTensorResponse(r, &buf);
    TensorResponse back;
    ASSERT_OK(DecodeRecvTensorResponse(buf, &back));
    EXPECT_EQ(back.is_dead, r.is_dead);
    if (r.is_dead) continue;
    ASSERT_EQ(back.tensor.dtype(), r.tensor.dtype());
    ASSERT_EQ(back.tensor.shape(), r.tensor.shape());
    for (int64_t i = 0; i < r.tensor.NumElements(); ++i) {
      EXPECT_EQ(back.tensor.ElementString(i), r.tensor.ElementString(i));
    }
  }
}

TEST(TensorCodingTest, OtherLayoutsDecodeThroughProtobuf) {
  // Values in float_val, and fields in another order, as another peer may
  // write them.
  RecvTensorResponse proto;
  TensorProto* t = proto.mutable_tensor();
  t->set_dtype(DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(3);
  t->add_float_val(1);
  t->add_float_val(2);
  t->add_float_val(3);
  TensorResponse back;
  ASSERT_OK(
      DecodeRecvTensorResponse(FromBytes(proto.SerializeAsString()), &back));
  EXPECT_EQ(back.tensor.flat<float>()[2], 3.f);

  // tensor_content before the shape: the fast path cannot size the tensor.
  TensorProto content_first;
  content_first.set_tensor_content(std::string(8, '\0'));
  std::string inner = content_first.SerializeAsString();
  TensorProto dtype_shape;
  dtype_shape.set_dtype(DT_INT32);
  dtype_shape.mutable_tensor_shape()->add_dim()->set_size(2);
  inner += dtype_shape.SerializeAsString();
  std::string outer = "\x0a";
  outer += static_cast<char>(inner.size());
  outer += inner;
  ASSERT_OK(DecodeRecvTensorResponse(FromBytes(outer), &back));
  EXPECT_EQ(back.tensor.dtype(), DT_INT32);
  EXPECT_EQ(back.tensor.NumElements(), 2);
}

TEST(TensorCodingTest, BadBytesAreErrors) {
  TensorResponse r;
  r.tensor = Floats(1000);
  grpc::ByteBuffer buf;
  EncodeRecvTensorResponse(r, &buf);
  const std::string good = Bytes(buf);
  TensorResponse back;
  // Every truncation.
  for (size_t n = 0; n < good.size(); n += 97) {
    Status s = DecodeRecvTensorResponse(FromBytes(good.substr(0, n)), &back);
    EXPECT_FALSE(s.ok() && !back.is_dead && back.tensor.NumElements() == 1000)
        << n;
  }
  // A shape that needs more bytes than the content has.
  RecvTensorResponse proto;
  proto.mutable_tensor()->set_dtype(DT_FLOAT);
  proto.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(4);
  proto.mutable_tensor()->set_tensor_content(std::string(12, '\0'));
  Status s =
      DecodeRecvTensorResponse(FromBytes(proto.SerializeAsString()), &back);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // A huge declared shape is refused before anything is allocated.
  proto.mutable_tensor()->mutable_tensor_shape()->mutable_dim(0)->set_size(
      int64_t{1} << 40);
  s = DecodeRecvTensorResponse(FromBytes(proto.SerializeAsString()), &back);
  EXPECT_FALSE(s.ok());
  // Garbage.
  s = DecodeRecvTensorResponse(FromBytes("\xff\xff\xff\xff\xff"), &back);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace runnel
