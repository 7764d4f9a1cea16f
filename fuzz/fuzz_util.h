// Helpers shared by the libFuzzer harnesses in fuzz/ (see fuzz/CMakeLists.txt
// and scripts/fuzz.sh).
//
// Every harness calls InitFuzzing() first, turns its bytes into values with
// FuzzInput, and runs graphs only through RunGraphOnce, which refuses graphs
// that would touch the filesystem and bounds each step's time.
//
// Thread safety: FuzzInput is a value used by one thread; the functions are
// reentrant.
#ifndef RUNNEL_FUZZ_FUZZ_UTIL_H_
#define RUNNEL_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/graph.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"

namespace runnel::fuzz {

// Reads typed values front to back from the fuzzer's bytes. Past the end
// every read returns zero bytes, so a harness never has to check sizes.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }
  bool empty() const { return pos_ >= size_; }

  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return Byte() & 1; }
  // sizeof(T) bytes as a T (zero-padded at the end of the input).
  template <typename T>
  T Pod() {
    unsigned char bytes[sizeof(T)] = {};
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = Byte();
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }
  // A value in [lo, hi] (inclusive; lo <= hi), read from as few bytes as the
  // range needs.
  uint64_t Range(uint64_t lo, uint64_t hi);
  // An element of a non-empty container.
  template <typename C>
  const typename C::value_type& Pick(const C& c) {
    return c[Range(0, c.size() - 1)];
  }
  // Up to `n` bytes.
  std::string Bytes(size_t n);
  // A length byte, then that many bytes (at most `max_len`).
  std::string ShortString(size_t max_len = 16);
  // Everything not read yet.
  std::string Rest();

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Process-wide setup, done once however often it is called: caps the CPU
// allocator (so a huge tensor fails as ResourceExhausted long before
// libFuzzer's -rss_limit_mb, and a kernel filling its biggest output, which
// no step timeout interrupts, stays well under libFuzzer's -timeout) and the
// size of a tensor decoded from a TensorProto (so a tiny proto cannot make one
// input take seconds), and silences protobuf's parse-error log.
void InitFuzzing();

// The caps InitFuzzing sets.
inline constexpr int64_t kFuzzMemoryLimitBytes = int64_t{64} << 20;
inline constexpr int64_t kFuzzMaxDecodedTensorBytes = int64_t{16} << 20;

// A path `name` in this process's own temporary directory (made on first
// use under $TMPDIR or /tmp, removed at exit).
std::string TempPath(absl::string_view name);
// Replaces the file at `path` with `contents`; false if that fails.
bool WriteTempFile(const std::string& path, absl::string_view contents);

// True for ops whose kernels open, write, list or delete files (savers,
// readers, ReadFile/WriteFile, MatchingFiles, ...); harnesses never run
// them. Decided by the registry's SetDoesIO() mark and by name (Note
// [Fuzzing without files] in fuzz_util.cc); an unregistered op counts as
// I/O only if its name says so (Create then rejects it as unknown).
bool IsIoOp(absl::string_view op);
bool HasIoOps(const GraphDef& gdef);

// A tensor of zeros (empty strings, false) of `dtype` and `shape`.
// InvalidArgument for dtypes that have no zero (resources, variants) and
// for tensors over `max_bytes`.
StatusOr<Tensor> Zeros(DataType dtype, const TensorShape& shape,
                       int64_t max_bytes = 1 << 20);

// Appends a node to `gdef` and returns it.
NodeDef* AddNode(GraphDef* gdef, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs = {});
// Appends a Const node holding `value` (in tensor_content for POD dtypes).
NodeDef* AddConst(GraphDef* gdef, const std::string& name, const Tensor& value);

struct RunGraphOptions {
  // RunOptions.timeout_in_ms of each step.
  int64_t timeout_ms = 200;
  // Graphs with more nodes are not run.
  int max_nodes = 256;
  // Feed every Placeholder/PlaceholderV2 zeros of its declared shape
  // (unknown dimensions -> 1, unknown rank -> scalar).
  bool feed_placeholders = true;
  // Fetch output 0 of at most this many nodes (those with outputs, in
  // GraphDef order); all other nodes run as targets.
  int max_fetches = 4;
  // Explicit fetches and targets; when either is non-empty the two lists
  // above are not derived from the graph.
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  // Extra runs before the main one (e.g. initialisers), each a target list.
  std::vector<std::vector<std::string>> init_runs;
};

// True when $RUNNEL_FUZZ_VERBOSE is set: harnesses then print what each
// input did (for checking that a harness gets past its validation).
bool Verbose();

// Creates a session in untrusted mode (SessionOptions::untrusted) on `gdef`
// (refused with FailedPrecondition if it has an
// I/O op or more than max_nodes nodes), runs the init runs and then one step
// as `options` says, and returns the step's status; the fetched tensors go
// to *outputs when it is non-null. Every fetched tensor's DebugString is
// taken, so printing code is exercised too.
Status RunGraphOnce(const GraphDef& gdef, const RunGraphOptions& options,
                    std::vector<Tensor>* outputs = nullptr);

}  // namespace runnel::fuzz

#endif  // RUNNEL_FUZZ_FUZZ_UTIL_H_
