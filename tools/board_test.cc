// `runnel board`'s report (tools/board.h): the escaping of untrusted text,
// the caps, several runs, the purges, damaged and missing inputs, and an
// unwritable output. The page's data is read back with protobuf's JSON
// parser (which also checks it is valid JSON); the page in a browser is
// board_browser_test.sh's.
#include "tools/board.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "runnel/base/env.h"
#include "runnel/io/png.h"
#include "runnel/io/record_writer.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

// --- Writing event files ---------------------------------------------------

class EventFile {
 public:
  EventFile() {
    Event e;
    e.set_wall_time(1.5e9);
    e.set_file_version("brain.Event:2");
    Add(e);
  }
  void Add(const Event& e) { bytes_ += EncodeRecord(e.SerializeAsString()); }
  Summary::Value* Value(int64_t step, const std::string& tag) {
    Event& e = pending_.emplace_back();
    e.set_step(step);
    e.set_wall_time(1.5e9 + step);
    Summary::Value* v = e.mutable_summary()->add_value();
    v->set_tag(tag);
    return v;
  }
  void Scalar(int64_t step, const std::string& tag, float x) {
    Value(step, tag)->set_simple_value(x);
    Flush();
  }
  void Start(int64_t step) {
    Event e;
    e.set_step(step);
    e.mutable_session_log()->set_status(SessionLog::START);
    Add(e);
  }
  void Flush() {
    for (const Event& e : pending_) Add(e);
    pending_.clear();
  }
  void Write(const std::string& dir, const std::string& name) {
    Flush();
    std::filesystem::create_directories(dir);
    ASSERT_OK(WriteStringToFile(dir + "/" + name, bytes_));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  std::vector<Event> pending_;
};

std::string TinyPng() {
  std::vector<uint8_t> pixels(4 * 4, 128);
  auto png = EncodePng(pixels, 4, 4, 1);
  EXPECT_OK(png.status());
  return png.ok() ? *png : "";
}

// --- Reading the page's data ----------------------------------------------

// The text of the <script type="application/json"> element.
std::string DataText(const std::string& html) {
  const std::string open =
      "<script type=\"application/json\" id=\"board-data\">";
  const size_t start = html.find(open);
  EXPECT_NE(start, std::string::npos);
  if (start == std::string::npos) return "";
  const size_t body = start + open.size();
  const size_t end = html.find("</script>", body);
  EXPECT_NE(end, std::string::npos);
  return html.substr(body, end - body);
}

Struct ParseData(const std::string& html) {
  Struct data;
  const auto s =
      google::protobuf::util::JsonStringToMessage(DataText(html), &data);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return data;
}

const Value& Field(const Struct& s, const std::string& name) {
  static const Value kNull;
  auto it = s.fields().find(name);
  EXPECT_NE(it, s.fields().end()) << name;
  return it == s.fields().end() ? kNull : it->second;
}
const Value& Field(const Value& v, const std::string& name) {
  return Field(v.struct_value(), name);
}
const ListValue& List(const Value& v, const std::string& name) {
  return Field(v, name).list_value();
}
const ListValue& List(const Struct& s, const std::string& name) {
  return Field(s, name).list_value();
}
double Number(const Value& v, const std::string& name) {
  return Field(v, name).number_value();
}

// The entry of `list` whose "tag" is `tag`.
const Value& ByTag(const ListValue& list, const std::string& tag) {
  static const Value kNull;
  for (const Value& v : list.values()) {
    if (Field(v, "tag").string_value() == tag) return v;
  }
  ADD_FAILURE() << "no tag " << tag;
  return kNull;
}

// --- Tests -----------------------------------------------------------------

TEST(BoardTest, EvenSampleKeepsTheEnds) {
  EXPECT_EQ(EvenSample(10, 4), (std::vector<size_t>{0, 3, 6, 9}));
  EXPECT_EQ(EvenSample(3, 10), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(EvenSample(5, 1), std::vector<size_t>{4});
  EXPECT_TRUE(EvenSample(0, 5).empty());
  const std::vector<size_t> s = EvenSample(1001, 1000);
  ASSERT_EQ(s.size(), 1000u);
  EXPECT_EQ(s.front(), 0u);
  EXPECT_EQ(s.back(), 1000u);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1], s[i]);
}

TEST(BoardTest, HistogramEndBucketsAreClampedToMinAndMax) {
  HistogramProto h;
  h.set_min(-1.5);
  h.set_max(2);
  for (double limit : {-1.0, 0.0, 1.0, DBL_MAX}) h.add_bucket_limit(limit);
  for (double count : {1, 2, 3, 4}) h.add_bucket(count);
  const std::vector<HistogramBucket> b = HistogramBuckets(h);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].left, -1.5);  // Not -DBL_MAX.
  EXPECT_EQ(b[0].right, -1.0);
  EXPECT_EQ(b[1].left, -1.0);
  EXPECT_EQ(b[2].right, 1.0);
  EXPECT_EQ(b[3].left, 1.0);
  EXPECT_EQ(b[3].right, 2.0);  // Not DBL_MAX.
  EXPECT_EQ(b[3].count, 4);
  // A damaged proto (fewer counts than limits, min > max) does not crash.
  h.add_bucket_limit(5);
  h.set_min(3);
  EXPECT_EQ(HistogramBuckets(h).size(), 4u);
}

// Two runs: "a" with more points, steps and images than the caps and an
// evil tag; "b" resumed from step 5 (START) with a step going back.
class BoardRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = MakeTempDir();
    EventFile a;
    for (int64_t step = 0; step < 3000; ++step) {
      a.Scalar(step, "loss", 1.0f / (1 + step));
    }
    a.Scalar(3000, "loss", NAN);
    for (int64_t step = 0; step < 100; ++step) {
      HistogramProto* h = a.Value(step, "w")->mutable_histo();
      h->set_min(-1 - step * 0.01);
      h->set_max(1);
      h->set_num(10);
      for (double limit : {-0.5, 0.5, DBL_MAX}) h->add_bucket_limit(limit);
      for (double count : {2, 5, 3}) h->add_bucket(count);
    }
    const std::string png = TinyPng();
    for (int64_t step = 0; step < 20; ++step) {
      Summary::Image* im = a.Value(step, "inputs/image/0")->mutable_image();
      im->set_width(4);
      im->set_height(4);
      im->set_colorspace(1);
      im->set_encoded_image_string(png);
    }
    // Out of order: purges steps 15..19.
    a.Value(15, "inputs/image/0")
        ->mutable_image()
        ->set_encoded_image_string("not an image");
    a.Scalar(7, kEvilTag, 1);
    a.Value(7, "speech")->mutable_audio()->set_sample_rate(8000);
    a.Write(root_ + "/a", "events.out.tfevents.1.host");

    EventFile b;
    b.Start(0);
    for (int64_t step = 0; step < 10; ++step) b.Scalar(step, "loss", step);
    b.Start(5);  // Resumed at step 5: 5..9 are orphans.
    for (int64_t step = 5; step < 8; ++step) b.Scalar(step, "loss", -step);
    b.Scalar(6, "loss", 100);  // Step going back: 6, 7 go.
    b.Write(root_ + "/b", "events.out.tfevents.2.host");
  }

  static constexpr char kEvilTag[] = "</script><img src=x onerror=alert(1)>";
  std::string root_;
};

TEST_F(BoardRunsTest, CapsRunsAndPurges) {
  auto data = ReadBoard(root_);
  ASSERT_OK(data.status());
  ASSERT_EQ(data->runs.size(), 2u);
  const std::string html = BoardHtml(*data);
  const Struct d = ParseData(html);

  const ListValue& runs = List(d, "runs");
  ASSERT_EQ(runs.values_size(), 2);
  EXPECT_EQ(Field(runs.values(0), "name").string_value(), "a");
  EXPECT_EQ(Field(runs.values(1), "name").string_value(), "b");
  EXPECT_EQ(Number(runs.values(1), "restarts"), 2);
  EXPECT_EQ(Number(runs.values(1), "purged"), 7);  // 5 restart + 2 going back.
  EXPECT_EQ(Number(runs.values(0), "purged"), 5);  // Images 15..19.

  // Scalars: a's 3001 points capped at 1000, the first and last kept, the
  // NaN as "NaN"; b's 0..4, 5, 6(=100).
  const Value& loss = ByTag(List(d, "scalars"), "loss");
  const ListValue& series = List(loss, "series");
  ASSERT_EQ(series.values_size(), 2);
  const Value& la = series.values(0);
  EXPECT_EQ(Number(la, "run"), 0);
  EXPECT_EQ(Number(la, "total"), 3001);
  const ListValue& steps = List(la, "step");
  ASSERT_EQ(steps.values_size(), 1000);
  EXPECT_EQ(steps.values(0).number_value(), 0);
  EXPECT_EQ(steps.values(999).number_value(), 3000);
  EXPECT_EQ(List(la, "value").values(999).string_value(), "NaN");
  EXPECT_EQ(List(la, "value").values(0).number_value(), 1);
  const Value& lb = series.values(1);
  std::vector<double> b_steps, b_values;
  for (const Value& v : List(lb, "step").values()) {
    b_steps.push_back(v.number_value());
  }
  for (const Value& v : List(lb, "value").values()) {
    b_values.push_back(v.number_value());
  }
  EXPECT_EQ(b_steps, (std::vector<double>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b_values, (std::vector<double>{0, 1, 2, 3, 4, -5, 100}));

  // Histograms: 50 of 100 steps, the last included, 30 bins each, over the
  // sampled steps' range (the end buckets clamped to min and max).
  const Value& w = ByTag(List(d, "histograms"), "w");
  const Value& ws = List(w, "series").values(0);
  EXPECT_EQ(Number(ws, "total"), 100);
  const ListValue& hsteps = List(ws, "steps");
  ASSERT_EQ(hsteps.values_size(), 50);
  EXPECT_EQ(Number(hsteps.values(49), "step"), 99);
  EXPECT_EQ(List(hsteps.values(0), "counts").values_size(), 30);
  EXPECT_NEAR(Number(ws, "lo"), -1.99, 1e-9);
  EXPECT_EQ(Number(ws, "hi"), 1);
  double total = 0;
  for (const Value& c : List(hsteps.values(0), "counts").values()) {
    total += c.number_value();
  }
  EXPECT_NEAR(total, 10, 1e-9);

  // Images: the latest 10 were kept (10..19), the step going back purged
  // 15..19, so 10..14 and the new 15, which is not an image: listed, not
  // embedded.
  const Value& im = ByTag(List(d, "images"), "inputs/image/0");
  const ListValue& ims = List(List(im, "series").values(0), "images");
  ASSERT_EQ(ims.values_size(), 6);
  EXPECT_EQ(Number(ims.values(0), "step"), 10);
  EXPECT_EQ(Field(ims.values(0), "mime").string_value(), "image/png");
  EXPECT_EQ(Field(ims.values(0), "data").string_value().substr(0, 4), "iVBO");
  EXPECT_EQ(Number(ims.values(5), "step"), 15);
  EXPECT_EQ(Field(ims.values(5), "skipped").string_value(),
            "not PNG, JPEG or GIF");

  // The evil tag is data, not markup; the audio tag is listed.
  EXPECT_EQ(Field(ByTag(List(d, "scalars"), kEvilTag), "tag").string_value(),
            kEvilTag);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(Field(ByTag(List(d, "other"), "speech"), "kind").string_value(),
            "audio");
  // No network: nothing refers to another host or file.
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src=\""), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
}

TEST_F(BoardRunsTest, CapsAreOptions) {
  BoardOptions options;
  options.max_scalar_points = 10;
  options.max_histogram_steps = 3;
  options.max_images = 1;
  auto data = ReadBoard(root_, options);
  ASSERT_OK(data.status());
  const Struct d = ParseData(BoardHtml(*data));
  const Value& la = List(ByTag(List(d, "scalars"), "loss"), "series").values(0);
  EXPECT_EQ(List(la, "step").values_size(), 10);
  const Value& w = List(ByTag(List(d, "histograms"), "w"), "series").values(0);
  EXPECT_EQ(List(w, "steps").values_size(), 3);
  const Value& im =
      List(ByTag(List(d, "images"), "inputs/image/0"), "series").values(0);
  EXPECT_EQ(List(im, "images").values_size(), 1);
}

TEST_F(BoardRunsTest, WritesTheFile) {
  const std::string out = root_ + "/report.html";
  ASSERT_OK(WriteBoard(root_, out));
  const std::string html = ReadFile(out);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("data-status=\"loading\""), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // Written through a temporary file that is gone.
  EXPECT_EQ(DirEntries(root_),
            (std::vector<std::string>{"a", "b", "report.html"}));
}

TEST(BoardTest, EmptyOrMissingLogDirectory) {
  const std::string root = MakeTempDir();
  auto empty = ReadBoard(root);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(empty.status().message().find("no event files"), std::string::npos)
      << empty.status();
  auto missing = ReadBoard(root + "/nothing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(root + "/nothing"),
            std::string::npos);
  // And no report is written.
  EXPECT_FALSE(WriteBoard(root, root + "/r.html").ok());
  EXPECT_FALSE(FileExists(root + "/r.html"));
}

TEST(BoardTest, UnwritableOutput) {
  const std::string root = MakeTempDir();
  EventFile f;
  f.Scalar(1, "loss", 1);
  f.Write(root, "events.out.tfevents.1.h");
  Status s = WriteBoard(root, root + "/no/such/dir/r.html");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("cannot write the report to " + root +
                             "/no/such/dir/r.html"),
            std::string::npos)
      << s;
  s = WriteBoard(root, root);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("is a directory"), std::string::npos) << s;
  // /proc refuses new files even to root.
  s = WriteBoard(root, "/proc/runnel_board.html");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/proc/runnel_board.html"), std::string::npos)
      << s;
  EXPECT_FALSE(WriteBoard(root, std::string("r\0.html", 7)).ok());
}

TEST(BoardTest, DamagedEventFileStillGivesAReport) {
  const std::string root = MakeTempDir();
  EventFile f;
  for (int64_t step = 0; step < 5; ++step) f.Scalar(step, "loss", step);
  std::string bytes = f.bytes();
  bytes[bytes.size() - 10] ^= 1;  // The last record's data CRC fails.
  bytes += bytes.substr(0, 20);   // And a cut record at the end.
  ASSERT_OK(WriteStringToFile(root + "/events.out.tfevents.1.h", bytes));
  auto data = ReadBoard(root);
  ASSERT_OK(data.status());
  const Struct d = ParseData(BoardHtml(*data));
  const Value& file = List(List(d, "runs").values(0), "files").values(0);
  const ListValue& damage = List(file, "damage");
  ASSERT_EQ(damage.values_size(), 2);
  EXPECT_EQ(Field(damage.values(0), "kind").string_value(), "bad data CRC");
  EXPECT_EQ(Field(damage.values(1), "kind").string_value(), "truncated");
  EXPECT_NE(Field(damage.values(1), "message")
                .string_value()
                .find("truncated record at offset"),
            std::string::npos);
  // The four good points are drawn.
  const Value& loss =
      List(ByTag(List(d, "scalars"), "loss"), "series").values(0);
  EXPECT_EQ(List(loss, "step").values_size(), 4);
}

}  // namespace
}  // namespace runnel
