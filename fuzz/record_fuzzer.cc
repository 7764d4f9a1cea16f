// TFRecord framing: the bytes (after a mode byte) are written to a
// per-process temp file and read back record by record with RecordReader,
// uncompressed, ZLIB or GZIP (mode % 3), until the end or the first error;
// a failed reader must keep failing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz/fuzz_util.h"
#include "runnel/base/logging.h"
#include "runnel/io/record_reader.h"

namespace runnel::fuzz {
namespace {

void FuzzRecords(FuzzInput& in) {
  static const RecordCompression kModes[] = {RecordCompression::kNone,
                                             RecordCompression::kZlib,
                                             RecordCompression::kGzip};
  const RecordCompression compression = kModes[in.Byte() % 3];
  const std::string path = TempPath("records");
  if (!WriteTempFile(path, in.Rest())) return;

  StatusOr<std::unique_ptr<RecordReader>> reader =
      RecordReader::Open(path, compression);
  if (!reader.ok()) return;
  std::string record;
  // A record is at least 16 bytes of framing (compressed streams may
  // expand, so the count is capped rather than derived from the size).
  for (int i = 0; i < 100000; ++i) {
    Status s = (*reader)->ReadRecord(&record);
    if (s.ok()) continue;
    if (absl::IsDataLoss(s)) {
      // DataLoss is sticky (record_reader.h).
      Status again = (*reader)->ReadRecord(&record);
      RUNNEL_CHECK(absl::IsDataLoss(again));
    }
    break;
  }
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzRecords(in);
  return 0;
}
