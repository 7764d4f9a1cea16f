// The file formats read from users' files, chosen by a mode byte (% 8):
//   0-2  TFRecord framing: the bytes are written to a per-process temp file
//        and read back record by record with RecordReader, uncompressed,
//        ZLIB or GZIP, until the end or the first error; a failed reader
//        must keep failing;
//   3    an event file (EventFileReader): every readable event, with the
//        damage it skips; a reader that stopped must stay stopped;
//   4    a PNG (DecodePng, capped at 64 MiB decoded); a decoded image must
//        hold height * width * channels bytes;
//   5    a WAV (DecodeWav);
//   6    a RunMetadata (`runnel timeline`): its Chrome trace and op table;
//   7    an event file made into `runnel board`'s page: the events go
//        through EventAccumulator's purges, and the page must hold no more
//        </script> than its fixed text does (the data cannot end the
//        element it sits in).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "proto/config.pb.h"
#include "proto/event.pb.h"
#include "runnel/base/logging.h"
#include "runnel/io/event_reader.h"
#include "runnel/io/png.h"
#include "runnel/io/record_reader.h"
#include "runnel/io/wav.h"
#include "runnel/training/timeline.h"
#include "tools/board.h"

namespace runnel::fuzz {
namespace {

void FuzzEvents(FuzzInput& in) {
  std::unique_ptr<EventFileReader> reader =
      EventFileReader::FromString("fuzz", in.Rest());
  Event event;
  Status s;
  // Each event takes at least 16 bytes of framing.
  for (int i = 0; i < 100000 && (s = reader->ReadEvent(&event)).ok(); ++i) {
  }
  if (absl::IsOutOfRange(s)) {
    RUNNEL_CHECK(absl::IsOutOfRange(reader->ReadEvent(&event)));
  }
}

void FuzzTimeline(FuzzInput& in) {
  RunMetadata metadata;
  if (!metadata.ParseFromString(in.Rest())) return;
  const std::string json = training::ChromeTraceJson(metadata.step_stats());
  RUNNEL_CHECK(absl::StartsWith(json, "{\"traceEvents\": ["));
  (void)training::FormatOpStats(
      training::AggregateOpStats(metadata.step_stats()), 20);
}

int64_t CountScriptEnds(absl::string_view html) {
  int64_t n = 0;
  for (size_t at = html.find("</script"); at != html.npos;
       at = html.find("</script", at + 1)) {
    ++n;
  }
  return n;
}

void FuzzBoard(FuzzInput& in) {
  static const int64_t fixed = CountScriptEnds(BoardHtml(BoardData{}));
  BoardData data;
  data.logdir = "fuzz";
  data.options.max_scalar_points = 50;
  data.options.max_histogram_steps = 10;
  data.options.max_images = 3;
  BoardRun& run = data.runs.emplace_back();
  run.run.name = ".";
  std::unique_ptr<EventFileReader> reader =
      EventFileReader::FromString("fuzz", in.Rest());
  Event event;
  for (int i = 0; i < 100000 && reader->ReadEvent(&event).ok(); ++i) {
    run.acc.AddEvent(event);
  }
  RUNNEL_CHECK(CountScriptEnds(BoardHtml(data)) == fixed);
}

void FuzzPng(FuzzInput& in) {
  StatusOr<PngImage> image = DecodePng(in.Rest(), int64_t{64} << 20);
  if (!image.ok()) return;
  RUNNEL_CHECK(static_cast<int64_t>(image->pixels.size()) ==
               int64_t{image->height} * image->width * image->channels);
}

void FuzzRecords(FuzzInput& in) {
  static const RecordCompression kModes[] = {RecordCompression::kNone,
                                             RecordCompression::kZlib,
                                             RecordCompression::kGzip};
  const int mode = in.Byte() % 8;
  if (mode == 3) return FuzzEvents(in);
  if (mode == 6) return FuzzTimeline(in);
  if (mode == 7) return FuzzBoard(in);
  if (mode == 4) return FuzzPng(in);
  if (mode == 5) {
    (void)DecodeWav(in.Rest()).status();
    return;
  }
  const RecordCompression compression = kModes[mode];
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
