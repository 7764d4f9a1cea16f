// RecvTensor's zero-copy coding: the bytes equal protobuf's own for the
// same message, every valid message decodes (fast path or not), and bad
// bytes are errors, never crashes.
#include "runnel/distributed/tensor_coding.h"

#include <gtest/gtest.h>

#include <cstring>

#include "proto/master.pb.h"
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

TEST(TensorCodingTest, Bfloat16MarkerRoundTripsAndIsProtobufs) {
  Tensor f(DT_FLOAT, TensorShape({1000}));
  for (int i = 0; i < 1000; ++i) f.flat<float>()[i] = 1.0f / (i + 1);
  StatusOr<Tensor> bf = FloatToBfloat16Truncated(f);
  ASSERT_OK(bf.status());
  ASSERT_EQ(bf->dtype(), DT_BFLOAT16);
  TensorResponse r;
  r.tensor = *bf;
  r.float_as_bfloat16 = true;
  grpc::ByteBuffer buf;
  EncodeRecvTensorResponse(r, &buf);
  RecvTensorResponse proto;
  ASSERT_TRUE(proto.ParseFromString(Bytes(buf)));
  EXPECT_TRUE(proto.runnel_float_as_bfloat16());
  TensorResponse back;
  ASSERT_OK(DecodeRecvTensorResponse(buf, &back));
  EXPECT_TRUE(back.float_as_bfloat16);
  StatusOr<Tensor> wide = Bfloat16ToFloat(back.tensor);
  ASSERT_OK(wide.status());
  for (int i = 0; i < 1000; ++i) {
    uint32_t a, b;
    const float fa = f.flat<float>()[i], fb = wide->flat<float>()[i];
    std::memcpy(&a, &fa, 4);
    std::memcpy(&b, &fb, 4);
    ASSERT_EQ(b, a & 0xffff0000u) << i;
  }
  // A small tensor (protobuf's path) keeps the marker too.
  r.tensor = *FloatToBfloat16Truncated(Floats(4));
  EncodeRecvTensorResponse(r, &buf);
  ASSERT_OK(DecodeRecvTensorResponse(buf, &back));
  EXPECT_TRUE(back.float_as_bfloat16);
}

// --- Messages with tensors beside them (RunStep, RunGraph).

Tensor Strings() {
  Tensor t(DT_STRING, TensorShape({2}));
  t.flat<tstring>()[0] = "ab";
  t.flat<tstring>()[1] = std::string(3000, 'x');
  return t;
}

TEST(TensorCodingTest, MessageWithTensorsIsAValidMessageOfThoseEntries) {
  RunStepResponse msg;
  msg.mutable_metadata()->mutable_step_stats()->add_dev_stats()->set_device(
      "/job:w/replica:0/task:0/device:CPU:0");
  msg.set_status_error_message("kept");
  const Tensor big = Floats(100000);  // 400 KB: a slice of its own buffer.
  NamedTensorList tensors = {{"big:0", big},
                             {"small:0", Floats(4)},
                             {"", Strings()},
                             {"b:0", Tensor::Scalar<bool>(true)}};
  grpc::ByteBuffer buf;
  EncodeMessageWithTensors(msg, 1, tensors, &buf);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buf.Dump(&slices).ok());
  bool shared = false;
  for (const grpc::Slice& s : slices) {
    shared |= static_cast<const void*>(s.begin()) == big.raw_data();
  }
  EXPECT_TRUE(shared) << "the large tensor was copied";

  // Protobuf reads the same bytes as the message with those entries.
  RunStepResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Bytes(buf)));
  ASSERT_EQ(parsed.tensor_size(), 4);
  EXPECT_EQ(parsed.tensor(0).name(), "big:0");
  EXPECT_EQ(parsed.tensor(2).name(), "");
  EXPECT_EQ(parsed.status_error_message(), "kept");
  StatusOr<Tensor> t0 = Tensor::FromProto(parsed.tensor(0).tensor());
  ASSERT_OK(t0.status());
  EXPECT_EQ(t0->tensor_data(), big.tensor_data());

  // And our decoder gives back the tensors and the rest of the message.
  RunStepResponse back;
  NamedTensorList got;
  ASSERT_OK(DecodeMessageWithTensors(buf, 1, &back, &got, "RunStep"));
  EXPECT_EQ(back.tensor_size(), 0);
  EXPECT_EQ(back.status_error_message(), "kept");
  EXPECT_EQ(back.metadata().step_stats().dev_stats(0).device(),
            "/job:w/replica:0/task:0/device:CPU:0");
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].first, "big:0");
  EXPECT_EQ(got[0].second.shape(), big.shape());
  EXPECT_EQ(got[0].second.tensor_data(), big.tensor_data());
  EXPECT_EQ(got[1].second.flat<float>()[3], Floats(4).flat<float>()[3]);
  EXPECT_EQ(got[2].second.flat<tstring>()[1], std::string(3000, 'x'));
  EXPECT_TRUE(got[3].second.scalar<bool>());
}

TEST(TensorCodingTest, MessageWithTensorsFromAnyProtobufPeerDecodes) {
  // A request as protobuf writes it (entries first, values in float_val,
  // a large tensor_content, unknown order), as a TF client would send it.
  RunGraphRequest req;
  req.set_graph_handle("g");
  req.set_step_id(7);
  NamedTensorProto* a = req.add_send();
  a->set_name("a");
  a->mutable_tensor()->set_dtype(DT_FLOAT);
  a->mutable_tensor()->add_float_val(2.5f);
  NamedTensorProto* b = req.add_send();
  b->set_name("b");
  Floats(50000).AsProtoTensorContent(b->mutable_tensor());
  req.add_recv_key("k");
  RunGraphRequest back;
  NamedTensorList got;
  ASSERT_OK(DecodeMessageWithTensors(FromBytes(req.SerializeAsString()), 3,
                                     &back, &got, "RunGraph"));
  EXPECT_EQ(back.graph_handle(), "g");
  EXPECT_EQ(back.step_id(), 7);
  EXPECT_EQ(back.send_size(), 0);
  ASSERT_EQ(back.recv_key_size(), 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].second.scalar<float>(), 2.5f);
  EXPECT_EQ(got[1].second.tensor_data(), Floats(50000).tensor_data());

  // A large entry in a layout the fast path does not take (values in
  // float_val): the whole message goes through protobuf.
  RunGraphRequest slow;
  NamedTensorProto* c = slow.add_send();
  c->set_name("c");
  c->mutable_tensor()->set_dtype(DT_FLOAT);
  c->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(30000);
  for (int i = 0; i < 30000; ++i) c->mutable_tensor()->add_float_val(i);
  slow.set_step_id(9);
  ASSERT_OK(DecodeMessageWithTensors(FromBytes(slow.SerializeAsString()), 3,
                                     &back, &got, "RunGraph"));
  EXPECT_EQ(back.step_id(), 9);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].second.flat<float>()[29999], 29999.f);
}

TEST(TensorCodingTest, BadMessagesWithTensorsAreErrors) {
  RunStepResponse msg;
  msg.set_status_error_message("m");
  grpc::ByteBuffer buf;
  EncodeMessageWithTensors(msg, 1, {{"x", Floats(10000)}}, &buf);
  const std::string good = Bytes(buf);
  RunStepResponse back;
  NamedTensorList got;
  for (size_t n = 0; n + 1 < good.size(); n += 331) {
    Status s = DecodeMessageWithTensors(FromBytes(good.substr(0, n)), 1, &back,
                                        &got, "RunStep");
    EXPECT_FALSE(s.ok() && got.size() == 1 &&
                 got[0].second.NumElements() == 10000)
        << n;
  }
  // A content shorter than its shape, large and small.
  for (int64_t dim : {int64_t{40000}, int64_t{4}}) {
    RunStepResponse bad;
    NamedTensorProto* e = bad.add_tensor();
    e->set_name("short");
    e->mutable_tensor()->set_dtype(DT_FLOAT);
    e->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(dim);
    e->mutable_tensor()->set_tensor_content(std::string(dim * 4 - 4, '\0'));
    Status s = DecodeMessageWithTensors(FromBytes(bad.SerializeAsString()), 1,
                                        &back, &got, "RunStep");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("short"), std::string::npos) << s;
    EXPECT_TRUE(got.empty());
  }
  // A huge declared shape is refused before anything is allocated.
  RunStepResponse huge;
  NamedTensorProto* e = huge.add_tensor();
  e->mutable_tensor()->set_dtype(DT_FLOAT);
  e->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(int64_t{1}
                                                                   << 40);
  e->mutable_tensor()->set_tensor_content(std::string(70000, '\0'));
  EXPECT_FALSE(DecodeMessageWithTensors(FromBytes(huge.SerializeAsString()), 1,
                                        &back, &got, "RunStep")
                   .ok());
  EXPECT_FALSE(DecodeMessageWithTensors(FromBytes("\xff\xff\xff\xff\xff"), 1,
                                        &back, &got, "RunStep")
                   .ok());
}

}  // namespace
}  // namespace runnel
