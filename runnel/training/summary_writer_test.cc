// FileWriter: the file TensorBoard expects (name, first record), every Add*
// read back through io/event_reader.h, flushing, closing, many writing
// threads, a full queue, errors at creation, and a writer process killed
// mid-stream.
#include "runnel/training/summary_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "runnel/base/env.h"
#include "runnel/io/event_reader.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel::training {
namespace {

namespace fs = std::filesystem;

std::vector<Event> ReadBack(const std::string& path,
                            std::vector<EventFileDamage>* damage = nullptr) {
  std::vector<Event> events;
  auto report = ReadEvents(path, [&](const Event& e) {
    events.push_back(e);
    return absl::OkStatus();
  });
  EXPECT_OK(report.status());
  if (report.ok()) {
    if (damage != nullptr) {
      *damage = report->damage;
    } else {
      EXPECT_TRUE(report->damage.empty()) << report->damage[0].status;
    }
  }
  return events;
}

Summary Scalar(const std::string& tag, float v) {
  Summary s;
  Summary::Value* value = s.add_value();
  value->set_tag(tag);
  value->set_simple_value(v);
  return s;
}

std::string ThisHost() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

TEST(SummaryWriterTest, FileNameAndFirstRecordAreTensorFlows) {
  const std::string logdir = MakeTempDir() + "/logs/run1";  // Made by Create.
  const int64_t before = WallMicros() / 1000000;
  auto w = FileWriter::Create(logdir);
  ASSERT_OK(w.status());
  const int64_t after = WallMicros() / 1000000;
  const std::string path = (*w)->path();
  EXPECT_EQ((*w)->logdir(), logdir);
  EXPECT_EQ(fs::path(path).parent_path().string(), logdir);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  ASSERT_TRUE(std::regex_match(
      name, m, std::regex(R"(events\.out\.tfevents\.(\d{10})\.(.+))")))
      << name;
  const int64_t secs = std::stoll(m[1]);
  EXPECT_GE(secs, before);
  EXPECT_LE(secs, after);
  EXPECT_EQ(m[2].str(), ThisHost());
  EXPECT_TRUE(IsEventFileName(name));

  // The version record is on disk before any Add*.
  std::vector<Event> events = ReadBack(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), static_cast<double>(secs));
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_OK((*w)->Close());
  // 24 bytes of Event + 16 of framing, as in TensorFlow's files.
  EXPECT_EQ(fs::file_size(path), 40u);
}

TEST(SummaryWriterTest, SuffixAndNoClobbering) {
  const std::string logdir = MakeTempDir();
  FileWriterOptions options;
  options.filename_suffix = ".v2";
  std::vector<std::unique_ptr<FileWriter>> writers;
  for (int i = 0; i < 3; ++i) {
    auto w = FileWriter::Create(logdir, options);
    ASSERT_OK(w.status());
    EXPECT_TRUE(absl::EndsWith((*w)->path(), ".v2")) << (*w)->path();
    writers.push_back(std::move(*w));
  }
  // In the same second the names differ; each file is its own.
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(writers[i]->AddSummary(Scalar("w", i), i));
    ASSERT_OK(writers[i]->Close());
  }
  std::set<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    paths.insert(writers[i]->path());
    std::vector<Event> events = ReadBack(writers[i]->path());
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].step(), i);
  }
  EXPECT_EQ(paths.size(), 3u);
  auto runs = FindEventRuns(logdir);
  ASSERT_OK(runs.status());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].files.size(), 3u);
}

TEST(SummaryWriterTest, EveryAddReadsBack) {
  const std::string logdir = MakeTempDir();
  auto created = FileWriter::Create(logdir);
  ASSERT_OK(created.status());
  FileWriter& w = **created;

  GraphDef graph;
  graph.add_node()->set_name("x");
  graph.mutable_node(0)->set_op("Placeholder");
  MetaGraphDef meta;
  *meta.mutable_graph_def() = graph;
  meta.mutable_meta_info_def()->add_tags("serve");
  RunMetadata run_metadata;
  run_metadata.add_partition_graphs()->add_node()->set_name("p");
  SessionLog start;
  start.set_status(SessionLog::START);
  Event custom;
  custom.set_wall_time(123.5);
  custom.set_step(77);
  custom.mutable_log_message()->set_message("hello");

  const double t0 = static_cast<double>(WallMicros()) / 1e6;
  ASSERT_OK(w.AddGraph(graph));
  ASSERT_OK(w.AddMetaGraph(meta, 3));
  ASSERT_OK(w.AddSummary(Scalar("loss", 0.5f).SerializeAsString(), 1));
  ASSERT_OK(w.AddSummary(Scalar("acc", 0.25f), 2));
  ASSERT_OK(w.AddRunMetadata("step2", run_metadata, 2));
  ASSERT_OK(w.AddSessionLog(start, 5));
  ASSERT_OK(w.AddEvent(custom));
  ASSERT_OK(w.Close());
  const double t1 = static_cast<double>(WallMicros()) / 1e6;

  std::vector<Event> e = ReadBack(w.path());
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(e[0].file_version(), "brain.Event:2");
  GraphDef g;
  ASSERT_TRUE(g.ParseFromString(e[1].graph_def()));
  EXPECT_EQ(g.node(0).name(), "x");
  EXPECT_EQ(e[1].step(), 0);
  MetaGraphDef mg;
  ASSERT_TRUE(mg.ParseFromString(e[2].meta_graph_def()));
  EXPECT_EQ(mg.meta_info_def().tags(0), "serve");
  EXPECT_EQ(e[2].step(), 3);
  ASSERT_TRUE(e[3].has_summary());
  EXPECT_EQ(e[3].summary().value(0).tag(), "loss");
  EXPECT_EQ(e[3].summary().value(0).simple_value(), 0.5f);
  EXPECT_EQ(e[3].step(), 1);
  EXPECT_EQ(e[4].summary().value(0).tag(), "acc");
  EXPECT_EQ(e[4].step(), 2);
  EXPECT_EQ(e[5].tagged_run_metadata().tag(), "step2");
  RunMetadata rm;
  ASSERT_TRUE(rm.ParseFromString(e[5].tagged_run_metadata().run_metadata()));
  EXPECT_EQ(rm.partition_graphs(0).node(0).name(), "p");
  EXPECT_EQ(e[6].session_log().status(), SessionLog::START);
  EXPECT_EQ(e[6].step(), 5);
  EXPECT_EQ(e[7].wall_time(), 123.5);  // AddEvent keeps a given wall_time.
  EXPECT_EQ(e[7].step(), 77);
  EXPECT_EQ(e[7].log_message().message(), "hello");
  for (int i = 1; i < 7; ++i) {
    EXPECT_GE(e[i].wall_time(), t0 - 1e-3) << i;
    EXPECT_LE(e[i].wall_time(), t1 + 1e-3) << i;
  }
}

TEST(SummaryWriterTest, BadSerializedSummaryIsInvalidArgument) {
  auto w = FileWriter::Create(MakeTempDir());
  ASSERT_OK(w.status());
  Status s = (*w)->AddSummary(absl::string_view("\xff\xff\xff", 3), 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_OK((*w)->AddSummary(absl::string_view(), 2));  // An empty Summary.
  EXPECT_OK((*w)->Close());
  EXPECT_EQ(ReadBack((*w)->path()).size(), 2u);
}

TEST(SummaryWriterTest, FlushPutsEverythingOnDisk) {
  FileWriterOptions options;
  options.max_queue = 3;
  auto w = FileWriter::Create(MakeTempDir(), options);
  ASSERT_OK(w.status());
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 50; ++i) ASSERT_OK((*w)->AddSummary(Scalar("x", i), i));
    ASSERT_OK((*w)->Flush());
    // Read while the writer is open: nothing is torn.
    EXPECT_EQ(ReadBack((*w)->path()).size(), size_t(1 + 50 * round));
  }
  EXPECT_OK((*w)->Flush());  // Nothing new: returns at once.
}

TEST(SummaryWriterTest, WriterThreadFlushesPeriodically) {
  FileWriterOptions options;
  options.flush_interval = absl::Milliseconds(20);
  auto w = FileWriter::Create(MakeTempDir(), options);
  ASSERT_OK(w.status());
  ASSERT_OK((*w)->AddSummary(Scalar("x", 1), 1));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  size_t n = 0;
  while ((n = ReadBack((*w)->path()).size()) < 2 && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(n, 2u);
}

TEST(SummaryWriterTest, CloseIsIdempotentAndTheDestructorCloses) {
  const std::string logdir = MakeTempDir();
  std::string path;
  {
    auto w = FileWriter::Create(logdir);
    ASSERT_OK(w.status());
    path = (*w)->path();
    for (int i = 0; i < 25; ++i) ASSERT_OK((*w)->AddSummary(Scalar("x", i), i));
  }  // No Close: the destructor writes what is queued.
  EXPECT_EQ(ReadBack(path).size(), 26u);

  auto w = FileWriter::Create(logdir);
  ASSERT_OK(w.status());
  EXPECT_OK((*w)->Close());
  EXPECT_OK((*w)->Close());
  EXPECT_OK((*w)->Flush());
  Status s = (*w)->AddSummary(Scalar("x", 1), 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find((*w)->path()), std::string::npos) << s;
  EXPECT_EQ(ReadBack((*w)->path()).size(), 1u);
}

// Many threads add through a queue of 2 while others flush: every event is
// written once, and each thread's events keep their order.
TEST(SummaryWriterTest, ManyThreadsAddAndFlush) {
  FileWriterOptions options;
  options.max_queue = 2;
  auto w = FileWriter::Create(MakeTempDir(), options);
  ASSERT_OK(w.status());
  constexpr int kThreads = 8, kPerThread = 400;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_OK((*w)->AddSummary(Scalar(absl::StrCat("t", t), i), i));
        if (i % 100 == 99) EXPECT_OK((*w)->Flush());
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK((*w)->Close());
  std::vector<Event> events = ReadBack((*w)->path());
  ASSERT_EQ(events.size(), size_t{1 + kThreads * kPerThread});
  std::vector<int64_t> next(kThreads, 0);
  for (size_t i = 1; i < events.size(); ++i) {
    const Summary::Value& v = events[i].summary().value(0);
    const int t = std::stoi(v.tag().substr(1));
    ASSERT_EQ(events[i].step(), next[t]) << v.tag();
    ++next[t];
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kPerThread);
}

// Close while other threads are adding: each Add* either lands in the file
// or returns FailedPrecondition; nothing hangs.
TEST(SummaryWriterTest, CloseWhileAdding) {
  FileWriterOptions options;
  options.max_queue = 1;
  auto w = FileWriter::Create(MakeTempDir(), options);
  ASSERT_OK(w.status());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        Status s = (*w)->AddSummary(Scalar("x", i), i);
        if (s.ok()) {
          ++ok;
        } else {
          EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
          return;
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_OK((*w)->Close());
  for (auto& th : threads) th.join();
  EXPECT_EQ(ReadBack((*w)->path()).size(), size_t(1 + ok.load()));
}

TEST(SummaryWriterTest, BadLogdirsFailAtCreation) {
  const std::string dir = MakeTempDir();
  ASSERT_OK(WriteStringToFile(dir + "/file", "x"));
  auto under_file = FileWriter::Create(dir + "/file/run");
  EXPECT_FALSE(under_file.ok());
  EXPECT_NE(under_file.status().message().find(dir + "/file/run"),
            std::string::npos)
      << under_file.status();
  auto is_file = FileWriter::Create(dir + "/file");
  EXPECT_EQ(is_file.status().code(), absl::StatusCode::kFailedPrecondition)
      << is_file.status();

  EXPECT_EQ(FileWriter::Create("").status().code(),
            absl::StatusCode::kInvalidArgument);
  FileWriterOptions bad;
  bad.filename_suffix = "/x";
  EXPECT_EQ(FileWriter::Create(dir, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = {};
  bad.max_queue = 0;
  EXPECT_EQ(FileWriter::Create(dir, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SummaryWriterTest, AReadOnlyLogdirIsPermissionDenied) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(::mkdir((dir + "/ro").c_str(), 0500), 0);
  if (::access((dir + "/ro").c_str(), W_OK) == 0) {
    // Root writes anywhere, but nobody makes directories in sysfs.
    auto w = FileWriter::Create("/sys/runnel_summary_writer_test/run");
    if (w.ok() || !fs::is_directory("/sys/kernel")) {
      GTEST_SKIP() << "running as root without a sysfs to fail in";
    }
    EXPECT_EQ(w.status().code(), absl::StatusCode::kPermissionDenied)
        << w.status();
    EXPECT_NE(w.status().message().find("/sys/runnel_summary_writer_test"),
              std::string::npos)
        << w.status();
    return;
  }
  for (const std::string& logdir : {dir + "/ro", dir + "/ro/sub/run"}) {
    auto w = FileWriter::Create(logdir);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kPermissionDenied)
        << w.status();
    EXPECT_NE(w.status().message().find(dir + "/ro"), std::string::npos)
        << w.status();
  }
  EXPECT_TRUE(DirEntries(dir + "/ro").empty());
  ::chmod((dir + "/ro").c_str(), 0700);
}

// A full queue blocks Add* until the writer thread takes it; with
// max_add_wait zero an Add* that finds it full returns DeadlineExceeded at
// once and its event is not written. Either way the file holds exactly the
// events whose Add* returned OK.
TEST(SummaryWriterTest, FullQueueBlocksOrTimesOut) {
  for (absl::Duration wait : {absl::InfiniteDuration(), absl::ZeroDuration()}) {
    FileWriterOptions options;
    options.max_queue = 1;
    options.max_add_wait = wait;
    auto w = FileWriter::Create(MakeTempDir(), options);
    ASSERT_OK(w.status());
    std::atomic<int> ok{0}, timed_out{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 300; ++i) {
          Status s = (*w)->AddSummary(Scalar("x", i), i);
          if (s.ok()) {
            ++ok;
          } else {
            EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
            ++timed_out;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_OK((*w)->Flush());
    EXPECT_EQ(ok + timed_out, 6 * 300);
    if (wait == absl::InfiniteDuration()) {
      EXPECT_EQ(timed_out, 0);
    }
    EXPECT_EQ(ReadBack((*w)->path()).size(), size_t(1 + ok.load()));
  }
}

// A writer process killed without Close (after a Flush, in the middle of
// more writing) leaves a file whose every complete record reads back, at
// least everything flushed, and at most one torn record at its end.
TEST(SummaryWriterTest, AKilledWriterLeavesAReadableFile) {
  const std::string logdir = MakeTempDir();
  const std::string big(3000, 'y');  // Records that span stdio buffers.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto w = FileWriter::Create(logdir);
    if (!w.ok()) _exit(2);
    for (int i = 0; i < 100; ++i) {
      if (!(*w)->AddSummary(Scalar(big, i), i).ok()) _exit(3);
    }
    if (!(*w)->Flush().ok()) _exit(4);
    for (int i = 100; i < 1000000; ++i) {
      if (!(*w)->AddSummary(Scalar(big, i), i).ok()) _exit(5);
      if (i == 2000) ::kill(::getpid(), SIGKILL);
    }
    _exit(6);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  auto runs = FindEventRuns(logdir);
  ASSERT_OK(runs.status());
  ASSERT_EQ(runs->size(), 1u);
  ASSERT_EQ((*runs)[0].files.size(), 1u);
  std::vector<EventFileDamage> damage;
  std::vector<Event> events = ReadBack((*runs)[0].files[0], &damage);
  EXPECT_GE(events.size(), 101u);
  for (size_t i = 1; i < events.size(); ++i)
    ASSERT_EQ(events[i].step(), int64_t(i - 1));
  ASSERT_LE(damage.size(), 1u);
  if (!damage.empty()) {
    EXPECT_EQ(damage[0].kind, EventFileDamage::Kind::kTruncated);
  }
}

}  // namespace
}  // namespace runnel::training
