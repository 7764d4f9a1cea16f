// Tensor bundles: TensorFlow's V2 checkpoint format, read and written byte
// for byte as TensorFlow does (FORMATS.md §c).
//
// A bundle with prefix P is
//   P.index                      a LevelDB-format table (LevelDB's own table
//                                builder and reader): "" -> BundleHeaderProto,
//                                tensor name -> BundleEntryProto, sorted;
//   P.data-00000-of-00001 ...    the tensors' bytes, concatenated in the
//                                order they were added, no padding.
// Numeric tensors are stored as their little-endian host bytes; strings as
// varint64 lengths, a masked CRC of the lengths, then the bytes. Each entry
// records Mask(crc32c) of its bytes (strings: FORMATS.md's special rule).
//
//   BundleWriter w("/ckpt/model.ckpt-10");
//   RETURN_IF_ERROR(w.Add("dense/kernel", kernel));
//   RETURN_IF_ERROR(w.Finish());
//   BundleReader r("/ckpt/model.ckpt-10");
//   Tensor t;
//   RETURN_IF_ERROR(r.Lookup("dense/kernel", &t));
//
// Note [Atomic bundles]. The writer puts the data file and the index under
// temporary names ("<name>.tempstate<random>"), flushes them to disk and
// renames them into place, data first, index last: a crash at any moment
// leaves either no bundle or a complete one under P (a reader finds nothing
// until the index is there). The Saver builds on this (and on the
// "checkpoint" state file being replaced atomically too) so the last good
// checkpoint always survives.
//
// Errors: NotFound for a missing index ("checkpoint ... not found") or data
// shard (naming the file and the tensor) and for an unknown key; DataLoss,
// naming the tensor, for a checksum mismatch, a data file shorter than the
// entry says, or an entry whose size does not match its shape; DataLoss for
// an index that is not a valid table or whose header or entries do not
// parse; Unimplemented for partitioned (sliced) entries, variant tensors and
// big-endian bundles; InvalidArgument for a duplicate key or unsupported
// dtype on write; other I/O failures keep their errno-derived code.
//
// Thread safety: a BundleWriter is used by one thread. A BundleReader's
// const methods may be called from several threads at once.
#ifndef RUNNEL_IO_TENSOR_BUNDLE_H_
#define RUNNEL_IO_TENSOR_BUNDLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "proto/tensor_bundle.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"

namespace runnel {
// TF names data files "%05d-of-%05d", so no real bundle has more shards;
// headers claiming more are refused (DataLoss) before anything is sized.
inline constexpr int kMaxBundleShards = 99999;
}  // namespace runnel

namespace leveldb {
class RandomAccessFile;
class Table;
}  // namespace leveldb

namespace runnel {

// The key of the header entry (sorts first).
inline constexpr char kBundleHeaderEntryKey[] = "";
// BundleHeaderProto.version.producer that this code writes.
inline constexpr int kTensorBundleVersion = 1;

// "P.index".
std::string MetaFilename(absl::string_view prefix);
// "P.data-00003-of-00008".
std::string DataFilename(absl::string_view prefix, int shard_id,
                         int num_shards);

// Writes `contents` to a temporary file beside `path`, flushes it to disk
// and renames it to `path`: readers see the old file or the new one, never
// a mix (used for indexes and the Saver's "checkpoint" state file).
Status WriteStringToFileAtomically(const std::string& path,
                                   absl::string_view contents);

class BundleWriter {
 public:
  // Starts a bundle at `prefix` (its directory is created if missing). A
  // failure here is returned by every later call.
  explicit BundleWriter(std::string prefix);
  // Abandons an unfinished bundle: its temporary files are deleted and
  // nothing appears under the prefix.
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  Status status() const { return status_; }

  // Appends `value`'s bytes to the data file under the name `key` (not "";
  // unique in this bundle). Supports every POD dtype and DT_STRING.
  Status Add(absl::string_view key, const Tensor& value);

  // Writes the index and renames both files into place (Note [Atomic
  // bundles]). The writer is closed afterwards.
  Status Finish();

 private:
  Status Append(absl::string_view bytes);
  void Abandon();

  std::string prefix_;
  std::string data_tmp_;  // Temporary name of the data file.
  int fd_ = -1;           // The data file while open.
  int64_t size_ = 0;      // Bytes written to the data file.
  bool finished_ = false;
  Status status_;
  std::map<std::string, BundleEntryProto> entries_;
};

// Merges the bundles `prefixes` (each may have several shards) into one
// bundle at `merged_prefix`: renames their data files to
// "<merged_prefix>.data-i-of-n", writes the merged index (atomically) and
// deletes the old index files. Duplicate keys are InvalidArgument. This is
// what MergeV2Checkpoints does after a sharded save.
Status MergeBundles(absl::Span<const std::string> prefixes,
                    const std::string& merged_prefix);

class BundleReader {
 public:
  // Opens the index of the bundle at `prefix`; errors are in status().
  explicit BundleReader(std::string prefix);
  ~BundleReader();
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;

  // OK if the index opened and its header parsed.
  Status status() const { return status_; }
  const std::string& prefix() const { return prefix_; }
  int num_shards() const { return header_.num_shards(); }
  const BundleHeaderProto& header() const { return header_; }

  bool Contains(absl::string_view key) const;
  // The entry for `key` (NotFound if absent; DataLoss if it does not parse).
  Status GetEntry(absl::string_view key, BundleEntryProto* entry) const;
  Status LookupDtypeAndShape(absl::string_view key, DataType* dtype,
                             TensorShape* shape) const;
  // Reads the tensor `key` into *value (a new tensor of the stored dtype and
  // shape), verifying its checksum.
  Status Lookup(absl::string_view key, Tensor* value) const;
  // The tensor names, sorted (the header entry excluded).
  Status ListKeys(std::vector<std::string>* keys) const;

 private:
  Status ReadEntryData(absl::string_view key, const BundleEntryProto& entry,
                       std::string* bytes) const;
  StatusOr<int> DataFile(int shard_id, absl::string_view key) const;

  std::string prefix_;
  Status status_;
  BundleHeaderProto header_;
  std::unique_ptr<leveldb::RandomAccessFile> index_file_;  // In memory.
  leveldb::Table* table_ = nullptr;
  mutable absl::Mutex mu_;
  mutable std::map<int, int> data_fds_ ABSL_GUARDED_BY(mu_);  // shard -> fd.
};

}  // namespace runnel

#endif  // RUNNEL_IO_TENSOR_BUNDLE_H_
