#include "runnel/io/tensor_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "absl/strings/str_format.h"
#include "leveldb/env.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/table.h"
#include "leveldb/table_builder.h"
#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"
#include "snappy.h"

namespace runnel {
namespace {

// TensorFlow's table options for bundle indexes (table_options.h and
// BundleWriter::Finish): 256 KiB blocks, a restart every 16 keys, no
// compression. With these, LevelDB's TableBuilder writes the same bytes as
// TensorFlow's fork of it.
constexpr size_t kIndexBlockSize = 262144;
constexpr int kIndexRestartInterval = 16;

Status ErrnoStatus(int err, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " ", path));
}

std::string Dirname(absl::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          static_cast<uint64_t>(NowNanos()));
  return absl::StrFormat("%016x", rng());
}

Status CreateDirs(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "cannot create directory", dir);
  return absl::OkStatus();
}

Status WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write", path);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

// Flushes the directory entry of `path` (so a rename into it is durable).
void SyncDir(const std::string& path) {
  std::string dir = Dirname(path);
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

Status RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot rename ", from, " to"), to);
  }
  return absl::OkStatus();
}

Status WriteFileDurably(const std::string& path, absl::string_view contents) {
  const std::string tmp = absl::StrCat(path, ".tempstate", RandomSuffix());
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot create", tmp);
  Status s = WriteAll(fd, contents.data(), contents.size(), tmp);
  if (s.ok() && ::fsync(fd) != 0) s = ErrnoStatus(errno, "cannot sync", tmp);
  if (::close(fd) != 0 && s.ok()) s = ErrnoStatus(errno, "cannot close", tmp);
  if (s.ok()) s = RenameFile(tmp, path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  SyncDir(path);
  return absl::OkStatus();
}

// A LevelDB output file that collects the table in memory.
class StringSink : public leveldb::WritableFile {
 public:
  leveldb::Status Append(const leveldb::Slice& data) override {
    contents_.append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }
  const std::string& contents() const { return contents_; }

 private:
  std::string contents_;
};

// A LevelDB input file over bytes in memory (index files are small).
class StringSource : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(std::string contents)
      : contents_(std::move(contents)) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    if (offset > contents_.size()) {
      *result = leveldb::Slice();
      return leveldb::Status::Corruption("read past the end of the index");
    }
    n = std::min<uint64_t>(n, contents_.size() - offset);
    *result = leveldb::Slice(contents_.data() + offset, n);
    return leveldb::Status::OK();
  }

 private:
  std::string contents_;
};

leveldb::Options IndexOptions() {
  leveldb::Options o;
  o.block_size = kIndexBlockSize;
  o.block_restart_interval = kIndexRestartInterval;
  o.compression = leveldb::kNoCompression;
  o.paranoid_checks = true;
  return o;
}

// The index table bytes for `header` and `entries` (sorted by key).
StatusOr<std::string> BuildIndex(
    const BundleHeaderProto& header,
    const std::map<std::string, BundleEntryProto>& entries) {
  StringSink sink;
  leveldb::TableBuilder builder(IndexOptions(), &sink);
  builder.Add(kBundleHeaderEntryKey, header.SerializeAsString());
  for (const auto& [key, entry] : entries) {
    builder.Add(key, entry.SerializeAsString());
  }
  const leveldb::Status s = builder.Finish();
  if (!s.ok()) return errors::Internal("building index: ", s.ToString());
  return sink.contents();
}

void PutVarint64(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

bool GetVarint64(absl::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

// The CRC contribution of a string length: as uint32 when it fits (what
// older TensorFlow wrote), else as uint64, little-endian.
uint32_t ExtendWithLength(uint32_t crc, uint64_t len) {
  if (len <= UINT32_MAX) {
    const uint32_t l32 = static_cast<uint32_t>(len);
    char b[4];
    std::memcpy(b, &l32, 4);
    return crc32c::Extend(crc, b, 4);
  }
  char b[8];
  std::memcpy(b, &len, 8);
  return crc32c::Extend(crc, b, 8);
}

// FORMATS.md: [varint64 lengths][masked crc of lengths][bytes]; *crc is the
// entry checksum (lengths as uint32, the 4 checksum bytes, the bytes).
std::string EncodeStringTensor(const Tensor& t, uint32_t* crc) {
  std::string out;
  uint32_t c = 0;
  size_t total = 0;
  for (const tstring& s : t.flat<tstring>()) {
    PutVarint64(&out, s.size());
    c = ExtendWithLength(c, s.size());
    total += s.size();
  }
  const uint32_t masked = crc32c::Mask(c);
  char b[4];
  std::memcpy(b, &masked, 4);
  out.append(b, 4);
  c = crc32c::Extend(c, b, 4);
  out.reserve(out.size() + total);
  for (const tstring& s : t.flat<tstring>()) {
    out.append(s);
    c = crc32c::Extend(c, s.data(), s.size());
  }
  *crc = c;
  return out;
}

Status DecodeStringTensor(absl::string_view key, absl::string_view bytes,
                          Tensor* t, uint32_t* crc) {
  const int64_t n = t->NumElements();
  auto strings = t->flat<tstring>();
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  absl::string_view in = bytes;
  uint32_t c = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!GetVarint64(&in, &lengths[i])) {
      return errors::DataLoss("tensor '", key, "': string length ", i,
                              " is truncated or malformed");
    }
    c = ExtendWithLength(c, lengths[i]);
  }
  if (in.size() < 4) {
    return errors::DataLoss("tensor '", key,
                            "': string length checksum is missing");
  }
  uint32_t masked;
  std::memcpy(&masked, in.data(), 4);
  if (crc32c::Unmask(masked) != c) {
    return errors::DataLoss("tensor '", key,
                            "': checksum of the string lengths does not match "
                            "(stored ",
                            crc32c::Unmask(masked), ", computed ", c, ")");
  }
  c = crc32c::Extend(c, in.data(), 4);
  in.remove_prefix(4);
  for (int64_t i = 0; i < n; ++i) {
    if (lengths[i] > in.size()) {
      return errors::DataLoss("tensor '", key, "': string ", i, " of ",
                              lengths[i], " bytes runs past the entry's end");
    }
    strings[i].assign(in.data(), lengths[i]);
    c = crc32c::Extend(c, in.data(), lengths[i]);
    in.remove_prefix(lengths[i]);
  }
  if (!in.empty()) {
    return errors::DataLoss("tensor '", key, "': ", in.size(),
                            " unexpected bytes after the strings");
  }
  *crc = c;
  return absl::OkStatus();
}

Status LevelDbError(const leveldb::Status& s, absl::string_view path) {
  return errors::DataLoss("checkpoint index ", path,
                          " is not a valid table: ", s.ToString());
}

// Note [Untrusted LevelDB tables]: LevelDB trusts the block handles in a
// table (the footer's index handle, the index block's data-block handles)
// and allocates `size + 5` bytes -- or a Snappy block's declared
// uncompressed length -- before it reads anything. A corrupt .index could so
// ask for exabytes. The index file is in memory, so before handing it to
// LevelDB we walk its structure once and refuse any handle that leaves the
// file or any Snappy block that claims to expand more than Snappy can.
// LevelDB still checks everything else (checksums, block contents).
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;
constexpr size_t kBlockTrailer = 5;  // Type byte + masked CRC-32C.

bool GetVarint(absl::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

uint32_t DecodeFixed32At(absl::string_view s, size_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(s[pos + i]);
  }
  return v;
}

// Checks that the block at (offset, size) lies before the footer and, if
// Snappy-compressed, declares a plausible length; gives its contents
// (uncompressed) when `contents` is not null.
Status CheckBlock(absl::string_view file, uint64_t offset, uint64_t size,
                  const std::string& path, std::string* contents) {
  const uint64_t limit = file.size() - kFooterSize;
  if (offset > limit || size > limit - offset ||
      limit - offset - size < kBlockTrailer) {
    return errors::DataLoss("checkpoint index ", path, ": a block at offset ",
                            offset, " of ", size, " bytes lies outside the ",
                            file.size(), "-byte file");
  }
  absl::string_view raw = file.substr(offset, size);
  const char type = file[offset + size];
  if (type == 1) {  // Snappy.
    size_t ulength = 0;
    if (!snappy::GetUncompressedLength(raw.data(), raw.size(), &ulength) ||
        ulength > 32 * size + 64) {
      return errors::DataLoss("checkpoint index ", path,
                              ": a compressed block at offset ", offset,
                              " claims an impossible length");
    }
    if (contents != nullptr &&
        !snappy::Uncompress(raw.data(), raw.size(), contents)) {
      return errors::DataLoss("checkpoint index ", path,
                              ": corrupt compressed block at offset ", offset);
    }
  } else if (contents != nullptr) {
    contents->assign(raw.data(), raw.size());
  }
  return absl::OkStatus();
}

Status CheckTableHandles(absl::string_view file, const std::string& path) {
  auto bad = [&](absl::string_view what) {
    return errors::DataLoss("checkpoint index ", path,
                            " is not a table: ", what);
  };
  if (file.size() < kFooterSize) return bad("shorter than a footer");
  absl::string_view footer = file.substr(file.size() - kFooterSize);
  const uint64_t magic =
      DecodeFixed32At(footer, 40) |
      (static_cast<uint64_t>(DecodeFixed32At(footer, 44)) << 32);
  if (magic != kTableMagic) return bad("bad magic number");
  uint64_t meta_offset, meta_size, index_offset, index_size;
  if (!GetVarint(&footer, &meta_offset) || !GetVarint(&footer, &meta_size) ||
      !GetVarint(&footer, &index_offset) || !GetVarint(&footer, &index_size)) {
    return bad("bad footer");
  }
  RETURN_IF_ERROR(CheckBlock(file, meta_offset, meta_size, path, nullptr));
  std::string index;
  RETURN_IF_ERROR(CheckBlock(file, index_offset, index_size, path, &index));
  // Block: entries, then num_restarts uint32 restart offsets, then
  // num_restarts itself.
  if (index.size() < 4) return bad("index block too short");
  const uint64_t restarts = DecodeFixed32At(index, index.size() - 4);
  if (restarts > (index.size() - 4) / 4) return bad("bad index block");
  absl::string_view entries(index.data(), index.size() - 4 - 4 * restarts);
  while (!entries.empty()) {
    uint64_t shared, non_shared, value_length;
    if (!GetVarint(&entries, &shared) || !GetVarint(&entries, &non_shared) ||
        !GetVarint(&entries, &value_length) || non_shared > entries.size() ||
        value_length > entries.size() - non_shared) {
      return bad("bad index block entry");
    }
    entries.remove_prefix(non_shared);
    absl::string_view handle = entries.substr(0, value_length);
    entries.remove_prefix(value_length);
    uint64_t offset, size;
    if (!GetVarint(&handle, &offset) || !GetVarint(&handle, &size)) {
      return bad("bad block handle");
    }
    RETURN_IF_ERROR(CheckBlock(file, offset, size, path, nullptr));
  }
  return absl::OkStatus();
}

Status ParseEntry(absl::string_view key, absl::string_view value,
                  BundleEntryProto* entry) {
  if (!entry->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return errors::DataLoss("entry for tensor '", key,
                            "' in the checkpoint index does not parse");
  }
  return absl::OkStatus();
}

}  // namespace

Status WriteStringToFileAtomically(const std::string& path,
                                   absl::string_view contents) {
  return WriteFileDurably(path, contents);
}

std::string MetaFilename(absl::string_view prefix) {
  return absl::StrCat(prefix, ".index");
}

std::string DataFilename(absl::string_view prefix, int shard_id,
                         int num_shards) {
  return absl::StrFormat("%s.data-%05d-of-%05d", prefix, shard_id, num_shards);
}

// ---------------------------------------------------------------------------
// BundleWriter

BundleWriter::BundleWriter(std::string prefix) : prefix_(std::move(prefix)) {
  // A NUL inside the prefix would cut the name open() sees, so the writer
  // would truncate (and Abandon() unlink) some other file.
  status_ = ValidatePath(prefix_);
  if (!status_.ok()) {
    status_ = errors::InvalidArgument("checkpoint prefix: ", status_.message());
    return;
  }
  status_ = CreateDirs(Dirname(prefix_));
  if (!status_.ok()) return;
  data_tmp_ =
      absl::StrCat(DataFilename(prefix_, 0, 1), ".tempstate", RandomSuffix());
  fd_ =
      ::open(data_tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) status_ = ErrnoStatus(errno, "cannot create", data_tmp_);
}

BundleWriter::~BundleWriter() {
  if (!finished_) Abandon();
}

void BundleWriter::Abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!data_tmp_.empty()) ::unlink(data_tmp_.c_str());
}

Status BundleWriter::Append(absl::string_view bytes) {
  RETURN_IF_ERROR(WriteAll(fd_, bytes.data(), bytes.size(), data_tmp_));
  size_ += static_cast<int64_t>(bytes.size());
  return absl::OkStatus();
}

Status BundleWriter::Add(absl::string_view key, const Tensor& value) {
  if (!status_.ok()) return status_;
  if (finished_) return errors::FailedPrecondition("bundle already finished");
  if (key.empty()) {
    return errors::InvalidArgument("tensor name must not be empty");
  }
  if (entries_.count(std::string(key))) {
    return errors::InvalidArgument("tensor '", key,
                                   "' added twice to checkpoint ", prefix_);
  }
  const DataType dt = value.dtype();
  if (dt != DT_STRING && !(DataTypeIsPod(dt) && DataTypeSize(dt) > 0)) {
    return errors::InvalidArgument("cannot save tensor '", key, "' of type ",
                                   DataTypeString(dt));
  }
  if (!value.IsInitialized()) {
    return errors::InvalidArgument("cannot save uninitialized tensor '", key,
                                   "'");
  }
  BundleEntryProto entry;
  entry.set_dtype(dt);
  value.shape().AsProto(entry.mutable_shape());
  entry.set_shard_id(0);
  entry.set_offset(size_);
  uint32_t crc = 0;
  Status s;
  if (dt == DT_STRING) {
    const std::string bytes = EncodeStringTensor(value, &crc);
    entry.set_size(static_cast<int64_t>(bytes.size()));
    s = Append(bytes);
  } else {
    const absl::string_view bytes = value.tensor_data();
    // Checksum what is written (the buffer could change under a racing
    // writer, but then the file and its checksum still agree).
    crc = crc32c::Value(bytes.data(), bytes.size());
    entry.set_size(static_cast<int64_t>(bytes.size()));
    s = Append(bytes);
  }
  if (!s.ok()) {
    status_ = s;
    return s;
  }
  entry.set_crc32c(crc32c::Mask(crc));
  entries_.emplace(std::string(key), std::move(entry));
  return absl::OkStatus();
}

Status BundleWriter::Finish() {
  if (!status_.ok()) return status_;
  if (finished_) return errors::FailedPrecondition("bundle already finished");
  finished_ = true;
  Status s;
  if (::fsync(fd_) != 0) s = ErrnoStatus(errno, "cannot sync", data_tmp_);
  if (::close(fd_) != 0 && s.ok()) {
    s = ErrnoStatus(errno, "cannot close", data_tmp_);
  }
  fd_ = -1;
  if (s.ok()) s = RenameFile(data_tmp_, DataFilename(prefix_, 0, 1));
  if (!s.ok()) {
    ::unlink(data_tmp_.c_str());
    status_ = s;
    return s;
  }
  BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kTensorBundleVersion);
  header.mutable_version()->set_min_consumer(0);
  auto index = BuildIndex(header, entries_);
  if (!index.ok()) {
    status_ = index.status();
    return status_;
  }
  status_ = WriteFileDurably(MetaFilename(prefix_), *index);
  return status_;
}

// ---------------------------------------------------------------------------
// MergeBundles

Status MergeBundles(absl::Span<const std::string> prefixes,
                    const std::string& merged_prefix) {
  RETURN_IF_ERROR(ValidatePath(merged_prefix));
  for (const std::string& p : prefixes) RETURN_IF_ERROR(ValidatePath(p));
  if (prefixes.empty()) {
    return errors::InvalidArgument("no checkpoints to merge into ",
                                   merged_prefix);
  }
  std::map<std::string, BundleEntryProto> merged;
  // (old data file, new shard id), for every shard of every bundle.
  std::vector<std::string> old_files;
  BundleHeaderProto header;
  for (const std::string& prefix : prefixes) {
    BundleReader reader(prefix);
    RETURN_IF_ERROR(reader.status());
    if (old_files.empty()) {
      header.set_endianness(reader.header().endianness());
      *header.mutable_version() = reader.header().version();
    } else if (reader.header().endianness() != header.endianness()) {
      return errors::InvalidArgument("cannot merge checkpoints of different ",
                                     "endianness: ", prefix);
    }
    const int first_shard = static_cast<int>(old_files.size());
    if (first_shard + reader.num_shards() > kMaxBundleShards) {
      return errors::InvalidArgument(
          "merging ", prefix, " would give ", first_shard + reader.num_shards(),
          " shards, over the limit of ", kMaxBundleShards);
    }
    for (int i = 0; i < reader.num_shards(); ++i) {
      // Check each data file before renaming any, so a bad header cannot
      // make the merge move some shards and then fail.
      std::string file = DataFilename(prefix, i, reader.num_shards());
      if (!FileExists(file)) {
        return errors::NotFound("data file ", file, " of checkpoint ", prefix,
                                " not found");
      }
      old_files.push_back(std::move(file));
    }
    std::vector<std::string> keys;
    RETURN_IF_ERROR(reader.ListKeys(&keys));
    for (const std::string& key : keys) {
      BundleEntryProto entry;
      RETURN_IF_ERROR(reader.GetEntry(key, &entry));
      if (entry.slices_size() > 0) {
        return errors::Unimplemented("tensor '", key, "' of ", prefix,
                                     " is partitioned (sliced); merging "
                                     "partitioned tensors is not supported");
      }
      entry.set_shard_id(first_shard + entry.shard_id());
      if (!merged.emplace(key, std::move(entry)).second) {
        return errors::InvalidArgument("tensor '", key,
                                       "' is in more than one checkpoint; "
                                       "found again in ",
                                       prefix);
      }
    }
  }
  const int num_shards = static_cast<int>(old_files.size());
  header.set_num_shards(num_shards);
  RETURN_IF_ERROR(CreateDirs(Dirname(merged_prefix)));
  for (int i = 0; i < num_shards; ++i) {
    const std::string to = DataFilename(merged_prefix, i, num_shards);
    if (old_files[i] != to) RETURN_IF_ERROR(RenameFile(old_files[i], to));
  }
  ASSIGN_OR_RETURN(std::string index, BuildIndex(header, merged));
  RETURN_IF_ERROR(WriteFileDurably(MetaFilename(merged_prefix), index));
  for (const std::string& prefix : prefixes) {
    if (MetaFilename(prefix) != MetaFilename(merged_prefix)) {
      ::unlink(MetaFilename(prefix).c_str());
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// BundleReader

BundleReader::BundleReader(std::string prefix) : prefix_(std::move(prefix)) {
  status_ = ValidatePath(prefix_);
  if (!status_.ok()) return;
  const std::string path = MetaFilename(prefix_);
  std::string contents;
  if (!FileExists(path)) {
    status_ =
        errors::NotFound("checkpoint ", prefix_, " not found (no ", path, ")");
    return;
  }
  status_ = ReadFileToString(path, &contents);
  if (!status_.ok()) return;
  status_ = CheckTableHandles(contents, path);
  if (!status_.ok()) return;
  const uint64_t size = contents.size();
  index_file_ = std::make_unique<StringSource>(std::move(contents));
  leveldb::Status ls =
      leveldb::Table::Open(IndexOptions(), index_file_.get(), size, &table_);
  if (!ls.ok()) {
    table_ = nullptr;
    status_ = LevelDbError(ls, path);
    return;
  }
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table_->NewIterator(ro));
  it->Seek(kBundleHeaderEntryKey);
  if (!it->Valid() || !it->key().empty()) {
    status_ = it->status().ok() ? errors::DataLoss("checkpoint index ", path,
                                                   " has no header entry")
                                : LevelDbError(it->status(), path);
    return;
  }
  if (!header_.ParseFromArray(it->value().data(),
                              static_cast<int>(it->value().size()))) {
    status_ = errors::DataLoss("checkpoint index ", path,
                               ": header entry does not parse");
    return;
  }
  if (header_.num_shards() < 1 || header_.num_shards() > kMaxBundleShards) {
    status_ = errors::DataLoss("checkpoint index ", path, ": header has ",
                               header_.num_shards(), " shards");
    return;
  }
  if (header_.endianness() != BundleHeaderProto::LITTLE) {
    status_ = errors::Unimplemented("checkpoint ", prefix_,
                                    " was written on a big-endian machine; "
                                    "byte swapping is not supported");
    return;
  }
  if (header_.version().min_consumer() > kTensorBundleVersion) {
    status_ = errors::FailedPrecondition(
        "checkpoint ", prefix_, " needs a reader of bundle version >= ",
        header_.version().min_consumer(), "; this is version ",
        kTensorBundleVersion);
    return;
  }
  for (int bad : header_.version().bad_consumers()) {
    if (bad == kTensorBundleVersion) {
      status_ = errors::FailedPrecondition(
          "checkpoint ", prefix_, " disallows bundle reader version ", bad);
      return;
    }
  }
}

BundleReader::~BundleReader() {
  delete table_;
  for (const auto& [shard, fd] : data_fds_) ::close(fd);
}

Status BundleReader::GetEntry(absl::string_view key,
                              BundleEntryProto* entry) const {
  RETURN_IF_ERROR(status_);
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table_->NewIterator(ro));
  it->Seek(leveldb::Slice(key.data(), key.size()));
  if (!it->status().ok())
    return LevelDbError(it->status(), MetaFilename(prefix_));
  if (key.empty() || !it->Valid() ||
      absl::string_view(it->key().data(), it->key().size()) != key) {
    return errors::NotFound("tensor '", key, "' not found in checkpoint ",
                            prefix_);
  }
  const leveldb::Slice v = it->value();
  return ParseEntry(key, absl::string_view(v.data(), v.size()), entry);
}

bool BundleReader::Contains(absl::string_view key) const {
  BundleEntryProto entry;
  return GetEntry(key, &entry).ok();
}

Status BundleReader::LookupDtypeAndShape(absl::string_view key, DataType* dtype,
                                         TensorShape* shape) const {
  BundleEntryProto entry;
  RETURN_IF_ERROR(GetEntry(key, &entry));
  auto s = TensorShape::FromProto(entry.shape());
  if (!s.ok()) {
    return errors::DataLoss("tensor '", key,
                            "' has an invalid shape: ", s.status().message());
  }
  if (!DataTypeIsKnown(entry.dtype(), /*allow_ref=*/false)) {
    return errors::DataLoss("tensor '", key, "' has an invalid dtype ",
                            static_cast<int>(entry.dtype()));
  }
  *dtype = entry.dtype();
  *shape = *s;
  return absl::OkStatus();
}

Status BundleReader::ListKeys(std::vector<std::string>* keys) const {
  RETURN_IF_ERROR(status_);
  keys->clear();
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table_->NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (it->key().empty()) continue;
    keys->push_back(it->key().ToString());
  }
  if (!it->status().ok()) {
    return LevelDbError(it->status(), MetaFilename(prefix_));
  }
  return absl::OkStatus();
}

StatusOr<int> BundleReader::DataFile(int shard_id,
                                     absl::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = data_fds_.find(shard_id);
  if (it != data_fds_.end()) return it->second;
  const std::string path = DataFilename(prefix_, shard_id, num_shards());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return errors::NotFound("data file ", path, " of checkpoint ", prefix_,
                              " (holding tensor '", key, "') not found");
    }
    return ErrnoStatus(errno, "cannot open", path);
  }
  data_fds_[shard_id] = fd;
  return fd;
}

Status BundleReader::ReadEntryData(absl::string_view key,
                                   const BundleEntryProto& entry,
                                   std::string* bytes) const {
  if (entry.shard_id() < 0 || entry.shard_id() >= num_shards()) {
    return errors::DataLoss("tensor '", key, "' is in shard ", entry.shard_id(),
                            " but checkpoint ", prefix_, " has ", num_shards());
  }
  if (entry.offset() < 0 || entry.size() < 0) {
    return errors::DataLoss("tensor '", key, "' has offset ", entry.offset(),
                            " and size ", entry.size());
  }
  ASSIGN_OR_RETURN(const int fd, DataFile(entry.shard_id(), key));
  const std::string path =
      DataFilename(prefix_, entry.shard_id(), num_shards());
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "cannot stat", path);
  const uint64_t end = static_cast<uint64_t>(entry.offset()) +
                       static_cast<uint64_t>(entry.size());
  if (end > static_cast<uint64_t>(st.st_size)) {
    return errors::DataLoss("tensor '", key, "' needs bytes [", entry.offset(),
                            ", ", end, ") of ", path, ", which has only ",
                            st.st_size, " bytes (truncated checkpoint?)");
  }
  bytes->resize(static_cast<size_t>(entry.size()));
  size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t r = ::pread(fd, bytes->data() + done, bytes->size() - done,
                              static_cast<off_t>(entry.offset() + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read", path);
    }
    if (r == 0) {
      return errors::DataLoss("tensor '", key, "': unexpected end of ", path);
    }
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

Status BundleReader::Lookup(absl::string_view key, Tensor* value) const {
  BundleEntryProto entry;
  RETURN_IF_ERROR(GetEntry(key, &entry));
  if (entry.slices_size() > 0) {
    return errors::Unimplemented("tensor '", key, "' of checkpoint ", prefix_,
                                 " is partitioned (saved in slices); reading "
                                 "partitioned tensors is not supported");
  }
  const DataType dt = entry.dtype();
  const bool is_string = dt == DT_STRING;
  if (!DataTypeIsKnown(dt, /*allow_ref=*/false) ||
      (!is_string && !(DataTypeIsPod(dt) && DataTypeSize(dt) > 0))) {
    return errors::Unimplemented("tensor '", key, "' of checkpoint ", prefix_,
                                 " has type ", DataTypeString(dt),
                                 ", which cannot be restored");
  }
  auto shape = TensorShape::FromProto(entry.shape());
  if (!shape.ok()) {
    return errors::DataLoss(
        "tensor '", key, "' has an invalid shape: ", shape.status().message());
  }
  const uint64_t n = static_cast<uint64_t>(shape->num_elements());
  if (is_string) {
    // Each element needs at least a one-byte length, plus the checksum.
    if (n > 0 && static_cast<uint64_t>(entry.size()) < n + 4) {
      return errors::DataLoss("tensor '", key, "' has ", n,
                              " strings but its entry holds only ",
                              entry.size(), " bytes");
    }
  } else {
    const uint64_t elem = static_cast<uint64_t>(DataTypeSize(dt));
    if (n > (uint64_t{1} << 62) / elem ||
        n * elem != static_cast<uint64_t>(entry.size())) {
      return errors::DataLoss("tensor '", key, "' of type ", DataTypeString(dt),
                              " and shape ", shape->DebugString(),
                              " should have ", n * elem,
                              " bytes but its entry says ", entry.size());
    }
  }
  // Consistent but too big for this process (strings cost a std::string
  // each): refused before anything is read or allocated.
  const uint64_t elem_bytes =
      is_string ? sizeof(tstring) : static_cast<uint64_t>(DataTypeSize(dt));
  if (n > static_cast<uint64_t>(MaxDecodedTensorBytes()) / elem_bytes) {
    return errors::ResourceExhausted(
        "tensor '", key, "' of checkpoint ", prefix_, " has shape ",
        shape->DebugString(), " of ", DataTypeString(dt),
        ", over the limit of ", MaxDecodedTensorBytes(),
        " bytes for one restored tensor");
  }
  std::string bytes;
  RETURN_IF_ERROR(ReadEntryData(key, entry, &bytes));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(cpu_allocator(), dt, *shape));
  uint32_t crc = 0;
  if (is_string) {
    if (n == 0 && bytes.empty()) {
      crc = 0;
    } else {
      RETURN_IF_ERROR(DecodeStringTensor(key, bytes, &t, &crc));
    }
  } else {
    crc = crc32c::Value(bytes.data(), bytes.size());
    if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
    if (dt == DT_BOOL) NormalizeBools(&t);
  }
  if (crc != crc32c::Unmask(entry.crc32c())) {
    return errors::DataLoss(
        "checksum mismatch for tensor '", key, "' in ",
        DataFilename(prefix_, entry.shard_id(), num_shards()), " (",
        entry.size(), " bytes at offset ", entry.offset(), "): stored ",
        absl::StrFormat("%08x", crc32c::Unmask(entry.crc32c())), ", computed ",
        absl::StrFormat("%08x", crc), "; the checkpoint is corrupt");
  }
  *value = std::move(t);
  return absl::OkStatus();
}

}  // namespace runnel
