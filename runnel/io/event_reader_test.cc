// EventFileReader on the event file a TensorFlow Keras callback wrote
// (testdata/tf/events, contents in testdata/tf/README.md), on damaged copies
// of it (truncated at every byte of its last records, bytes flipped in each
// part of a record, random mutations), and FindEventRuns on log directories.
#include "runnel/io/event_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "proto/graph.pb.h"
#include "proto/meta_graph.pb.h"
#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"
#include "runnel/io/record_writer.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

using Kind = EventFileDamage::Kind;

const std::string kKerasEvents =
    std::string(RUNNEL_TESTDATA_DIR) +
    "/tf/events/events.out.tfevents.1548797801.omaha";
constexpr int kKerasRecords = 83;
constexpr uint64_t kKerasBytes = 230193;

// The start of every record of a well-formed file, from its length fields,
// and the file size at the end.
std::vector<uint64_t> RecordOffsets(const std::string& bytes) {
  std::vector<uint64_t> offsets;
  uint64_t off = 0;
  while (off + kRecordHeaderSize <= bytes.size()) {
    offsets.push_back(off);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i)
      len = (len << 8) | static_cast<unsigned char>(bytes[off + i]);
    off += kRecordHeaderSize + len + kRecordFooterSize;
  }
  offsets.push_back(off);
  return offsets;
}

std::vector<Event> ReadAll(EventFileReader* r) {
  std::vector<Event> events;
  Event e;
  Status s;
  while ((s = r->ReadEvent(&e)).ok()) events.push_back(e);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  return events;
}

std::vector<Event> ReadAllFromString(const std::string& bytes,
                                     std::unique_ptr<EventFileReader>* out) {
  *out = EventFileReader::FromString("copy", bytes);
  return ReadAll(out->get());
}

TEST(EventReaderTest, ReadsTheTensorFlowKerasFile) {
  auto r = EventFileReader::Open(kKerasEvents);
  ASSERT_OK(r.status());
  std::vector<Event> events = ReadAll(r->get());
  ASSERT_EQ(events.size(), size_t{kKerasRecords});
  EXPECT_TRUE((*r)->damage().empty());  // Every CRC is valid.
  EXPECT_FALSE((*r)->truncated());
  EXPECT_EQ((*r)->offset(), kKerasBytes);
  EXPECT_EQ((*r)->num_events(), kKerasRecords);

  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), 1548797801.0);
  ASSERT_TRUE(events[1].has_graph_def());
  GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(events[1].graph_def()));
  EXPECT_GT(graph.node_size(), 0);
  ASSERT_TRUE(events[2].has_meta_graph_def());
  MetaGraphDef meta;
  ASSERT_TRUE(meta.ParseFromString(events[2].meta_graph_def()));
  EXPECT_GT(meta.graph_def().node_size(), 0);

  // Then simple_value scalars loss, acc, val_loss, val_acc for steps 0-19.
  std::map<std::string, std::vector<std::pair<int64_t, float>>> series;
  for (size_t i = 3; i < events.size(); ++i) {
    ASSERT_TRUE(events[i].has_summary()) << i;
    for (const Summary::Value& v : events[i].summary().value()) {
      EXPECT_EQ(SummaryValueKind(v), SummaryKind::kScalar);
      ASSERT_TRUE(v.has_simple_value());
      series[v.tag()].emplace_back(events[i].step(), v.simple_value());
    }
  }
  ASSERT_EQ(series.size(), 4u);
  for (const char* tag : {"loss", "acc", "val_loss", "val_acc"}) {
    ASSERT_EQ(series[tag].size(), 20u) << tag;
    for (int step = 0; step < 20; ++step)
      EXPECT_EQ(series[tag][step].first, step) << tag;
  }
  EXPECT_EQ(series["loss"].front().second, 0.2473652958869934f);
  EXPECT_EQ(series["loss"].back().second, 0.019036216661334038f);
  EXPECT_EQ(series["acc"].front().second, 0.9233999848365784f);
  EXPECT_EQ(series["val_loss"].front().second, 0.12661121785640717f);
  EXPECT_EQ(series["val_acc"].back().second, 0.9836999773979187f);
  EXPECT_EQ(events.back().wall_time(), 1548797904.249674);

  // The end stays the end.
  Event e;
  EXPECT_EQ((*r)->ReadEvent(&e).code(), absl::StatusCode::kOutOfRange);
}

TEST(EventReaderTest, ReadEventsCallsBackInOrder) {
  std::vector<int64_t> steps;
  auto report = ReadEvents(kKerasEvents, [&](const Event& e) {
    steps.push_back(e.step());
    return absl::OkStatus();
  });
  ASSERT_OK(report.status());
  EXPECT_EQ(report->num_events, kKerasRecords);
  EXPECT_EQ(report->num_damaged, 0);
  EXPECT_EQ(report->bytes_read, kKerasBytes);
  ASSERT_EQ(steps.size(), size_t{kKerasRecords});
  EXPECT_EQ(steps.back(), 19);

  // An error from the callback stops reading and comes back.
  int calls = 0;
  auto stopped = ReadEvents(kKerasEvents, [&](const Event&) {
    return ++calls == 5 ? errors::Cancelled("enough") : absl::OkStatus();
  });
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(calls, 5);

  EXPECT_EQ(ReadEvents("/nonexistent/events.out.tfevents.1.x",
                       [](const Event&) { return absl::OkStatus(); })
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

// Cut at every byte from the start of record 80 to the end: the complete
// records before the cut are read, and a cut inside a record is reported
// as a truncation at that record's offset.
TEST(EventReaderTest, TruncatedCopiesKeepEveryCompleteRecord) {
  const std::string bytes = ReadFile(kKerasEvents);
  const std::vector<uint64_t> offsets = RecordOffsets(bytes);
  ASSERT_EQ(offsets.size(), size_t{kKerasRecords + 1});
  ASSERT_EQ(offsets.back(), kKerasBytes);
  for (int k = 80; k < kKerasRecords; ++k) {
    for (uint64_t cut = offsets[k]; cut < offsets[k + 1]; ++cut) {
      std::unique_ptr<EventFileReader> r;
      std::vector<Event> events = ReadAllFromString(bytes.substr(0, cut), &r);
      ASSERT_EQ(events.size(), size_t(k)) << "cut at " << cut;
      if (cut == offsets[k]) {
        EXPECT_TRUE(r->damage().empty()) << "cut at " << cut;
        continue;
      }
      ASSERT_EQ(r->damage().size(), 1u) << "cut at " << cut;
      const EventFileDamage& d = r->damage()[0];
      EXPECT_EQ(d.kind, Kind::kTruncated);
      EXPECT_EQ(d.offset, offsets[k]);
      EXPECT_TRUE(d.stops());
      EXPECT_TRUE(r->truncated());
      EXPECT_EQ(d.status.code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(d.status.message().find(absl::StrCat("offset ", offsets[k])),
                std::string::npos)
          << d.status;
    }
  }
}

TEST(EventReaderTest, TruncatedFileOnDisk) {
  const std::string bytes = ReadFile(kKerasEvents);
  const std::vector<uint64_t> offsets = RecordOffsets(bytes);
  const std::string path = MakeTempDir() + "/events.out.tfevents.1.cut";
  // Half of the graph_def record.
  ASSERT_OK(WriteStringToFile(path, bytes.substr(0, offsets[1] + 5000)));
  auto report = ReadEvents(path, [](const Event&) { return absl::OkStatus(); });
  ASSERT_OK(report.status());
  EXPECT_EQ(report->num_events, 1);
  ASSERT_EQ(report->damage.size(), 1u);
  EXPECT_EQ(report->damage[0].kind, Kind::kTruncated);
  EXPECT_EQ(report->damage[0].offset, offsets[1]);
  EXPECT_NE(report->damage[0].status.message().find(path), std::string::npos);
  EXPECT_EQ(report->bytes_read, offsets[1]);
}

// A flipped byte in a record's data or data CRC skips that record only; in
// its length or length CRC it stops reading there (the framing is lost).
TEST(EventReaderTest, FlippedBytes) {
  const std::string bytes = ReadFile(kKerasEvents);
  const std::vector<uint64_t> offsets = RecordOffsets(bytes);
  const int k = 40;
  const uint64_t data_len = offsets[k + 1] - offsets[k] - 16;
  struct Case {
    const char* what;
    uint64_t at;
    Kind kind;
    size_t events;
  };
  const Case cases[] = {
      {"length", offsets[k] + 1, Kind::kBadLengthCrc, k},
      {"length CRC", offsets[k] + 9, Kind::kBadLengthCrc, k},
      {"data", offsets[k] + 12 + data_len / 2, Kind::kBadDataCrc,
       kKerasRecords - 1},
      {"data CRC", offsets[k + 1] - 2, Kind::kBadDataCrc, kKerasRecords - 1},
  };
  for (const Case& c : cases) {
    std::string copy = bytes;
    copy[c.at] ^= 0x20;
    std::unique_ptr<EventFileReader> r;
    std::vector<Event> events = ReadAllFromString(copy, &r);
    EXPECT_EQ(events.size(), c.events) << c.what;
    ASSERT_EQ(r->damage().size(), 1u) << c.what;
    EXPECT_EQ(r->damage()[0].kind, c.kind) << c.what;
    EXPECT_EQ(r->damage()[0].offset, offsets[k]) << c.what;
    EXPECT_EQ(r->damage()[0].status.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(r->damage()[0].status.message().find(
                  absl::StrCat("offset ", offsets[k])),
              std::string::npos)
        << r->damage()[0].status;
    if (c.kind == Kind::kBadDataCrc) {
      // Only record 40 (a step-9 scalar) is lost; the last is intact.
      EXPECT_EQ(events.back().step(), 19) << c.what;
      EXPECT_EQ(r->offset(), kKerasBytes) << c.what;
    } else {
      EXPECT_EQ(r->offset(), offsets[k]) << c.what;
    }
  }
}

TEST(EventReaderTest, RecordsThatAreNotEventsAreSkipped) {
  Event a, b;
  a.set_file_version("brain.Event:2");
  b.set_step(7);
  std::string bytes = EncodeRecord(a.SerializeAsString());
  bytes += EncodeRecord("\xff\xff\xff");  // Good CRCs, not an Event.
  bytes += EncodeRecord(b.SerializeAsString());
  std::unique_ptr<EventFileReader> r;
  std::vector<Event> events = ReadAllFromString(bytes, &r);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step(), 7);
  ASSERT_EQ(r->damage().size(), 1u);
  EXPECT_EQ(r->damage()[0].kind, Kind::kBadEvent);
  EXPECT_FALSE(r->damage()[0].stops());
}

TEST(EventReaderTest, RecordsOverTheLimitAreSkipped) {
  Event small, big;
  small.set_step(1);
  big.mutable_summary()->add_value()->set_tag(std::string(5000, 'x'));
  std::string bytes = EncodeRecord(small.SerializeAsString()) +
                      EncodeRecord(big.SerializeAsString()) +
                      EncodeRecord(small.SerializeAsString());
  auto r = EventFileReader::FromString("limited", bytes);
  r->set_max_record_bytes(1000);
  std::vector<Event> events = ReadAll(r.get());
  EXPECT_EQ(events.size(), 2u);
  ASSERT_EQ(r->damage().size(), 1u);
  EXPECT_EQ(r->damage()[0].kind, Kind::kTooLarge);
  EXPECT_EQ(r->damage()[0].status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r->offset(), bytes.size());
}

// A huge length with a valid CRC in a short file is a truncation, and the
// reader does not allocate the length.
TEST(EventReaderTest, HugeLengthIsATruncation) {
  std::string header(kRecordHeaderSize, '\0');
  for (int i = 0; i < 8; ++i) header[i] = i == 5 ? 1 : 0;  // 2^40 bytes.
  const uint32_t crc = crc32c::Mask(crc32c::Value(header.data(), 8));
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>(crc >> (8 * i));
  std::unique_ptr<EventFileReader> r;
  EXPECT_TRUE(ReadAllFromString(header + "abc", &r).empty());
  ASSERT_EQ(r->damage().size(), 1u);
  EXPECT_EQ(r->damage()[0].kind, Kind::kTruncated);
  EXPECT_TRUE(r->truncated());
}

// Random damage to the real file never crashes, never returns more events
// than the file holds, and reports where it stopped.
TEST(EventReaderTest, RandomMutationsNeverCrash) {
  const std::string bytes = ReadFile(kKerasEvents);
  std::mt19937 rng(14);
  for (int iter = 0; iter < 1000; ++iter) {
    std::string copy = bytes;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f)
      copy[rng() % copy.size()] = static_cast<char>(rng());
    if (rng() % 2) copy.resize(rng() % copy.size());
    std::unique_ptr<EventFileReader> r;
    std::vector<Event> events = ReadAllFromString(copy, &r);
    EXPECT_LE(events.size(), size_t{kKerasRecords});
    EXPECT_LE(r->offset(), copy.size());
  }
  for (int iter = 0; iter < 300; ++iter) {
    std::string garbage(rng() % 200, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    std::unique_ptr<EventFileReader> r;
    EXPECT_LE(ReadAllFromString(garbage, &r).size(), garbage.size() / 16);
  }
}

TEST(EventReaderTest, SummaryKinds) {
  Summary::Value v;
  EXPECT_EQ(SummaryValueKind(v), SummaryKind::kNone);
  v.set_simple_value(1.5f);
  EXPECT_EQ(SummaryValueKind(v), SummaryKind::kScalar);
  EXPECT_EQ(ScalarSummaryValue(v), 1.5);
  v.mutable_histo()->set_num(3);
  EXPECT_EQ(SummaryValueKind(v), SummaryKind::kHistogram);
  EXPECT_EQ(ScalarSummaryValue(v), std::nullopt);
  v.mutable_image()->set_width(2);
  EXPECT_EQ(SummaryValueKind(v), SummaryKind::kImage);
  v.mutable_audio()->set_sample_rate(8000);
  EXPECT_EQ(SummaryValueKind(v), SummaryKind::kAudio);
  EXPECT_EQ(SummaryKindName(SummaryValueKind(v)), "audio");

  // TF2 tensor summaries are filed by their plugin.
  v.mutable_tensor()->set_dtype(DT_FLOAT);
  v.mutable_tensor()->add_float_val(0.25f);
  EXPECT_EQ(SummaryValueKind(v), SummaryKind::kTensor);
  EXPECT_EQ(ScalarSummaryValue(v), 0.25);
  for (auto [plugin, kind] : std::vector<std::pair<std::string, SummaryKind>>{
           {"scalars", SummaryKind::kScalar},
           {"histograms", SummaryKind::kHistogram},
           {"images", SummaryKind::kImage},
           {"audio", SummaryKind::kAudio},
           {"text", SummaryKind::kTensor}}) {
    v.mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
    EXPECT_EQ(SummaryValueKind(v), kind) << plugin;
  }
  TensorProto* t = v.mutable_tensor();
  t->Clear();
  t->set_dtype(DT_DOUBLE);
  const double d = -2.5;
  t->set_tensor_content(std::string(reinterpret_cast<const char*>(&d), 8));
  EXPECT_EQ(ScalarSummaryValue(v), -2.5);
  t->add_double_val(1);  // Content wins, as in TF.
  EXPECT_EQ(ScalarSummaryValue(v), -2.5);
  t->Clear();
  t->set_dtype(DT_INT64);
  t->add_int64_val(9);
  t->mutable_tensor_shape()->add_dim()->set_size(1);
  EXPECT_EQ(ScalarSummaryValue(v), 9.0);
  t->mutable_tensor_shape()->mutable_dim(0)->set_size(2);
  EXPECT_EQ(ScalarSummaryValue(v), std::nullopt);
  t->Clear();
  t->set_dtype(DT_HALF);
  t->add_half_val(0x3c00);  // 1.0
  EXPECT_EQ(ScalarSummaryValue(v), 1.0);
  t->set_dtype(DT_STRING);
  EXPECT_EQ(ScalarSummaryValue(v), std::nullopt);
}

TEST(EventReaderTest, FindEventRuns) {
  namespace fs = std::filesystem;
  const std::string root = MakeTempDir();
  fs::create_directories(root + "/a/b");
  fs::create_directories(root + "/c");
  fs::create_directories(root + "/d");
  ASSERT_OK(WriteStringToFile(root + "/events.out.tfevents.1.h", ""));
  ASSERT_OK(WriteStringToFile(root + "/a/events.out.tfevents.3.h", ""));
  ASSERT_OK(WriteStringToFile(root + "/a/events.out.tfevents.2.h.v2", ""));
  ASSERT_OK(WriteStringToFile(root + "/a/b/events.out.tfevents.4.h", ""));
  ASSERT_OK(WriteStringToFile(root + "/c/notes.txt", ""));
  fs::create_directory_symlink(root + "/a", root + "/d/link");

  auto runs = FindEventRuns(root);
  ASSERT_OK(runs.status());
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].name, ".");
  EXPECT_EQ((*runs)[0].files,
            std::vector<std::string>{root + "/events.out.tfevents.1.h"});
  EXPECT_EQ((*runs)[1].name, "a");
  EXPECT_EQ((*runs)[1].files,
            (std::vector<std::string>{root + "/a/events.out.tfevents.2.h.v2",
                                      root + "/a/events.out.tfevents.3.h"}));
  EXPECT_EQ((*runs)[2].name, "a/b");
  EXPECT_EQ((*runs)[2].dir, root + "/a/b");

  auto one = FindEventRuns(root + "/a/b/events.out.tfevents.4.h");
  ASSERT_OK(one.status());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, ".");
  EXPECT_EQ((*one)[0].dir, root + "/a/b");

  auto none = FindEventRuns(root + "/c");
  ASSERT_OK(none.status());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(FindEventRuns(root + "/missing").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(FindEventRuns(std::string("a\0b", 3)).ok());
  ASSERT_EQ(::mkfifo((root + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(FindEventRuns(root + "/fifo").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// EventAccumulator (Note [Orphaned data])

Event ScalarEvent(int64_t step, const std::string& tag, float v) {
  Event e;
  e.set_step(step);
  e.set_wall_time(1000.0 + step);
  Summary::Value* value = e.mutable_summary()->add_value();
  value->set_tag(tag);
  value->set_simple_value(v);
  return e;
}

Event StartEvent(int64_t step) {
  Event e;
  e.set_step(step);
  e.mutable_session_log()->set_status(SessionLog::START);
  return e;
}

std::vector<int64_t> Steps(const TagSeries& s) {
  std::vector<int64_t> steps;
  for (const TagPoint& p : s.points) steps.push_back(p.step);
  return steps;
}

TEST(EventAccumulatorTest, RestartPurgesEveryTagFromItsStep) {
  EventAccumulator acc;
  acc.AddEvent(StartEvent(0));  // A fresh run: nothing to purge.
  for (int64_t step = 1; step <= 5; ++step) {
    acc.AddEvent(ScalarEvent(step, "loss", 1.0f / step));
    Event h;
    h.set_step(step);
    Summary::Value* v = h.mutable_summary()->add_value();
    v->set_tag("w");
    v->mutable_histo()->set_num(step);
    acc.AddEvent(h);
  }
  acc.AddEvent(ScalarEvent(2, "acc", 0.5f));  // Out of order, another tag.
  EXPECT_EQ(acc.num_purged(), 0);
  // Resumed from a checkpoint at step 3: the crashed process's 3, 4, 5 go.
  acc.AddEvent(StartEvent(3));
  EXPECT_EQ(acc.num_restarts(), 2);
  EXPECT_EQ(acc.num_session_logs(), 2);
  EXPECT_EQ(acc.num_purged(), 6);
  acc.AddEvent(ScalarEvent(3, "loss", 0.25f));
  acc.AddEvent(ScalarEvent(4, "loss", 0.125f));

  ASSERT_EQ(acc.tags().size(), 3u);
  const TagSeries& loss = acc.tags().at("loss");
  EXPECT_EQ(loss.kind, SummaryKind::kScalar);
  EXPECT_EQ(Steps(loss), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(loss.purged, 3);
  EXPECT_EQ(loss.points[2].value.simple_value(), 0.25f);
  EXPECT_EQ(loss.points[2].wall_time, 1003.0);
  EXPECT_EQ(loss.points[2].value.tag(), "");  // The map key holds it.
  const TagSeries& w = acc.tags().at("w");
  EXPECT_EQ(w.kind, SummaryKind::kHistogram);
  EXPECT_EQ(Steps(w), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(w.points[1].value.histo().num(), 2);
  EXPECT_EQ(Steps(acc.tags().at("acc")), std::vector<int64_t>{2});
  EXPECT_EQ(acc.num_events(), 15);
}

TEST(EventAccumulatorTest, StepGoingBackPurgesThatTagOnly) {
  EventAccumulator acc;
  for (int64_t step : {10, 20, 30}) {
    acc.AddEvent(ScalarEvent(step, "a", step));
    acc.AddEvent(ScalarEvent(step, "b", step));
  }
  acc.AddEvent(ScalarEvent(15, "a", -1));
  EXPECT_EQ(Steps(acc.tags().at("a")), (std::vector<int64_t>{10, 15}));
  EXPECT_EQ(acc.tags().at("a").purged, 2);
  EXPECT_EQ(Steps(acc.tags().at("b")), (std::vector<int64_t>{10, 20, 30}));
  // The same step again is kept beside the last; an even lower one cuts
  // both.
  acc.AddEvent(ScalarEvent(15, "a", -2));
  EXPECT_EQ(Steps(acc.tags().at("a")), (std::vector<int64_t>{10, 15, 15}));
  acc.AddEvent(ScalarEvent(12, "a", -3));
  EXPECT_EQ(Steps(acc.tags().at("a")), (std::vector<int64_t>{10, 12}));
  EXPECT_EQ(acc.tags().at("a").points[1].value.simple_value(), -3.0f);
  EXPECT_EQ(acc.num_purged(), 4);
  EXPECT_EQ(acc.num_restarts(), 0);
}

TEST(EventAccumulatorTest, KeepsOnlyTheLatestValuesAskedFor) {
  EventAccumulator::Options options;
  options.values_to_keep = [](const std::string& tag, SummaryKind kind) {
    EXPECT_TRUE(kind == SummaryKind::kScalar) << tag;
    return tag == "kept2" ? 2 : 0;
  };
  EventAccumulator acc(std::move(options));
  for (int64_t step = 0; step < 6; ++step) {
    acc.AddEvent(ScalarEvent(step, "kept2", step));
    acc.AddEvent(ScalarEvent(step, "counted", step));
  }
  const TagSeries& kept = acc.tags().at("kept2");
  ASSERT_EQ(kept.points.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(kept.points[i].value.has_simple_value(), i >= 4) << i;
  }
  EXPECT_EQ(kept.points[5].value.simple_value(), 5.0f);
  const TagSeries& counted = acc.tags().at("counted");
  EXPECT_EQ(counted.kind, SummaryKind::kScalar);  // Known without values.
  ASSERT_EQ(counted.points.size(), 6u);
  EXPECT_EQ(counted.points[3].step, 3);
  EXPECT_EQ(counted.points[3].wall_time, 1003.0);
  EXPECT_EQ(counted.points[3].value.value_case(),
            Summary::Value::VALUE_NOT_SET);
  // A purge cuts the tail: fewer values remain, none come back.
  acc.AddEvent(StartEvent(5));
  EXPECT_EQ(kept.points.size(), 5u);
  EXPECT_TRUE(kept.points[4].value.has_simple_value());
  EXPECT_FALSE(kept.points[3].value.has_simple_value());
}

TEST(EventAccumulatorTest, TheTensorFlowKerasFile) {
  EventAccumulator acc;
  auto report = ReadEvents(kKerasEvents, [&](const Event& e) {
    acc.AddEvent(e);
    return absl::OkStatus();
  });
  ASSERT_OK(report.status());
  EXPECT_EQ(acc.num_events(), kKerasRecords);
  EXPECT_EQ(acc.num_graphs(), 1);
  EXPECT_EQ(acc.num_meta_graphs(), 1);
  EXPECT_EQ(acc.num_purged(), 0);
  ASSERT_EQ(acc.tags().size(), 4u);
  for (const auto& [tag, series] : acc.tags()) {
    EXPECT_EQ(series.kind, SummaryKind::kScalar) << tag;
    ASSERT_EQ(series.points.size(), 20u) << tag;
    EXPECT_EQ(series.points.front().step, 0) << tag;
    EXPECT_EQ(series.points.back().step, 19) << tag;
  }
  EXPECT_EQ(acc.tags().at("loss").points[0].value.simple_value(), 0.2473653f);
}

}  // namespace
}  // namespace runnel
