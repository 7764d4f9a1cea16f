// Builds the seed corpora of the harnesses (scripts/fuzz.sh runs it):
//
//   fuzz_seeds TESTDATA_TF_DIR OUT_DIR
//
// writes OUT_DIR/<harness>/<name> files in each harness's input format
// (see the comment at the top of each fuzz/<harness>_fuzzer.cc) from
// TensorFlow's own files in TESTDATA_TF_DIR (graphs, checkpoints, records,
// meta graphs, SavedModels), plus small generated inputs: TFRecord files in
// every compression, tf.Examples with the example harness's features and
// one input per registered op for the kernel harness, feed values.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "proto/example.pb.h"
#include "proto/graph.pb.h"
#include "proto/meta_graph.pb.h"
#include "proto/saved_model.pb.h"
#include "runnel/base/env.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"
#include "runnel/io/record_writer.h"
#include "runnel/io/tensor_bundle.h"

namespace runnel::fuzz {
namespace {

namespace fs = std::filesystem;

// Seeds over this size are not written (they would slow every run).
constexpr size_t kMaxSeedBytes = 64 << 10;

class Seeds {
 public:
  explicit Seeds(std::string out) : out_(std::move(out)) {}

  void Add(const std::string& harness, const std::string& name,
           const std::string& bytes) {
    if (bytes.size() > kMaxSeedBytes) return;
    const fs::path dir = fs::path(out_) / harness;
    fs::create_directories(dir);
    std::string file = name;
    for (char& c : file) {
      if (c == '/' || c == ' ') c = '_';
    }
    if (!WriteStringToFile((dir / file).string(), bytes).ok()) {
      std::fprintf(stderr, "fuzz_seeds: cannot write %s\n", file.c_str());
      return;
    }
    ++count_[harness];
  }
  void Report() const {
    for (const auto& [h, n] : count_)
      std::printf("  %-14s %d seeds\n", h.c_str(), n);
  }

 private:
  std::string out_;
  std::map<std::string, int> count_;
};

std::string Prefixed(char mode, const std::string& bytes) {
  return std::string(1, mode) + bytes;
}

std::string ReadOrEmpty(const fs::path& p) {
  std::string s;
  if (!ReadFileToString(p.string(), &s).ok()) s.clear();
  return s;
}

// Graphs feed graphdef/session (and their Consts tensor_proto).
void AddGraph(Seeds& seeds, const std::string& name, const GraphDef& g) {
  std::string binary;
  g.SerializeToString(&binary);
  seeds.Add("graphdef", name + ".bin", Prefixed(0, binary));
  seeds.Add("session", name + ".bin", Prefixed(0, binary));
  int k = 0;
  for (const NodeDef& n : g.node()) {
    auto it = n.attr().find("value");
    if (n.op() != "Const" || it == n.attr().end()) continue;
    std::string t;
    it->second.tensor().SerializeToString(&t);
    seeds.Add("tensor_proto", absl::StrCat(name, ".const", k++), t);
  }
}

void AddGraphFiles(Seeds& seeds, const fs::path& root) {
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string path = e.path().string();
    const std::string name = fs::relative(e.path(), root).string();
    const std::string bytes = ReadOrEmpty(e.path());
    GraphDef g;
    if (absl::EndsWith(path, ".pbtxt")) {
      seeds.Add("graphdef", name, Prefixed(1, bytes));
      seeds.Add("session", name, Prefixed(1, bytes));
      if (ParseGraphDefText(bytes, &g).ok()) AddGraph(seeds, name, g);
    } else if (absl::StrContains(path, "/graphs/") &&
               absl::EndsWith(path, ".pb") && ParseGraphDef(bytes, &g).ok()) {
      AddGraph(seeds, name, g);
    } else if (absl::EndsWith(path, ".meta")) {
      MetaGraphDef mgd;
      if (!mgd.ParseFromString(bytes)) continue;
      seeds.Add("meta_graph", name, Prefixed(0, bytes));
      AddGraph(seeds, name, mgd.graph_def());
    } else if (absl::EndsWith(path, "saved_model.pb")) {
      SavedModel sm;
      if (!sm.ParseFromString(bytes)) continue;
      seeds.Add("meta_graph", name, Prefixed(1, bytes));
      for (int i = 0; i < sm.meta_graphs_size(); ++i) {
        std::string one;
        sm.meta_graphs(i).SerializeToString(&one);
        seeds.Add("meta_graph", absl::StrCat(name, ".mg", i), Prefixed(0, one));
        AddGraph(seeds, absl::StrCat(name, ".mg", i),
                 sm.meta_graphs(i).graph_def());
      }
    } else if (absl::EndsWith(path, ".index")) {
      // A single-shard bundle: 4-byte length, index, data shard 0.
      const std::string prefix = path.substr(0, path.size() - 6);
      const std::string data = ReadOrEmpty(DataFilename(prefix, 0, 1));
      const uint32_t len = static_cast<uint32_t>(bytes.size());
      std::string seed(reinterpret_cast<const char*>(&len), 4);
      seeds.Add("tensor_bundle", name, seed + bytes + data);
    } else if (absl::StrContains(path, "/records/") ||
               absl::StrContains(path, "/events/")) {
      // Whole files are big; their first records are enough.
      seeds.Add("record", name + ".head", Prefixed(0, bytes.substr(0, 4096)));
    }
  }
}

// TFRecord files written by our writer, in each compression (the record
// harness's mode byte is the RecordCompression index).
void AddRecords(Seeds& seeds, const std::vector<std::string>& records) {
  const RecordCompression kModes[] = {RecordCompression::kNone,
                                      RecordCompression::kZlib,
                                      RecordCompression::kGzip};
  for (int m = 0; m < 3; ++m) {
    const std::string path = TempPath("records");
    auto w = RecordWriter::Create(path, kModes[m]);
    if (!w.ok()) continue;
    for (const std::string& r : records) (*w)->WriteRecord(r).IgnoreError();
    (*w)->Close().IgnoreError();
    w->reset();
    seeds.Add("record", absl::StrCat("generated.", m),
              Prefixed(static_cast<char>(m), ReadOrEmpty(path)));
  }
}

std::vector<std::string> MakeExamples() {
  std::vector<std::string> out;
  for (int variant = 0; variant < 4; ++variant) {
    Example ex;
    auto& f = *ex.mutable_features()->mutable_feature();
    f["sf"].mutable_float_list()->add_value(0.5f * variant);
    for (int i = 0; i < variant; ++i)
      f["si"].mutable_int64_list()->add_value(i);
    f["ss"].mutable_bytes_list()->add_value("abc");
    f["df"].mutable_float_list()->add_value(1);
    if (variant != 1) f["df"].mutable_float_list()->add_value(2);
    if (variant != 2) f["di"].mutable_int64_list()->add_value(7);
    f["ds"].mutable_bytes_list()->add_value("s");
    for (int i = 0; i <= variant; ++i)
      f["dv"].mutable_float_list()->add_value(i);
    if (variant == 3)
      f["df"].mutable_int64_list()->add_value(1);  // Wrong kind.
    std::string s;
    ex.SerializeToString(&s);
    out.push_back(s);
  }
  return out;
}

void AddExamples(Seeds& seeds, const std::vector<std::string>& examples) {
  for (size_t i = 0; i < examples.size(); ++i) {
    seeds.Add("example", absl::StrCat("one.", i), Prefixed(0, examples[i]));
  }
  // Two examples (mode 1: n = 2; bit 2: with names).
  const std::string& a = examples[0];
  const uint16_t len = static_cast<uint16_t>(a.size());
  seeds.Add(
      "example", "two",
      Prefixed(1 | 4, std::string(reinterpret_cast<const char*>(&len), 2) + a +
                          examples[3]));
}

// One seed per registered op: the kernel harness reads the op index first
// (one byte for up to 256 ops, two big-endian bytes beyond), then 0x01
// bytes, which mostly choose attr defaults and small values.
void AddKernelSeeds(Seeds& seeds) {
  std::vector<std::string> ops;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!IsIoOp(op)) ops.push_back(op);
  }
  const size_t n = ops.size();
  for (size_t i = 0; i < n; ++i) {
    std::string seed;
    for (uint64_t s = n - 1; s != 0; s >>= 8) seed.insert(seed.begin(), 0);
    uint64_t v = i;
    for (size_t k = seed.size(); k-- > 0; v >>= 8) {
      seed[k] = static_cast<char>(v & 0xff);
    }
    seed += std::string(256, '\x01');
    seeds.Add("kernel", ops[i], seed);
  }
}

// The feed parser harness: dtype index (into AllTypes()), declared-shape
// index, value text.
void AddFeedSeeds(Seeds& seeds) {
  const char* kTexts[] = {
      "[[1, 2], [3, 4]]", "1.5", "-7",   "'abc'", "\"x y\"", "true", "[]",
      "[[], []]",         "nan", "-inf", "word",  "[1, [2]]"};
  int k = 0;
  for (const char* text : kTexts) {
    for (char dtype : {0, 1, 3}) {
      const std::string name = absl::StrCat("value.", k);
      seeds.Add("feed_parser", name,
                std::string{dtype, static_cast<char>(k % 5)} + text);
      ++k;
    }
  }
}

// Encoded iterator states (Note [Iterator checkpoints]): every kind of
// entry, and an empty state.
void AddIteratorStateSeeds(Seeds& seeds) {
  IteratorState empty;
  // Mode 1: the harness recomputes the checksum.
  seeds.Add("iterator_state", "empty", Prefixed(1, empty.Encode()));
  IteratorState s;
  if (!s.WriteScalar("input/next", int64_t{7}).ok() ||
      !s.WriteScalar("dataset", std::string("RangeDataset(0, 10, 1)")).ok() ||
      !s.WriteTensor("buffer/0", Tensor::FromVector<float>({1.5f, -2.f}))
           .ok() ||
      !s.WriteTensor("buffer/1", Tensor::Scalar<tstring>("abc")).ok()) {
    std::fprintf(stderr, "fuzz_seeds: cannot build an iterator state\n");
    return;
  }
  seeds.Add("iterator_state", "entries", Prefixed(1, s.Encode()));
  seeds.Add("iterator_state", "entries.raw", Prefixed(0, s.Encode()));
}

}  // namespace
}  // namespace runnel::fuzz

int main(int argc, char** argv) {
  using namespace runnel::fuzz;  // NOLINT
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TESTDATA_TF_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  Seeds seeds(argv[2]);
  AddGraphFiles(seeds, argv[1]);
  const std::vector<std::string> examples = MakeExamples();
  std::vector<std::string> records = {"", "a", std::string(100, 'x')};
  records.insert(records.end(), examples.begin(), examples.end());
  AddRecords(seeds, records);
  AddExamples(seeds, examples);
  AddKernelSeeds(seeds);
  AddFeedSeeds(seeds);
  AddIteratorStateSeeds(seeds);
  seeds.Report();
  return 0;
}
