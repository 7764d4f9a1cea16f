// Tensor bundles (checkpoints): the input is a 4-byte little-endian length
// L, then L bytes of .index file, then the .data-00000-of-00001 file. Both
// are written to a per-process temp dir and opened with BundleReader; every
// key is listed, looked up and restored.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "runnel/framework/tensor.h"
#include "runnel/io/tensor_bundle.h"

namespace runnel::fuzz {
namespace {

void FuzzBundle(FuzzInput& in) {
  const uint32_t index_len = in.Pod<uint32_t>();
  const std::string index = in.Bytes(index_len);
  const std::string data = in.Rest();
  const std::string prefix = TempPath("bundle");
  if (!WriteTempFile(MetaFilename(prefix), index) ||
      !WriteTempFile(DataFilename(prefix, 0, 1), data)) {
    return;
  }

  BundleReader reader(prefix);
  if (!reader.status().ok()) return;
  (void)reader.Contains("");
  std::vector<std::string> keys;
  if (!reader.ListKeys(&keys).ok()) return;
  if (keys.size() > 1000) keys.resize(1000);
  for (const std::string& key : keys) {
    BundleEntryProto entry;
    reader.GetEntry(key, &entry).IgnoreError();
    DataType dtype;
    TensorShape shape;
    reader.LookupDtypeAndShape(key, &dtype, &shape).IgnoreError();
    Tensor t;
    if (reader.Lookup(key, &t).ok()) (void)t.DebugString();
  }
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzBundle(in);
  return 0;
}
