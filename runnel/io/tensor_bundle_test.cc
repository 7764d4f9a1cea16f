#include "runnel/io/tensor_bundle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "leveldb/env.h"
#include "leveldb/options.h"
#include "leveldb/table_builder.h"
#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;

const std::string kTf = std::string(RUNNEL_TESTDATA_DIR) + "/tf/";

void WriteFile(const std::string& path, const std::string& contents) {
  ASSERT_TRUE(WriteStringToFile(path, contents).ok()) << path;
}

Tensor ReadTensor(const BundleReader& r, const std::string& key) {
  Tensor t;
  Status s = r.Lookup(key, &t);
  EXPECT_TRUE(s.ok()) << key << ": " << s;
  return t;
}

std::vector<std::string> Keys(const BundleReader& r) {
  std::vector<std::string> keys;
  EXPECT_TRUE(r.ListKeys(&keys).ok());
  return keys;
}

// Writes every tensor of the TF bundle at `tf_prefix` again, in the TF
// file's data order, and checks both files are byte-identical to TF's.
void ExpectRewriteIsByteIdentical(const std::string& tf_prefix) {
  BundleReader tf(tf_prefix);
  ASSERT_TRUE(tf.status().ok()) << tf.status();
  std::vector<std::pair<int64_t, std::string>> by_offset;
  for (const std::string& key : Keys(tf)) {
    BundleEntryProto e;
    ASSERT_TRUE(tf.GetEntry(key, &e).ok());
    by_offset.push_back({e.offset(), key});
  }
  std::sort(by_offset.begin(), by_offset.end());
  const std::string prefix = MakeTempDir() + "/rewrite";
  {
    BundleWriter w(prefix);
    for (const auto& [offset, key] : by_offset) {
      ASSERT_TRUE(w.Add(key, ReadTensor(tf, key)).ok()) << key;
    }
    ASSERT_TRUE(w.Finish().ok());
  }
  EXPECT_EQ(ReadFile(DataFilename(prefix, 0, 1)),
            ReadFile(DataFilename(tf_prefix, 0, 1)))
      << tf_prefix;
  EXPECT_EQ(ReadFile(MetaFilename(prefix)), ReadFile(MetaFilename(tf_prefix)))
      << tf_prefix;
  // And the entries (dtype, shape, offset, size, crc) are the same protos.
  BundleReader ours(prefix);
  ASSERT_TRUE(ours.status().ok());
  for (const auto& [offset, key] : by_offset) {
    BundleEntryProto a, b;
    ASSERT_TRUE(tf.GetEntry(key, &a).ok());
    ASSERT_TRUE(ours.GetEntry(key, &b).ok());
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString()) << key;
  }
}

TEST(TensorBundleTest, FileNames) {
  EXPECT_EQ(MetaFilename("/a/model.ckpt-1"), "/a/model.ckpt-1.index");
  EXPECT_EQ(DataFilename("/a/model.ckpt-1", 1, 2),
            "/a/model.ckpt-1.data-00001-of-00002");
  EXPECT_EQ(DataFilename("p", 0, 1), "p.data-00000-of-00001");
}

// ---------------------------------------------------------------------------
// TensorFlow's own checkpoints (testdata/tf/README.md).

TEST(TensorBundleTest, ReadsTfHalfPlusTwo) {
  BundleReader r(kTf + "checkpoints/half_plus_two/variables");
  ASSERT_TRUE(r.status().ok()) << r.status();
  EXPECT_EQ(r.num_shards(), 1);
  EXPECT_EQ(r.header().version().producer(), 1);
  EXPECT_EQ(Keys(r), (std::vector<std::string>{"a", "b", "c"}));
  const float expected[] = {0.5f, 2.0f, 3.0f};
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    Tensor t = ReadTensor(r, names[i]);
    ASSERT_EQ(t.dtype(), DT_FLOAT);
    ASSERT_EQ(t.dims(), 0);
    EXPECT_EQ(t.scalar<float>(), expected[i]);
    BundleEntryProto e;
    ASSERT_TRUE(r.GetEntry(names[i], &e).ok());
    EXPECT_EQ(e.offset(), 4 * i);  // Data bytes in the order a, b, c.
    EXPECT_EQ(e.size(), 4);
  }
  DataType dt;
  TensorShape shape;
  ASSERT_TRUE(r.LookupDtypeAndShape("b", &dt, &shape).ok());
  EXPECT_EQ(dt, DT_FLOAT);
  EXPECT_EQ(shape, TensorShape({}));
  EXPECT_TRUE(r.Contains("c"));
  EXPECT_FALSE(r.Contains("d"));
  EXPECT_FALSE(r.Contains(""));  // The header is not a tensor.
}

TEST(TensorBundleTest, ReadsTfEmbedding) {
  BundleReader r(kTf + "checkpoints/embedding/embedding.ckpt");
  ASSERT_TRUE(r.status().ok()) << r.status();
  EXPECT_EQ(Keys(r), (std::vector<std::string>{"my_embedding"}));
  ExpectTensorEqual<float>(
      ReadTensor(r, "my_embedding"),
      Tensor::FromVector<float>({1, 2, 3, 5, 7, 11}, TensorShape({3, 2})));
}

TEST(TensorBundleTest, ReadsTfStringTensors) {
  BundleReader r(kTf + "checkpoints/string_tensors/foo");
  ASSERT_TRUE(r.status().ok()) << r.status();
  EXPECT_EQ(Keys(r), (std::vector<std::string>{"floats", "scalar",
                                               "string_tensor", "strs"}));
  Tensor floats = ReadTensor(r, "floats");
  ASSERT_EQ(floats.shape(), TensorShape({2, 3}));
  for (float f : floats.flat<float>()) EXPECT_FLOAT_EQ(f, 16.18f);
  // Every entry's checksum verified (Lookup succeeds): the string rule.
  Tensor scalar = ReadTensor(r, "scalar");
  EXPECT_EQ(scalar.dtype(), DT_STRING);
  EXPECT_EQ(scalar.shape(), TensorShape({1}));
  Tensor st = ReadTensor(r, "string_tensor");
  EXPECT_EQ(st.dtype(), DT_STRING);
  EXPECT_EQ(st.shape(), TensorShape({1}));
  Tensor strs = ReadTensor(r, "strs");
  EXPECT_EQ(strs.dtype(), DT_STRING);
  EXPECT_EQ(strs.shape(), TensorShape({4}));
  // The strings' bytes are the tail of each entry's data.
  BundleEntryProto e;
  ASSERT_TRUE(r.GetEntry("strs", &e).ok());
  size_t expected_size = 4;  // The lengths' checksum.
  for (const auto& s : strs.flat<tstring>()) {
    expected_size += s.size() + (s.size() < 128 ? 1 : 2);  // + varint.
  }
  EXPECT_EQ(scalar.flat<tstring>()[0], "hello");
  EXPECT_EQ(st.flat<tstring>()[0], "");
  EXPECT_EQ(strs.flat<tstring>()[0], "hello");
  EXPECT_EQ(strs.flat<tstring>()[1], "");
  EXPECT_EQ(strs.flat<tstring>()[2], "x01");
  EXPECT_EQ(strs.flat<tstring>()[3], std::string(1024, 'c'));
  EXPECT_EQ(static_cast<size_t>(e.size()), expected_size);
}

TEST(TensorBundleTest, ReadsTfConvCheckpoint) {
  BundleReader r(kTf + "graphs/tf_conv_with_checkpoint/ckpt");
  ASSERT_TRUE(r.status().ok()) << r.status();
  EXPECT_EQ(Keys(r), (std::vector<std::string>{"DW", "DW2", "ScalarW"}));
  Tensor dw = ReadTensor(r, "DW");
  EXPECT_EQ(dw.dtype(), DT_FLOAT);
  EXPECT_EQ(dw.shape(), TensorShape({3, 3, 3, 6}));
  EXPECT_EQ(ReadTensor(r, "DW2").shape(), TensorShape({2, 2, 6, 12}));
  Tensor w = ReadTensor(r, "ScalarW");
  ASSERT_EQ(w.shape(), TensorShape({}));
  EXPECT_FLOAT_EQ(w.scalar<float>(), 0.0020255179f);
}

// A checkpoint we write has exactly TF's bytes, .data and .index alike.
TEST(TensorBundleTest, RewritingTfCheckpointsIsByteIdentical) {
  ExpectRewriteIsByteIdentical(kTf + "checkpoints/half_plus_two/variables");
  ExpectRewriteIsByteIdentical(kTf + "checkpoints/embedding/embedding.ckpt");
  ExpectRewriteIsByteIdentical(kTf + "checkpoints/string_tensors/foo");
  ExpectRewriteIsByteIdentical(kTf + "graphs/tf_conv_with_checkpoint/ckpt");
}

// ---------------------------------------------------------------------------
// Round trips.

template <typename T>
Tensor Iota(const TensorShape& shape) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  int i = 0;
  for (auto& x : t.flat<T>()) {
    if constexpr (std::is_same_v<T, half>) {
      x = FloatToHalf(static_cast<float>(i) * 0.5f);
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      x = FloatToBFloat16(static_cast<float>(i) * 0.25f);
    } else if constexpr (std::is_same_v<T, bool>) {
      x = i % 3 == 0;
    } else if constexpr (std::is_same_v<T, complex64> ||
                         std::is_same_v<T, complex128>) {
      x = T(i, -i);
    } else {
      x = static_cast<T>(i * 3 - 1);
    }
    ++i;
  }
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DT_STRING) {
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      if (a.flat<tstring>()[i] != b.flat<tstring>()[i]) return false;
    }
    return true;
  }
  return a.tensor_data() == b.tensor_data();
}

TEST(TensorBundleTest, RoundTripsEveryDtypeBitIdentically) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32", Iota<float>(TensorShape({2, 3}))},
      {"f64", Iota<double>(TensorShape({4}))},
      {"i32", Iota<int32_t>(TensorShape({3, 1}))},
      {"i64", Iota<int64_t>(TensorShape({}))},
      {"u8", Iota<uint8_t>(TensorShape({5}))},
      {"i8", Iota<int8_t>(TensorShape({5}))},
      {"i16", Iota<int16_t>(TensorShape({2}))},
      {"u16", Iota<uint16_t>(TensorShape({2}))},
      {"u32", Iota<uint32_t>(TensorShape({2}))},
      {"u64", Iota<uint64_t>(TensorShape({2}))},
      {"bool", Iota<bool>(TensorShape({7}))},
      {"half", Iota<half>(TensorShape({3}))},
      {"bf16", Iota<bfloat16>(TensorShape({3}))},
      {"c64", Iota<complex64>(TensorShape({2}))},
      {"c128", Iota<complex128>(TensorShape({2}))},
      {"empty", Tensor(DT_FLOAT, TensorShape({0, 3}))},
      {"empty_str", Tensor(DT_STRING, TensorShape({0}))},
      {"nan", Tensor::FromVector<float>(
                  {std::numeric_limits<float>::quiet_NaN(), -0.0f,
                   std::numeric_limits<float>::infinity()})},
  };
  Tensor strs(DT_STRING, TensorShape({2, 2}));
  strs.flat<tstring>()[0] = "";
  strs.flat<tstring>()[1] = "hello";
  strs.flat<tstring>()[2] = std::string(300, 'x');  // Two-byte varint.
  strs.flat<tstring>()[3] = std::string("a\0b", 3);
  tensors.push_back({"strs", strs});
  tensors.push_back({"str_scalar", Tensor::Scalar<tstring>("s")});

  const std::string prefix = MakeTempDir() + "/sub/dir/model.ckpt-7";
  {
    BundleWriter w(prefix);
    ASSERT_TRUE(w.status().ok()) << w.status();
    for (const auto& [k, t] : tensors) ASSERT_TRUE(w.Add(k, t).ok()) << k;
    ASSERT_TRUE(w.Finish().ok());
  }
  // Only the two files: no temporaries left behind.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(prefix).parent_path()))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"model.ckpt-7.data-00000-of-00001",
                                             "model.ckpt-7.index"}));

  BundleReader r(prefix);
  ASSERT_TRUE(r.status().ok()) << r.status();
  std::vector<std::string> keys = Keys(r);
  EXPECT_EQ(keys.size(), tensors.size());
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  int64_t expected_offset = 0;
  for (const auto& [k, t] : tensors) {
    Tensor got = ReadTensor(r, k);
    EXPECT_TRUE(SameBytes(got, t)) << k << ": " << got.DebugString();
    BundleEntryProto e;
    ASSERT_TRUE(r.GetEntry(k, &e).ok());
    EXPECT_EQ(e.offset(), expected_offset) << k;  // In Add() order.
    expected_offset += e.size();
  }
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(DataFilename(prefix, 0, 1))),
            expected_offset);
}

// FORMATS.md's string layout, byte by byte.
TEST(TensorBundleTest, StringLayoutAndChecksum) {
  const std::string prefix = MakeTempDir() + "/s";
  Tensor t(DT_STRING, TensorShape({2}));
  t.flat<tstring>()[0] = "ab";
  t.flat<tstring>()[1] = "xyz";
  {
    BundleWriter w(prefix);
    ASSERT_TRUE(w.Add("t", t).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  const std::string data = ReadFile(DataFilename(prefix, 0, 1));
  ASSERT_EQ(data.size(), 2u + 4u + 5u);
  EXPECT_EQ(data[0], 2);
  EXPECT_EQ(data[1], 3);
  const uint32_t lens[2] = {2, 3};
  const uint32_t len_crc =
      crc32c::Value(reinterpret_cast<const char*>(lens), 8);
  uint32_t stored;
  std::memcpy(&stored, data.data() + 2, 4);
  EXPECT_EQ(stored, crc32c::Mask(len_crc));
  EXPECT_EQ(data.substr(6), "abxyz");
  uint32_t entry_crc = crc32c::Extend(len_crc, data.data() + 2, 4);
  entry_crc = crc32c::Extend(entry_crc, "abxyz", 5);
  BundleReader r(prefix);
  BundleEntryProto e;
  ASSERT_TRUE(r.GetEntry("t", &e).ok());
  EXPECT_EQ(e.crc32c(), crc32c::Mask(entry_crc));
  EXPECT_EQ(e.size(), 11);
}

TEST(TensorBundleTest, EmptyBundle) {
  const std::string prefix = MakeTempDir() + "/empty";
  {
    BundleWriter w(prefix);
    ASSERT_TRUE(w.Finish().ok());
  }
  BundleReader r(prefix);
  ASSERT_TRUE(r.status().ok());
  EXPECT_TRUE(Keys(r).empty());
}

TEST(TensorBundleTest, WriterErrors) {
  const std::string dir = MakeTempDir();
  BundleWriter w(dir + "/p");
  EXPECT_EQ(w.Add("", Tensor::Scalar<float>(1)).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(w.Add("x", Tensor::Scalar<float>(1)).ok());
  Status dup = w.Add("x", Tensor::Scalar<float>(2));
  EXPECT_EQ(dup.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dup.message().find("'x' added twice"), std::string::npos) << dup;
  Tensor res(DT_RESOURCE, TensorShape({}));
  EXPECT_EQ(w.Add("r", res).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(w.Finish().ok());
  EXPECT_EQ(w.Add("y", Tensor::Scalar<float>(1)).code(),
            absl::StatusCode::kFailedPrecondition);

  BundleWriter empty_prefix("");
  EXPECT_EQ(empty_prefix.status().code(), absl::StatusCode::kInvalidArgument);
}

// A writer destroyed before Finish leaves nothing under the prefix.
TEST(TensorBundleTest, AbandonedWriterLeavesNoFiles) {
  const std::string dir = MakeTempDir();
  {
    BundleWriter w(dir + "/p");
    ASSERT_TRUE(w.Add("x", Tensor::Scalar<float>(1)).ok());
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

// ---------------------------------------------------------------------------
// Damaged checkpoints: clear errors, never a crash.

std::string CopyBundle(const std::string& from_prefix, const std::string& dir) {
  const std::string to = dir + "/copy";
  fs::copy_file(MetaFilename(from_prefix), MetaFilename(to));
  fs::copy_file(DataFilename(from_prefix, 0, 1), DataFilename(to, 0, 1));
  fs::permissions(MetaFilename(to), fs::perms::owner_write,
                  fs::perm_options::add);
  fs::permissions(DataFilename(to, 0, 1), fs::perms::owner_write,
                  fs::perm_options::add);
  return to;
}

TEST(TensorBundleTest, FlippedDataByteIsDataLossNamingTheTensor) {
  const std::string p =
      CopyBundle(kTf + "graphs/tf_conv_with_checkpoint/ckpt", MakeTempDir());
  std::string data = ReadFile(DataFilename(p, 0, 1));
  data[700] ^= 0x10;  // Inside DW2 (bytes 648..1799).
  WriteFile(DataFilename(p, 0, 1), data);
  BundleReader r(p);
  ASSERT_TRUE(r.status().ok());
  Tensor t;
  Status s = r.Lookup("DW2", &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("'DW2'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s;
  // The other tensors still read.
  EXPECT_TRUE(r.Lookup("DW", &t).ok());
  EXPECT_TRUE(r.Lookup("ScalarW", &t).ok());
}

TEST(TensorBundleTest, FlippedStringByteIsDataLoss) {
  const std::string p =
      CopyBundle(kTf + "checkpoints/string_tensors/foo", MakeTempDir());
  BundleReader before(p);
  BundleEntryProto e;
  ASSERT_TRUE(before.GetEntry("strs", &e).ok());
  std::string data = ReadFile(DataFilename(p, 0, 1));
  // Flip a string byte, then (in a second copy) a length byte.
  std::string bad = data;
  bad[e.offset() + e.size() - 1] ^= 1;
  WriteFile(DataFilename(p, 0, 1), bad);
  {
    BundleReader r(p);
    Tensor t;
    Status s = r.Lookup("strs", &t);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find("'strs'"), std::string::npos) << s;
  }
  bad = data;
  bad[e.offset()] ^= 0x7f;
  WriteFile(DataFilename(p, 0, 1), bad);
  {
    BundleReader r(p);
    Tensor t;
    Status s = r.Lookup("strs", &t);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find("'strs'"), std::string::npos) << s;
  }
}

TEST(TensorBundleTest, TruncatedDataIsDataLoss) {
  const std::string p =
      CopyBundle(kTf + "graphs/tf_conv_with_checkpoint/ckpt", MakeTempDir());
  fs::resize_file(DataFilename(p, 0, 1), 1000);
  BundleReader r(p);
  ASSERT_TRUE(r.status().ok());
  Tensor t;
  EXPECT_TRUE(r.Lookup("DW", &t).ok());  // Bytes 0..647 are intact.
  Status s = r.Lookup("DW2", &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("'DW2'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;
}

TEST(TensorBundleTest, MissingShardIsNotFound) {
  const std::string p =
      CopyBundle(kTf + "checkpoints/half_plus_two/variables", MakeTempDir());
  fs::remove(DataFilename(p, 0, 1));
  BundleReader r(p);
  ASSERT_TRUE(r.status().ok());
  Tensor t;
  Status s = r.Lookup("a", &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("data-00000-of-00001"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'a'"), std::string::npos) << s;
}

TEST(TensorBundleTest, MissingIndexIsNotFound) {
  BundleReader r(MakeTempDir() + "/nothing");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  Tensor t;
  EXPECT_EQ(r.Lookup("a", &t).code(), absl::StatusCode::kNotFound);
  std::vector<std::string> keys;
  EXPECT_FALSE(r.ListKeys(&keys).ok());
}

TEST(TensorBundleTest, UnknownKeyIsNotFound) {
  BundleReader r(kTf + "checkpoints/half_plus_two/variables");
  Tensor t;
  Status s = r.Lookup("zz", &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("'zz'"), std::string::npos) << s;
}

TEST(TensorBundleTest, GarbageIndexIsDataLoss) {
  const std::string dir = MakeTempDir();
  const std::string p = dir + "/g";
  for (const std::string& contents :
       {std::string(), std::string("garbage"), std::string(200, '\x5a')}) {
    WriteFile(MetaFilename(p), contents);
    BundleReader r(p);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
    EXPECT_NE(r.status().message().find("g.index"), std::string::npos);
  }
  // A valid table without a header entry.
  {
    BundleReader tf(kTf + "checkpoints/half_plus_two/variables");
    std::string idx =
        ReadFile(MetaFilename(kTf + "checkpoints/half_plus_two/variables"));
    // Corrupt the first data block (CRC-checked).
    idx[8] ^= 0x01;
    WriteFile(MetaFilename(p), idx);
    BundleReader r(p);
    EXPECT_FALSE(r.status().ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  }
}

// Every single-byte corruption of an index gives a status, never a crash;
// data-block corruption is caught by its CRC.
TEST(TensorBundleTest, EveryIndexByteFlipIsHandled) {
  const std::string src = kTf + "graphs/tf_conv_with_checkpoint/ckpt";
  const std::string p = CopyBundle(src, MakeTempDir());
  const std::string idx = ReadFile(MetaFilename(src));
  int failures = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    std::string bad = idx;
    bad[i] ^= 0xff;
    WriteFile(MetaFilename(p), bad);
    BundleReader r(p);
    if (!r.status().ok()) {
      ++failures;
      continue;
    }
    std::vector<std::string> keys;
    if (!r.ListKeys(&keys).ok()) {
      ++failures;
      continue;
    }
    for (const std::string& k : keys) {
      Tensor t;
      Status s = r.Lookup(k, &t);
      if (!s.ok()) ++failures;
    }
  }
  EXPECT_GT(failures, static_cast<int>(idx.size()) / 2);
}

// An entry whose size disagrees with its shape (a crafted index).
// Writes the bundle `p` holding one tensor, x = [1, 2].
void WriteOneFloatBundle(const std::string& p) {
  BundleWriter w(p);
  ASSERT_TRUE(w.Add("x", Tensor::FromVector<float>({1, 2})).ok());
  ASSERT_TRUE(w.Finish().ok());
}

// Writes `prefix`.index with LevelDB directly: a header and entries that
// BundleWriter would never produce.
void WriteCraftedIndex(const std::string& prefix, const BundleHeaderProto& h,
                       const std::map<std::string, BundleEntryProto>& entries) {
  leveldb::Options o;
  o.block_size = 262144;
  o.block_restart_interval = 16;
  o.compression = leveldb::kNoCompression;
  leveldb::WritableFile* f;
  ASSERT_TRUE(
      leveldb::Env::Default()->NewWritableFile(MetaFilename(prefix), &f).ok());
  leveldb::TableBuilder b(o, f);
  b.Add("", h.SerializeAsString());
  for (const auto& [k, v] : entries) b.Add(k, v.SerializeAsString());
  ASSERT_TRUE(b.Finish().ok());
  ASSERT_TRUE(f->Close().ok());
  delete f;
}

TEST(TensorBundleTest, EntrySizeMismatchIsDataLoss) {
  const std::string p = MakeTempDir() + "/crafted";
  WriteOneFloatBundle(p);
  // Rebuild the index with a wrong shape for x.
  BundleReader r0(p);
  BundleEntryProto e;
  ASSERT_TRUE(r0.GetEntry("x", &e).ok());
  std::map<std::string, BundleEntryProto> entries;
  e.mutable_shape()->mutable_dim(0)->set_size(1000000000000);
  entries["x"] = e;
  BundleEntryProto s = e;
  s.set_dtype(DT_STRING);
  s.mutable_shape()->mutable_dim(0)->set_size(1000000);
  entries["y"] = s;
  BundleEntryProto neg = e;
  neg.mutable_shape()->mutable_dim(0)->set_size(-5);
  entries["z"] = neg;
  BundleEntryProto badshard = e;
  badshard.mutable_shape()->mutable_dim(0)->set_size(2);
  badshard.set_shard_id(3);
  entries["w"] = badshard;
  BundleEntryProto variant = e;
  variant.set_dtype(DT_VARIANT);
  entries["v"] = variant;
  BundleHeaderProto h;
  h.set_num_shards(1);
  WriteCraftedIndex(p, h, entries);
  BundleReader r(p);
  ASSERT_TRUE(r.status().ok()) << r.status();
  Tensor t;
  for (const char* k : {"x", "y", "z", "w"}) {
    Status st = r.Lookup(k, &t);
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << k << ": " << st;
    EXPECT_NE(st.message().find(absl::StrCat("'", k, "'")), std::string::npos)
        << st;
  }
  EXPECT_EQ(r.Lookup("v", &t).code(), absl::StatusCode::kUnimplemented);
}

// Indexes with Snappy-compressed blocks (older TF wrote them) read too.
TEST(TensorBundleTest, ReadsSnappyCompressedIndex) {
  const std::string p = MakeTempDir() + "/snappy";
  {
    BundleWriter w(p);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(w.Add(absl::StrCat("layer_", 100 + i, "/kernel/Adam"),
                        Tensor::FromVector<float>({1.f * i, 2.f}))
                      .ok());
    }
    ASSERT_TRUE(w.Finish().ok());
  }
  BundleReader plain(p);
  std::vector<std::string> keys = Keys(plain);
  ASSERT_EQ(keys.size(), 50u);
  leveldb::Options o;
  o.block_size = 262144;
  o.compression = leveldb::kSnappyCompression;
  leveldb::WritableFile* f;
  const std::string sp = MakeTempDir() + "/snappy2";
  ASSERT_TRUE(
      leveldb::Env::Default()->NewWritableFile(MetaFilename(sp), &f).ok());
  {
    leveldb::TableBuilder b(o, f);
    b.Add("", plain.header().SerializeAsString());
    for (const std::string& k : keys) {
      BundleEntryProto e;
      ASSERT_TRUE(plain.GetEntry(k, &e).ok());
      b.Add(k, e.SerializeAsString());
    }
    ASSERT_TRUE(b.Finish().ok());
  }
  ASSERT_TRUE(f->Close().ok());
  delete f;
  const std::string idx = ReadFile(MetaFilename(sp));
  EXPECT_LT(idx.size(), ReadFile(MetaFilename(p)).size());  // Compressed.
  fs::copy_file(DataFilename(p, 0, 1), DataFilename(sp, 0, 1));
  BundleReader r(sp);
  ASSERT_TRUE(r.status().ok()) << r.status();
  EXPECT_EQ(Keys(r), keys);
  ExpectTensorEqual<float>(ReadTensor(r, "layer_107/kernel/Adam"),
                           Tensor::FromVector<float>({7.f, 2.f}));
}

// ---------------------------------------------------------------------------
// Merging (a sharded save's last step).

TEST(TensorBundleTest, MergeBundles) {
  const std::string dir = MakeTempDir();
  const std::string a = dir + "/tmp_a/part-00000-of-00002";
  const std::string b = dir + "/tmp_a/part-00001-of-00002";
  {
    BundleWriter w(a);
    ASSERT_TRUE(w.Add("v1", Tensor::FromVector<float>({1, 2})).ok());
    ASSERT_TRUE(w.Add("z", Tensor::Scalar<int64_t>(5)).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  {
    BundleWriter w(b);
    ASSERT_TRUE(w.Add("v0", Tensor::Scalar<tstring>("str")).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  const std::string merged = dir + "/out/model.ckpt-3";
  ASSERT_TRUE(MergeBundles({a, b}, merged).ok());
  EXPECT_FALSE(fs::exists(MetaFilename(a)));
  EXPECT_FALSE(fs::exists(MetaFilename(b)));
  EXPECT_FALSE(fs::exists(DataFilename(a, 0, 1)));
  EXPECT_TRUE(fs::exists(DataFilename(merged, 0, 2)));
  EXPECT_TRUE(fs::exists(DataFilename(merged, 1, 2)));
  BundleReader r(merged);
  ASSERT_TRUE(r.status().ok()) << r.status();
  EXPECT_EQ(r.num_shards(), 2);
  EXPECT_EQ(Keys(r), (std::vector<std::string>{"v0", "v1", "z"}));
  ExpectTensorEqual<float>(ReadTensor(r, "v1"),
                           Tensor::FromVector<float>({1, 2}));
  ExpectTensorEqual<int64_t>(ReadTensor(r, "z"), Tensor::Scalar<int64_t>(5));
  EXPECT_EQ(ReadTensor(r, "v0").scalar<tstring>(), "str");
  BundleEntryProto e;
  ASSERT_TRUE(r.GetEntry("v0", &e).ok());
  EXPECT_EQ(e.shard_id(), 1);

  // Duplicates are rejected.
  const std::string c = dir + "/c", d = dir + "/d";
  for (const std::string& p : {c, d}) {
    BundleWriter w(p);
    ASSERT_TRUE(w.Add("same", Tensor::Scalar<float>(1)).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  Status s = MergeBundles({c, d}, dir + "/cd");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'same'"), std::string::npos) << s;
  EXPECT_EQ(MergeBundles({}, dir + "/x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MergeBundles({dir + "/missing"}, dir + "/x").code(),
            absl::StatusCode::kNotFound);
}

// A single bundle merged onto its own prefix stays intact.
TEST(TensorBundleTest, MergeOntoSamePrefix) {
  const std::string p = MakeTempDir() + "/same";
  {
    BundleWriter w(p);
    ASSERT_TRUE(w.Add("x", Tensor::Scalar<double>(2.5)).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  ASSERT_TRUE(MergeBundles({p}, p).ok());
  BundleReader r(p);
  ASSERT_TRUE(r.status().ok());
  ExpectTensorEqual<double>(ReadTensor(r, "x"), Tensor::Scalar<double>(2.5));
}

// Untrusted bundles (issue 15): each of these once crashed the process.
TEST(TensorBundleTest, HugeShardCountIsRefusedBeforeAnythingIsSized) {
  const std::string p = MakeTempDir() + "/shards";
  WriteOneFloatBundle(p);
  BundleReader r0(p);
  BundleEntryProto e;
  ASSERT_TRUE(r0.GetEntry("x", &e).ok());
  BundleHeaderProto h = r0.header();
  h.set_num_shards(2147483647);
  WriteCraftedIndex(p, h, {{"x", e}});
  BundleReader r(p);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  // Merging it fails the same way, and renames nothing.
  const std::string merged = MakeTempDir() + "/merged";
  EXPECT_FALSE(MergeBundles({p}, merged).ok());
  EXPECT_TRUE(FileExists(DataFilename(p, 0, 1)));
}

TEST(TensorBundleTest, MergeChecksEveryShardBeforeMovingAny) {
  const std::string dir = MakeTempDir();
  const std::string a = dir + "/a", b = dir + "/b";
  for (const std::string& p : {a, b}) {
    BundleWriter w(p);
    ASSERT_TRUE(w.Add(p == a ? "x" : "y", Tensor::FromVector<float>({1})).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  fs::remove(DataFilename(b, 0, 1));
  Status s = MergeBundles({a, b}, dir + "/m");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(FileExists(DataFilename(a, 0, 1)));  // Not moved.
}

TEST(TensorBundleTest, InvalidEntryDtypeIsRefused) {
  const std::string p = MakeTempDir() + "/dtype";
  WriteOneFloatBundle(p);
  BundleReader r0(p);
  BundleEntryProto e;
  ASSERT_TRUE(r0.GetEntry("x", &e).ok());
  e.set_dtype(static_cast<DataType>(2147483647));
  WriteCraftedIndex(p, r0.header(), {{"x", e}});
  BundleReader r(p);
  ASSERT_TRUE(r.status().ok());
  Tensor t;
  Status s = r.Lookup("x", &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2147483647"), std::string::npos) << s;
  DataType dt;
  TensorShape shape;
  EXPECT_EQ(r.LookupDtypeAndShape("x", &dt, &shape).code(),
            absl::StatusCode::kDataLoss);
}

TEST(TensorBundleTest, BoolBytesAreNormalisedOnRestore) {
  const std::string p = MakeTempDir() + "/bools";
  {
    BundleWriter w(p);
    ASSERT_TRUE(w.Add("b", Tensor::FromVector<uint8_t>({0, 1, 2, 255})).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  // Relabel the uint8 entry as bool: same bytes, same checksum.
  BundleReader r0(p);
  BundleEntryProto e;
  ASSERT_TRUE(r0.GetEntry("b", &e).ok());
  e.set_dtype(DT_BOOL);
  WriteCraftedIndex(p, r0.header(), {{"b", e}});
  BundleReader r(p);
  Tensor t = ReadTensor(r, "b");
  ASSERT_EQ(t.dtype(), DT_BOOL);
  const auto* raw = static_cast<const uint8_t*>(t.raw_data());
  EXPECT_EQ(std::vector<int>(raw, raw + 4), (std::vector<int>{0, 1, 1, 1}));
}

TEST(TensorBundleTest, NulInPrefixIsRefused) {
  const std::string dir = MakeTempDir();
  const std::string victim = dir + "/victim";
  WriteFile(victim + ".data-00000-of-00001", "keep me");
  // "victim\0/x" would reach open() as "victim...": refused instead.
  const std::string bad = victim + std::string("\0", 1) + "/x";
  {
    BundleWriter w(bad);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(w.Finish().ok());
  }
  EXPECT_EQ(ReadFile(victim + ".data-00000-of-00001"), "keep me");
  BundleReader r(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MergeBundles({bad}, dir + "/m").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MergeBundles({victim}, bad).code(),
            absl::StatusCode::kInvalidArgument);
}

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

TEST(TensorBundleTest, IndexBlockHandlesOutsideTheFileAreDataLoss) {
  // LevelDB allocates a block's size before reading it: a footer claiming a
  // 1 TiB index block once made it try (bad_alloc -> abort).
  const std::string p = MakeTempDir() + "/handles";
  WriteOneFloatBundle(p);
  const std::string index = ReadFile(MetaFilename(p));
  ASSERT_GT(index.size(), 48u);
  const std::string magic = index.substr(index.size() - 8);
  for (uint64_t size :
       {uint64_t{1} << 40, uint64_t{index.size()}, ~uint64_t{0} >> 1}) {
    std::string footer = Varint(0) + Varint(0) + Varint(0) + Varint(size);
    footer.resize(40, '\0');
    footer += magic;
    WriteFile(MetaFilename(p), index.substr(0, index.size() - 48) + footer);
    BundleReader r(p);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss)
        << size << ": " << r.status();
  }
  // A bad magic number is DataLoss too; the intact file still reads.
  WriteFile(MetaFilename(p), index.substr(0, index.size() - 1) + "x");
  EXPECT_EQ(BundleReader(p).status().code(), absl::StatusCode::kDataLoss);
  WriteFile(MetaFilename(p), index);
  BundleReader ok(p);
  ASSERT_TRUE(ok.status().ok()) << ok.status();
  EXPECT_EQ(ReadTensor(ok, "x").NumElements(), 2);
}

}  // namespace
}  // namespace runnel
