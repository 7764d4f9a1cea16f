// The `runnel run --feed NAME=VALUE` value parser (tools/feed_parser.h):
// byte 0 picks the dtype, byte 1 the declared shape (unknown, scalar, [1],
// [1, 1] or [2]), the rest is the value text. A parsed tensor is printed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/types.h"
#include "tools/feed_parser.h"

namespace runnel::fuzz {
namespace {

void FuzzFeed(FuzzInput& in) {
  const DataType dtype = in.Pick(AllTypes());
  static const PartialTensorShape kShapes[] = {
      PartialTensorShape(), PartialTensorShape({}), PartialTensorShape({1}),
      PartialTensorShape({1, 1}), PartialTensorShape({2})};
  const PartialTensorShape& declared = kShapes[in.Byte() % 5];
  const std::string text = in.Rest();
  StatusOr<Tensor> t = ParseFeedValue(text, dtype, declared);
  if (t.ok()) (void)t->DebugString();
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzFeed(in);
  return 0;
}
