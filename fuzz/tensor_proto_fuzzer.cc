// TensorProto bytes -> Tensor::FromProto -> DebugString/SummarizeValue ->
// back to a proto both ways (typed fields, tensor_content), which must
// decode again to the same dtype and shape.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz/fuzz_util.h"
#include "proto/tensor.pb.h"
#include "runnel/base/logging.h"
#include "runnel/framework/tensor.h"

namespace runnel::fuzz {
namespace {

void CheckRoundTrip(const Tensor& t, const TensorProto& proto) {
  StatusOr<Tensor> back = Tensor::FromProto(proto);
  if (!back.ok()) {
    std::fprintf(stderr, "re-decoding %s failed: %s\n", t.DebugString().c_str(),
                 back.status().ToString().c_str());
    RUNNEL_CHECK(back.ok());
  }
  RUNNEL_CHECK(back->dtype() == t.dtype());
  RUNNEL_CHECK(back->shape() == t.shape());
}

void FuzzTensorProto(const uint8_t* data, size_t size) {
  TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return;
  StatusOr<Tensor> t = Tensor::FromProto(proto);
  if (!t.ok()) return;
  // Big tensors (a short value list padded to a large shape) decode fine;
  // printing and re-encoding them would only make the input slow.
  if (t->NumElements() > (1 << 16)) return;
  (void)t->DebugString();
  (void)t->SummarizeValue(30);
  if (t->NumElements() > 0) (void)t->ElementString(t->NumElements() - 1);

  TensorProto fields, content;
  t->AsProtoField(&fields);
  CheckRoundTrip(*t, fields);
  t->AsProtoTensorContent(&content);
  CheckRoundTrip(*t, content);
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzTensorProto(data, size);
  return 0;
}
