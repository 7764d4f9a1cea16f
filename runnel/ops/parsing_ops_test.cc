// DecodeRaw, ParseExample, ParseExampleV2 and ParseSingleExample against
// TensorFlow's documented semantics, including the tf.Examples TensorFlow wrote
// into testdata/tf/records/imagenet_examples.tfrecord.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "proto/example.pb.h"
#include "runnel/io/record_reader.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

Tensor Strings(const std::vector<std::string>& v,
               std::initializer_list<int64_t> shape) {
  return Tensor::FromVector<tstring>(v, TensorShape(shape));
}
Tensor Strings(const std::vector<std::string>& v) {
  return Tensor::FromVector<tstring>(v);
}

// ---------------------------------------------------------------------------
// DecodeRaw

template <typename T>
std::string BytesOf(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

StatusOr<Tensor> DecodeRaw(const Tensor& bytes, DataType out_type,
                           bool little_endian = true) {
  OpTestCase t("DecodeRaw");
  t.Attr("out_type", out_type)
      .Attr("little_endian", little_endian)
      .Input(bytes);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
class DecodeRawTest : public ::testing::Test {};
using DecodeRawTypes =
    ::testing::Types<float, double, int32_t, int64_t, uint8_t, uint16_t,
                     int16_t, int8_t, complex64, complex128>;
TYPED_TEST_SUITE(DecodeRawTest, DecodeRawTypes);

TYPED_TEST(DecodeRawTest, LittleEndianRoundTrip) {
  using T = TypeParam;
  const DataType dt = DataTypeToEnum<T>::value;
  const std::vector<T> a = {T(1), T(2), T(100)};
  const std::vector<T> b = {T(7), T(0), T(42)};
  auto out = DecodeRaw(Strings({BytesOf(a), BytesOf(b)}), dt);
  ASSERT_OK(out.status());
  std::vector<T> all = a;
  all.insert(all.end(), b.begin(), b.end());
  ExpectTensorEqual<T>(*out, Tensor::FromVector<T>(all, TensorShape({2, 3})));
}

TYPED_TEST(DecodeRawTest, EmptyInputs) {
  using T = TypeParam;
  const DataType dt = DataTypeToEnum<T>::value;
  // No strings: one more dimension of size 0.
  auto out = DecodeRaw(Strings({}, {0}), dt);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->shape(), TensorShape({0, 0}));
  // Empty strings.
  out = DecodeRaw(Strings({"", ""}, {2}), dt);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->shape(), TensorShape({2, 0}));
}

TEST(DecodeRawTest, ScalarAndMatrixInputs) {
  const std::vector<float> v = {1.5f, -2.25f};
  auto out = DecodeRaw(Tensor::Scalar<tstring>(BytesOf(v)), DT_FLOAT);
  ASSERT_OK(out.status());
  ExpectTensorEqual<float>(*out, Tensor::FromVector<float>(v));
  const std::string s = BytesOf(std::vector<int16_t>{1, -1});
  out = DecodeRaw(Strings({s, s, s, s, s, s}, {2, 3}), DT_INT16);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->shape(), TensorShape({2, 3, 2}));
  EXPECT_EQ(out->flat<int16_t>()[11], -1);
}

TEST(DecodeRawTest, BigEndian) {
  auto out = DecodeRaw(Strings({std::string("\x01\x02\x03\x04", 4)}), DT_INT32,
                       /*little_endian=*/false);
  ASSERT_OK(out.status());
  ExpectTensorEqual<int32_t>(
      *out, Tensor::FromVector<int32_t>({0x01020304}, TensorShape({1, 1})));
  out = DecodeRaw(Strings({std::string("\x01\x02", 2)}), DT_UINT16, false);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->flat<uint16_t>()[0], 0x0102);
  // Single bytes are not reordered.
  out = DecodeRaw(Strings({std::string("\x01\x02", 2)}), DT_UINT8, false);
  ASSERT_OK(out.status());
  ExpectTensorEqual<uint8_t>(
      *out, Tensor::FromVector<uint8_t>({1, 2}, TensorShape({1, 2})));
  // A big-endian double.
  const double x = 3.25;
  std::string be = BytesOf(std::vector<double>{x});
  std::reverse(be.begin(), be.end());
  out = DecodeRaw(Strings({be}), DT_DOUBLE, false);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->flat<double>()[0], x);
  // Complex: real and imaginary parts are swapped separately.
  std::string re = BytesOf(std::vector<float>{1.5f});
  std::string im = BytesOf(std::vector<float>{-4.0f});
  std::reverse(re.begin(), re.end());
  std::reverse(im.begin(), im.end());
  out = DecodeRaw(Strings({re + im}), DT_COMPLEX64, false);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->flat<complex64>()[0], complex64(1.5f, -4.0f));
}

TEST(DecodeRawTest, BoolHalfAndBfloat16) {
  auto out = DecodeRaw(Strings({std::string("\x00\x01\x07", 3)}), DT_BOOL);
  ASSERT_OK(out.status());
  ExpectTensorEqual<bool>(
      *out, Tensor::FromVector<bool>({false, true, true}, TensorShape({1, 3})));
  // 0x3c00 is half 1.0; 0x3f80 is bfloat16 1.0.
  out = DecodeRaw(Strings({std::string("\x00\x3c", 2)}), DT_HALF);
  ASSERT_OK(out.status());
  EXPECT_EQ(HalfToFloat(out->flat<half>()[0]), 1.0f);
  out = DecodeRaw(Strings({std::string("\x3f\x80", 2)}), DT_BFLOAT16, false);
  ASSERT_OK(out.status());
  EXPECT_EQ(BFloat16ToFloat(out->flat<bfloat16>()[0]), 1.0f);
}

TEST(DecodeRawTest, BadInputs) {
  ExpectInvalid(DecodeRaw(Strings({"abcd", "abcdefgh"}), DT_INT32).status(),
                "same size");
  ExpectInvalid(DecodeRaw(Strings({"abcde"}), DT_INT32).status(),
                "not a multiple of 4");
  ExpectInvalid(DecodeRaw(Strings({"abc"}), DT_COMPLEX128).status(),
                "not a multiple of 16");
}

TEST(DecodeRawTest, ShapeFunction) {
  AttrMap attrs;
  attrs["out_type"] = MakeAttrValue(DT_FLOAT);
  attrs["little_endian"] = MakeAttrValue(true);
  auto s = InferShapes("DecodeRaw", attrs, {PartialTensorShape({2, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, -1, -1}));
  s = InferShapes("DecodeRaw", attrs, {PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
}

// ---------------------------------------------------------------------------
// Example builders

Feature Floats(std::vector<float> v) {
  Feature f;
  for (float x : v) f.mutable_float_list()->add_value(x);
  if (v.empty()) f.mutable_float_list();
  return f;
}
Feature Int64s(std::vector<int64_t> v) {
  Feature f;
  for (int64_t x : v) f.mutable_int64_list()->add_value(x);
  if (v.empty()) f.mutable_int64_list();
  return f;
}
Feature Bytes(std::vector<std::string> v) {
  Feature f;
  for (const auto& x : v) f.mutable_bytes_list()->add_value(x);
  if (v.empty()) f.mutable_bytes_list();
  return f;
}

std::string MakeExample(
    std::initializer_list<std::pair<std::string, Feature>> features) {
  Example ex;
  auto* map = ex.mutable_features()->mutable_feature();
  for (const auto& [k, f] : features) (*map)[k] = f;
  return ex.SerializeAsString();
}

struct DenseSpec {
  std::string key;
  DataType dtype;
  PartialTensorShape shape;
  Tensor default_value;
};
struct ParseSpec {
  std::vector<std::pair<std::string, DataType>> sparse;
  std::vector<DenseSpec> dense;
};

Tensor EmptyDefault(DataType dt) { return Tensor(dt, TensorShape({0})); }

// Outputs of ParseExample, split by kind.
struct Parsed {
  std::vector<Tensor> indices, values, shapes, dense;
};

Parsed Split(const OpTestCase& t, size_t ns, size_t nd) {
  Parsed p;
  for (size_t j = 0; j < ns; ++j) {
    p.indices.push_back(t.output(j));
    p.values.push_back(t.output(ns + j));
    p.shapes.push_back(t.output(2 * ns + j));
  }
  for (size_t d = 0; d < nd; ++d) p.dense.push_back(t.output(3 * ns + d));
  return p;
}

void AddTypeAttrs(const ParseSpec& spec, OpTestCase* t) {
  std::vector<DataType> sparse_types, dense_types;
  std::vector<PartialTensorShape> dense_shapes;
  for (const auto& [k, dt] : spec.sparse) sparse_types.push_back(dt);
  for (const auto& d : spec.dense) {
    dense_types.push_back(d.dtype);
    dense_shapes.push_back(d.shape);
  }
  t->Attr("sparse_types", MakeAttrValue(absl::MakeConstSpan(sparse_types)))
      .Attr("Tdense", MakeAttrValue(absl::MakeConstSpan(dense_types)))
      .Attr("dense_shapes", MakeAttrValue(absl::MakeConstSpan(dense_shapes)));
}

StatusOr<Parsed> ParseExample(const std::vector<std::string>& serialized,
                              const std::vector<std::string>& names,
                              const ParseSpec& spec) {
  OpTestCase t("ParseExample");
  t.Attr("Nsparse", static_cast<int64_t>(spec.sparse.size()))
      .Attr("Ndense", static_cast<int64_t>(spec.dense.size()));
  AddTypeAttrs(spec, &t);
  t.Input(Strings(serialized)).Input(Strings(names));
  for (const auto& [k, dt] : spec.sparse) t.Input(Tensor::Scalar<tstring>(k));
  for (const auto& d : spec.dense) t.Input(Tensor::Scalar<tstring>(d.key));
  for (const auto& d : spec.dense) t.Input(d.default_value);
  RETURN_IF_ERROR(t.Run());
  return Split(t, spec.sparse.size(), spec.dense.size());
}

StatusOr<Parsed> ParseSingleExample(const std::string& serialized,
                                    const ParseSpec& spec) {
  OpTestCase t("ParseSingleExample");
  std::vector<std::string> sparse_keys, dense_keys;
  for (const auto& [k, dt] : spec.sparse) sparse_keys.push_back(k);
  for (const auto& d : spec.dense) dense_keys.push_back(d.key);
  t.Attr("num_sparse", static_cast<int64_t>(spec.sparse.size()))
      .Attr("sparse_keys", MakeAttrValue(absl::MakeConstSpan(sparse_keys)))
      .Attr("dense_keys", MakeAttrValue(absl::MakeConstSpan(dense_keys)));
  AddTypeAttrs(spec, &t);
  t.Input(Tensor::Scalar<tstring>(serialized));
  for (const auto& d : spec.dense) t.Input(d.default_value);
  RETURN_IF_ERROR(t.Run());
  return Split(t, spec.sparse.size(), spec.dense.size());
}

// ---------------------------------------------------------------------------
// ParseExample on TensorFlow's own records

std::vector<std::string> ImagenetRecords() {
  std::vector<std::string> out;
  auto r = RecordReader::Open(std::string(RUNNEL_TESTDATA_DIR) +
                              "/tf/records/imagenet_examples.tfrecord");
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  std::string rec;
  while ((*r)->ReadRecord(&rec).ok()) out.push_back(rec);
  EXPECT_EQ(out.size(), 3u);
  return out;
}

TEST(ParseExampleTest, TensorFlowImagenetRecords) {
  const std::vector<std::string> recs = ImagenetRecords();
  ASSERT_EQ(recs.size(), 3u);
  ParseSpec spec;
  spec.sparse = {{"image/object/bbox/xmin", DT_FLOAT},
                 {"image/object/bbox/label", DT_INT64}};
  spec.dense = {
      {"image/class/label", DT_INT64, PartialTensorShape({}),
       EmptyDefault(DT_INT64)},
      {"image/class/synset", DT_STRING, PartialTensorShape({}),
       EmptyDefault(DT_STRING)},
      {"image/height", DT_INT64, PartialTensorShape({1}),
       EmptyDefault(DT_INT64)},
      {"image/encoded", DT_STRING, PartialTensorShape({}),
       EmptyDefault(DT_STRING)},
      // Not in the examples: its default fills in.
      {"image/missing", DT_FLOAT, PartialTensorShape({2}),
       Tensor::FromVector<float>({1.5f, -1.0f})},
      // Variable-length: padded with the default to the longest (2).
      {"image/object/bbox/xmax", DT_FLOAT, PartialTensorShape({-1}),
       Tensor::Scalar<float>(-1.0f)},
  };
  auto p = ParseExample(recs, {"a", "b", "c"}, spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<int64_t>(p->dense[0],
                             Tensor::FromVector<int64_t>({287, 963, 396}));
  ExpectTensorEqual<tstring>(
      p->dense[1],
      Tensor::FromVector<tstring>({"n02125311", "n07871810", "n02641379"}));
  ExpectTensorEqual<int64_t>(
      p->dense[2],
      Tensor::FromVector<int64_t>({356, 375, 375}, TensorShape({3, 1})));
  ASSERT_EQ(p->dense[3].shape(), TensorShape({3}));
  for (const tstring& jpeg : p->dense[3].flat<tstring>()) {
    ASSERT_GT(jpeg.size(), 1000u);
    EXPECT_EQ(jpeg.substr(0, 2), "\xff\xd8");  // JPEG start-of-image.
  }
  ExpectTensorEqual<float>(
      p->dense[4], Tensor::FromVector<float>({1.5f, -1, 1.5f, -1, 1.5f, -1},
                                             TensorShape({3, 2})));
  ExpectTensorEqual<float>(
      p->dense[5], Tensor::FromVector<float>({0.5487f, 0.947f, -1, -1, -1, -1},
                                             TensorShape({3, 2})));
  // Sparse: only the first example has boxes.
  ExpectTensorEqual<int64_t>(
      p->indices[0],
      Tensor::FromVector<int64_t>({0, 0, 0, 1}, TensorShape({2, 2})));
  ExpectTensorEqual<float>(p->values[0],
                           Tensor::FromVector<float>({0.2055f, 0.5127f}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({3, 2}));
  ExpectTensorEqual<int64_t>(p->values[1],
                             Tensor::FromVector<int64_t>({287, 287}));

  // A wrong type for a feature TF wrote as int64.
  ParseSpec wrong;
  wrong.dense = {{"image/class/label", DT_FLOAT, PartialTensorShape({}),
                  EmptyDefault(DT_FLOAT)}};
  auto bad = ParseExample(recs, {}, wrong);
  ExpectInvalid(bad.status(), "Data types don't match");
  ExpectInvalid(bad.status(), "image/class/label");
}

TEST(ParseExampleTest, ParseSingleExampleOnTensorFlowRecord) {
  const std::vector<std::string> recs = ImagenetRecords();
  ASSERT_EQ(recs.size(), 3u);
  ParseSpec spec;
  spec.sparse = {{"image/object/bbox/ymax", DT_FLOAT}};
  spec.dense = {{"image/class/label", DT_INT64, PartialTensorShape({}),
                 EmptyDefault(DT_INT64)},
                {"image/class/text", DT_STRING, PartialTensorShape({1}),
                 EmptyDefault(DT_STRING)},
                {"image/object/bbox/label", DT_INT64, PartialTensorShape({-1}),
                 Tensor::Scalar<int64_t>(0)}};
  auto p = ParseSingleExample(recs[0], spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<int64_t>(p->dense[0], Tensor::Scalar<int64_t>(287));
  ExpectTensorEqual<tstring>(
      p->dense[1],
      Tensor::FromVector<tstring>({"cougar, puma, catamount, mountain lion, "
                                   "painter, panther, Felis concolor"}));
  ExpectTensorEqual<int64_t>(p->dense[2],
                             Tensor::FromVector<int64_t>({287, 287}));
  ExpectTensorEqual<int64_t>(
      p->indices[0], Tensor::FromVector<int64_t>({0, 1}, TensorShape({2, 1})));
  ExpectTensorEqual<float>(p->values[0],
                           Tensor::FromVector<float>({0.5646f, 0.9972f}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({2}));
  // The second record has empty box lists.
  p = ParseSingleExample(recs[1], spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<int64_t>(p->dense[0], Tensor::Scalar<int64_t>(963));
  EXPECT_EQ(p->dense[2].shape(), TensorShape({0}));
  EXPECT_EQ(p->indices[0].shape(), TensorShape({0, 1}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({0}));
}

// ---------------------------------------------------------------------------
// ParseExample semantics on hand-made examples

TEST(ParseExampleTest, DenseTypesShapesAndDefaults) {
  const std::string e0 = MakeExample({{"f", Floats({1, 2, 3, 4})},
                                      {"i", Int64s({-5})},
                                      {"s", Bytes({"x", "yy"})}});
  const std::string e1 = MakeExample({{"f", Floats({5, 6, 7, 8})}});
  ParseSpec spec;
  spec.dense = {
      {"f", DT_FLOAT, PartialTensorShape({2, 2}), EmptyDefault(DT_FLOAT)},
      {"i", DT_INT64, PartialTensorShape({}), Tensor::Scalar<int64_t>(99)},
      {"s", DT_STRING, PartialTensorShape({2}),
       Tensor::FromVector<tstring>({"d0", "d1"})},
  };
  auto p = ParseExample({e0, e1}, {}, spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<float>(p->dense[0],
                           Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8},
                                                     TensorShape({2, 2, 2})));
  ExpectTensorEqual<int64_t>(p->dense[1],
                             Tensor::FromVector<int64_t>({-5, 99}));
  ExpectTensorEqual<tstring>(
      p->dense[2], Tensor::FromVector<tstring>({"x", "yy", "d0", "d1"},
                                               TensorShape({2, 2})));
}

TEST(ParseExampleTest, SparseFeatures) {
  const std::string e0 = MakeExample({{"v", Int64s({1, 2, 3})}});
  const std::string e1 = MakeExample({});
  const std::string e2 =
      MakeExample({{"v", Int64s({4})}, {"w", Bytes({"a", "b"})}});
  ParseSpec spec;
  spec.sparse = {{"v", DT_INT64}, {"w", DT_STRING}, {"nowhere", DT_FLOAT}};
  auto p = ParseExample({e0, e1, e2}, {"n0", "n1", "n2"}, spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<int64_t>(
      p->indices[0], Tensor::FromVector<int64_t>({0, 0, 0, 1, 0, 2, 2, 0},
                                                 TensorShape({4, 2})));
  ExpectTensorEqual<int64_t>(p->values[0],
                             Tensor::FromVector<int64_t>({1, 2, 3, 4}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({3, 3}));
  ExpectTensorEqual<int64_t>(
      p->indices[1],
      Tensor::FromVector<int64_t>({2, 0, 2, 1}, TensorShape({2, 2})));
  ExpectTensorEqual<tstring>(p->values[1],
                             Tensor::FromVector<tstring>({"a", "b"}));
  ExpectTensorEqual<int64_t>(p->shapes[1], Tensor::FromVector<int64_t>({3, 2}));
  EXPECT_EQ(p->indices[2].shape(), TensorShape({0, 2}));
  EXPECT_EQ(p->values[2].shape(), TensorShape({0}));
  ExpectTensorEqual<int64_t>(p->shapes[2], Tensor::FromVector<int64_t>({3, 0}));
}

TEST(ParseExampleTest, VariableLengthDenseWithInnerDims) {
  const std::string e0 = MakeExample({{"v", Floats({1, 2, 3, 4})}});
  const std::string e1 = MakeExample({{"v", Floats({5, 6})}});
  const std::string e2 = MakeExample({});
  ParseSpec spec;
  spec.dense = {
      {"v", DT_FLOAT, PartialTensorShape({-1, 2}), Tensor::Scalar<float>(0)}};
  auto p = ParseExample({e0, e1, e2}, {}, spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<float>(
      p->dense[0],
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0},
                                TensorShape({3, 2, 2})));
  // All missing: zero rows.
  p = ParseExample({e2}, {}, spec);
  ASSERT_OK(p.status());
  EXPECT_EQ(p->dense[0].shape(), TensorShape({1, 0, 2}));
  // Not a multiple of the inner size.
  const std::string odd = MakeExample({{"v", Floats({1, 2, 3})}});
  ExpectInvalid(ParseExample({odd}, {}, spec).status(), "multiple");
}

TEST(ParseExampleTest, EmptyBatchAndFeatureWithoutList) {
  ParseSpec spec;
  spec.sparse = {{"s", DT_FLOAT}};
  spec.dense = {
      {"d", DT_INT64, PartialTensorShape({3}), EmptyDefault(DT_INT64)}};
  auto p = ParseExample({}, {}, spec);
  ASSERT_OK(p.status());
  EXPECT_EQ(p->dense[0].shape(), TensorShape({0, 3}));
  EXPECT_EQ(p->indices[0].shape(), TensorShape({0, 2}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({0, 0}));
  // A Feature with no list set counts as empty: fine for sparse and for a
  // zero-sized dense shape.
  const std::string e = MakeExample({{"s", Feature()}, {"z", Feature()}});
  ParseSpec zero;
  zero.sparse = {{"s", DT_STRING}};
  zero.dense = {
      {"z", DT_FLOAT, PartialTensorShape({0}), EmptyDefault(DT_FLOAT)}};
  p = ParseExample({e}, {}, zero);
  ASSERT_OK(p.status());
  EXPECT_EQ(p->values[0].shape(), TensorShape({0}));
  EXPECT_EQ(p->dense[0].shape(), TensorShape({1, 0}));
}

TEST(ParseExampleTest, NoKeysAtAll) {
  auto p = ParseExample({MakeExample({}), "garbage-free-but-unused"}, {},
                        ParseSpec());
  // The second string is not a valid Example: still an error.
  ExpectInvalid(p.status(), "Could not parse example input");
  p = ParseExample({MakeExample({})}, {}, ParseSpec());
  ASSERT_OK(p.status());
}

TEST(ParseExampleTest, BadInputs) {
  const std::string good = MakeExample({{"f", Floats({1, 2})}});
  ParseSpec spec;
  spec.dense = {
      {"f", DT_FLOAT, PartialTensorShape({2}), EmptyDefault(DT_FLOAT)}};

  // Malformed proto, named in the message.
  auto p = ParseExample({good, std::string("\x0a\xff\x01", 3)},
                        {"good", "broken"}, spec);
  ExpectInvalid(p.status(), "Could not parse example input");
  ExpectInvalid(p.status(), "broken");
  // Missing required dense feature.
  p = ParseExample({MakeExample({{"g", Floats({1})}})}, {"ex0"}, spec);
  ExpectInvalid(p.status(), "Feature: f (data type: float) is required");
  ExpectInvalid(p.status(), "ex0");
  // Wrong number of values.
  p = ParseExample({MakeExample({{"f", Floats({1, 2, 3})}})}, {}, spec);
  ExpectInvalid(p.status(), "values size: 3");
  // Wrong list kind.
  p = ParseExample({MakeExample({{"f", Int64s({1, 2})}})}, {}, spec);
  ExpectInvalid(p.status(), "Data type: int64 but expected type: float");
  ParseSpec sparse_spec;
  sparse_spec.sparse = {{"f", DT_STRING}};
  p = ParseExample({good}, {}, sparse_spec);
  ExpectInvalid(p.status(), "Data type: float but expected type: string");

  // Default of the wrong shape.
  ParseSpec bad_default = spec;
  bad_default.dense[0].default_value = Tensor::FromVector<float>({1, 2, 3});
  ExpectInvalid(ParseExample({good}, {}, bad_default).status(),
                "is not compatible with dense_shapes[0]");
  // Variable-length needs a single padding value.
  ParseSpec varlen = spec;
  varlen.dense[0].shape = PartialTensorShape({-1});
  ExpectInvalid(ParseExample({good}, {}, varlen).status(),
                "must contain a single element");
  // Unknown inner dimension.
  ParseSpec unknown_inner = spec;
  unknown_inner.dense[0].shape = PartialTensorShape({2, -1});
  ExpectInvalid(ParseExample({good}, {}, unknown_inner).status(),
                "unknown inner dimensions");
  // A row shape whose element count overflows int64 (found by
  // fuzz/kernel_fuzzer): InvalidArgument from the shape function and the
  // kernel, for ParseExample and ParseSingleExample, fixed- or
  // variable-length.
  const int64_t big = int64_t{1} << 40;
  ParseSpec huge = spec;
  huge.dense[0].shape = PartialTensorShape({big, big, big});
  ExpectInvalid(ParseExample({good}, {}, huge).status(), "too many elements");
  ExpectInvalid(ParseSingleExample(good, huge).status(), "too many elements");
  huge.dense[0].shape = PartialTensorShape({-1, big, big});
  ExpectInvalid(ParseExample({good}, {}, huge).status(), "dense_shapes[0]");
  {
    OpTestCase t("ParseExample");
    t.Attr("Nsparse", int64_t{0}).Attr("Ndense", int64_t{1});
    AddTypeAttrs(huge, &t);
    t.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Tensor::Scalar<tstring>("f"))
        .Input(EmptyDefault(DT_FLOAT));
    ExpectInvalid(t.RunKernelOnly(), "too many elements");
  }

  // serialized must be a vector; names empty or matching.
  {
    OpTestCase t("ParseExample");
    t.Attr("Nsparse", int64_t{0}).Attr("Ndense", int64_t{0});
    AddTypeAttrs(ParseSpec(), &t);
    t.Input(Tensor::Scalar<tstring>(good)).Input(Strings({}));
    ExpectInvalid(t.RunKernelOnly(), "Expected serialized to be a vector");
    // The shape function rejects it too.
    ExpectInvalid(t.Run(), "rank");
  }
  {
    OpTestCase t("ParseExample");
    t.Attr("Nsparse", int64_t{0}).Attr("Ndense", int64_t{0});
    AddTypeAttrs(ParseSpec(), &t);
    t.Input(Strings({good, good})).Input(Strings({"only one"}));
    ExpectInvalid(t.Run(), "Expected names");
  }
  {
    // A dense key that is not a scalar.
    OpTestCase t("ParseExample");
    t.Attr("Nsparse", int64_t{0}).Attr("Ndense", int64_t{1});
    AddTypeAttrs(spec, &t);
    t.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Strings({"f", "g"}))
        .Input(EmptyDefault(DT_FLOAT));
    ExpectInvalid(t.Run(), "Expected dense_keys[0] to be a scalar");
  }
  {
    // Attr lists of inconsistent lengths.
    OpTestCase t("ParseExample");
    t.Attr("Nsparse", int64_t{0}).Attr("Ndense", int64_t{1});
    t.Attr("sparse_types", MakeAttrValue(absl::Span<const DataType>()))
        .Attr("Tdense", MakeAttrValue(std::vector<DataType>{DT_FLOAT}))
        .Attr("dense_shapes",
              MakeAttrValue(absl::Span<const PartialTensorShape>()));
    t.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Tensor::Scalar<tstring>("f"))
        .Input(EmptyDefault(DT_FLOAT));
    ExpectInvalid(t.RunKernelOnly(), "len(dense_shapes)");
    ExpectInvalid(t.Run(), "len(dense_shapes)");
  }
}

TEST(ParseExampleTest, ShapeFunctionWithUnknownBatch) {
  AttrMap attrs;
  attrs["Nsparse"] = MakeAttrValue(int64_t{1});
  attrs["Ndense"] = MakeAttrValue(int64_t{2});
  attrs["sparse_types"] = MakeAttrValue(std::vector<DataType>{DT_STRING});
  attrs["Tdense"] = MakeAttrValue(std::vector<DataType>{DT_FLOAT, DT_INT64});
  attrs["dense_shapes"] = MakeAttrValue(std::vector<PartialTensorShape>{
      PartialTensorShape({3}), PartialTensorShape({-1, 2})});
  auto s = InferShapes(
      "ParseExample", attrs,
      {PartialTensorShape(), PartialTensorShape({-1}), PartialTensorShape({}),
       PartialTensorShape({}), PartialTensorShape({}), PartialTensorShape({-1}),
       PartialTensorShape()});
  ASSERT_OK(s.status());
  ASSERT_EQ(s->size(), 5u);
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 2}));
  EXPECT_EQ((*s)[1], PartialTensorShape({-1}));
  EXPECT_EQ((*s)[2], PartialTensorShape({2}));
  EXPECT_EQ((*s)[3], PartialTensorShape({-1, 3}));
  EXPECT_EQ((*s)[4], PartialTensorShape({-1, -1, 2}));
}

TEST(ParseSingleExampleTest, DenseSparseAndErrors) {
  const std::string e =
      MakeExample({{"a", Floats({1, 2, 3})}, {"b", Int64s({7, 8})}});
  ParseSpec spec;
  spec.sparse = {{"b", DT_INT64}};
  spec.dense = {
      {"a", DT_FLOAT, PartialTensorShape({3}), EmptyDefault(DT_FLOAT)},
      {"c", DT_STRING, PartialTensorShape({}), Tensor::Scalar<tstring>("dflt")},
      {"a", DT_FLOAT, PartialTensorShape({-1, 3}), Tensor::Scalar<float>(0)}};
  auto p = ParseSingleExample(e, spec);
  ASSERT_OK(p.status());
  ExpectTensorEqual<float>(p->dense[0], Tensor::FromVector<float>({1, 2, 3}));
  ExpectTensorEqual<tstring>(p->dense[1], Tensor::Scalar<tstring>("dflt"));
  ExpectTensorEqual<float>(
      p->dense[2], Tensor::FromVector<float>({1, 2, 3}, TensorShape({1, 3})));
  ExpectTensorEqual<int64_t>(
      p->indices[0], Tensor::FromVector<int64_t>({0, 1}, TensorShape({2, 1})));
  ExpectTensorEqual<int64_t>(p->values[0], Tensor::FromVector<int64_t>({7, 8}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({2}));

  // Errors.
  ExpectInvalid(ParseSingleExample("\xff\xff", spec).status(),
                "Could not parse example input");
  ParseSpec required;
  required.dense = {
      {"zz", DT_INT64, PartialTensorShape({}), EmptyDefault(DT_INT64)}};
  ExpectInvalid(ParseSingleExample(e, required).status(),
                "Feature: zz (data type: int64) is required");
  ParseSpec wrong;
  wrong.sparse = {{"a", DT_INT64}};
  ExpectInvalid(ParseSingleExample(e, wrong).status(),
                "Data type: float but expected type: int64");
  {
    OpTestCase t("ParseSingleExample");
    t.Attr("num_sparse", int64_t{0})
        .Attr("sparse_keys", MakeAttrValue(absl::Span<const std::string>()))
        .Attr("dense_keys", MakeAttrValue(absl::Span<const std::string>()));
    AddTypeAttrs(ParseSpec(), &t);
    t.Input(Strings({e, e}));
    ExpectInvalid(t.RunKernelOnly(), "Expected serialized to be a scalar");
  }
  {
    // num_sparse disagrees with sparse_keys.
    OpTestCase t("ParseSingleExample");
    t.Attr("num_sparse", int64_t{1})
        .Attr("sparse_keys", MakeAttrValue(absl::Span<const std::string>()))
        .Attr("dense_keys", MakeAttrValue(absl::Span<const std::string>()));
    t.Attr("sparse_types", MakeAttrValue(std::vector<DataType>{DT_FLOAT}))
        .Attr("Tdense", MakeAttrValue(absl::Span<const DataType>()))
        .Attr("dense_shapes",
              MakeAttrValue(absl::Span<const PartialTensorShape>()));
    t.Input(Tensor::Scalar<tstring>(e));
    ExpectInvalid(t.RunKernelOnly(), "len(sparse_keys)");
  }
}

// ---------------------------------------------------------------------------
// ParseExampleV2

struct RaggedSpec {
  std::string key;
  DataType dtype;
  DataType splits_dtype = DT_INT64;
};

struct ParsedV2 : Parsed {
  std::vector<Tensor> ragged_values, ragged_splits;
};

// An OpTestCase for ParseExampleV2 with all attrs and inputs set.
OpTestCase ParseExampleV2Case(const Tensor& serialized, const Tensor& names,
                              const ParseSpec& spec,
                              const std::vector<RaggedSpec>& ragged = {}) {
  OpTestCase t("ParseExampleV2");
  t.Attr("num_sparse", static_cast<int64_t>(spec.sparse.size()));
  AddTypeAttrs(spec, &t);
  std::vector<DataType> value_types, split_types;
  std::vector<std::string> sparse_keys, dense_keys, ragged_keys;
  for (const auto& r : ragged) {
    value_types.push_back(r.dtype);
    split_types.push_back(r.splits_dtype);
    ragged_keys.push_back(r.key);
  }
  for (const auto& [k, dt] : spec.sparse) sparse_keys.push_back(k);
  for (const auto& d : spec.dense) dense_keys.push_back(d.key);
  t.Attr("ragged_value_types", MakeAttrValue(absl::MakeConstSpan(value_types)))
      .Attr("ragged_split_types",
            MakeAttrValue(absl::MakeConstSpan(split_types)));
  t.Input(serialized)
      .Input(names)
      .Input(Strings(sparse_keys))
      .Input(Strings(dense_keys))
      .Input(Strings(ragged_keys));
  for (const auto& d : spec.dense) t.Input(d.default_value);
  return t;
}

StatusOr<ParsedV2> ParseExampleV2(const Tensor& serialized, const Tensor& names,
                                  const ParseSpec& spec,
                                  const std::vector<RaggedSpec>& ragged = {}) {
  OpTestCase t = ParseExampleV2Case(serialized, names, spec, ragged);
  RETURN_IF_ERROR(t.Run());
  ParsedV2 p;
  static_cast<Parsed&>(p) = Split(t, spec.sparse.size(), spec.dense.size());
  const size_t base = 3 * spec.sparse.size() + spec.dense.size();
  for (size_t r = 0; r < ragged.size(); ++r) {
    p.ragged_values.push_back(t.output(base + r));
    p.ragged_splits.push_back(t.output(base + ragged.size() + r));
  }
  return p;
}

TEST(ParseExampleV2Test, DenseWithDefaultsSparseAndRagged) {
  const std::string e0 = MakeExample({{"f", Floats({1, 2, 3, 4})},
                                      {"i", Int64s({-5})},
                                      {"v", Int64s({1, 2, 3})},
                                      {"r", Bytes({"a", "b"})}});
  const std::string e1 = MakeExample({{"f", Floats({5, 6, 7, 8})}});
  const std::string e2 = MakeExample(
      {{"f", Floats({0, 0, 0, 1})}, {"v", Int64s({4})}, {"r", Bytes({"c"})}});
  ParseSpec spec;
  spec.sparse = {{"v", DT_INT64}, {"nowhere", DT_FLOAT}};
  spec.dense = {
      {"f", DT_FLOAT, PartialTensorShape({2, 2}), EmptyDefault(DT_FLOAT)},
      {"i", DT_INT64, PartialTensorShape({}), Tensor::Scalar<int64_t>(99)},
      {"s", DT_STRING, PartialTensorShape({2}),
       Tensor::FromVector<tstring>({"d0", "d1"})},
      {"v", DT_INT64, PartialTensorShape({-1}), Tensor::Scalar<int64_t>(-1)}};
  auto p = ParseExampleV2(Strings({e0, e1, e2}), Strings({"n0", "n1", "n2"}),
                          spec, {{"r", DT_STRING}, {"v", DT_INT64, DT_INT32}});
  ASSERT_OK(p.status());
  // Dense: required, defaulted, padded variable-length.
  ExpectTensorEqual<float>(
      p->dense[0],
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 1},
                                TensorShape({3, 2, 2})));
  ExpectTensorEqual<int64_t>(p->dense[1],
                             Tensor::FromVector<int64_t>({-5, 99, 99}));
  ExpectTensorEqual<tstring>(
      p->dense[2],
      Tensor::FromVector<tstring>({"d0", "d1", "d0", "d1", "d0", "d1"},
                                  TensorShape({3, 2})));
  ExpectTensorEqual<int64_t>(
      p->dense[3], Tensor::FromVector<int64_t>({1, 2, 3, -1, -1, -1, 4, -1, -1},
                                               TensorShape({3, 3})));
  // Sparse.
  ExpectTensorEqual<int64_t>(
      p->indices[0], Tensor::FromVector<int64_t>({0, 0, 0, 1, 0, 2, 2, 0},
                                                 TensorShape({4, 2})));
  ExpectTensorEqual<int64_t>(p->values[0],
                             Tensor::FromVector<int64_t>({1, 2, 3, 4}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({3, 3}));
  EXPECT_EQ(p->indices[1].shape(), TensorShape({0, 2}));
  ExpectTensorEqual<int64_t>(p->shapes[1], Tensor::FromVector<int64_t>({3, 0}));
  // Ragged: the middle example has an empty row.
  ExpectTensorEqual<tstring>(p->ragged_values[0],
                             Tensor::FromVector<tstring>({"a", "b", "c"}));
  ExpectTensorEqual<int64_t>(p->ragged_splits[0],
                             Tensor::FromVector<int64_t>({0, 2, 2, 3}));
  ExpectTensorEqual<int64_t>(p->ragged_values[1],
                             Tensor::FromVector<int64_t>({1, 2, 3, 4}));
  ExpectTensorEqual<int32_t>(p->ragged_splits[1],
                             Tensor::FromVector<int32_t>({0, 3, 3, 4}));
}

TEST(ParseExampleV2Test, ScalarSerializedIsOneExample) {
  const std::string e =
      MakeExample({{"a", Floats({1, 2, 3})}, {"b", Int64s({7, 8})}});
  ParseSpec spec;
  spec.sparse = {{"b", DT_INT64}};
  spec.dense = {
      {"a", DT_FLOAT, PartialTensorShape({3}), EmptyDefault(DT_FLOAT)},
      {"c", DT_STRING, PartialTensorShape({}), Tensor::Scalar<tstring>("dflt")},
      {"a", DT_FLOAT, PartialTensorShape({-1, 3}), Tensor::Scalar<float>(0)}};
  auto p = ParseExampleV2(Tensor::Scalar<tstring>(e), Strings({}), spec,
                          {{"b", DT_INT64}, {"zz", DT_FLOAT, DT_INT32}});
  ASSERT_OK(p.status());
  ExpectTensorEqual<float>(p->dense[0], Tensor::FromVector<float>({1, 2, 3}));
  ExpectTensorEqual<tstring>(p->dense[1], Tensor::Scalar<tstring>("dflt"));
  ExpectTensorEqual<float>(
      p->dense[2], Tensor::FromVector<float>({1, 2, 3}, TensorShape({1, 3})));
  ExpectTensorEqual<int64_t>(
      p->indices[0], Tensor::FromVector<int64_t>({0, 1}, TensorShape({2, 1})));
  ExpectTensorEqual<int64_t>(p->values[0], Tensor::FromVector<int64_t>({7, 8}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({2}));
  // Ragged values alone; the splits of a scalar are empty (as TF).
  ExpectTensorEqual<int64_t>(p->ragged_values[0],
                             Tensor::FromVector<int64_t>({7, 8}));
  EXPECT_EQ(p->ragged_splits[0].shape(), TensorShape({0}));
  EXPECT_EQ(p->ragged_values[1].shape(), TensorShape({0}));
  EXPECT_EQ(p->ragged_splits[1].dtype(), DT_INT32);
  // A scalar name is used in errors.
  ParseSpec required;
  required.dense = {
      {"zz", DT_INT64, PartialTensorShape({}), EmptyDefault(DT_INT64)}};
  auto bad = ParseExampleV2(Tensor::Scalar<tstring>(e),
                            Tensor::Scalar<tstring>("the_one"), required);
  ExpectInvalid(bad.status(), "Feature: zz (data type: int64) is required");
  ExpectInvalid(bad.status(), "the_one");
}

TEST(ParseExampleV2Test, AgreesWithParseExampleOnTensorFlowRecords) {
  const std::vector<std::string> recs = ImagenetRecords();
  ASSERT_EQ(recs.size(), 3u);
  ParseSpec spec;
  spec.sparse = {{"image/object/bbox/xmin", DT_FLOAT}};
  spec.dense = {{"image/class/label", DT_INT64, PartialTensorShape({}),
                 EmptyDefault(DT_INT64)},
                {"image/class/synset", DT_STRING, PartialTensorShape({}),
                 EmptyDefault(DT_STRING)},
                {"image/object/bbox/xmax", DT_FLOAT, PartialTensorShape({-1}),
                 Tensor::Scalar<float>(-1.0f)}};
  auto v1 = ParseExample(recs, {}, spec);
  ASSERT_OK(v1.status());
  auto v2 = ParseExampleV2(Strings(recs), Strings({}), spec,
                           {{"image/object/bbox/label", DT_INT64}});
  ASSERT_OK(v2.status());
  for (size_t d = 0; d < spec.dense.size(); ++d) {
    EXPECT_EQ(v2->dense[d].DebugString(), v1->dense[d].DebugString()) << d;
  }
  ExpectTensorEqual<int64_t>(v2->dense[0],
                             Tensor::FromVector<int64_t>({287, 963, 396}));
  ExpectTensorEqual<int64_t>(v2->indices[0], v1->indices[0]);
  ExpectTensorEqual<float>(v2->values[0], v1->values[0]);
  ExpectTensorEqual<int64_t>(v2->shapes[0], v1->shapes[0]);
  // Only the first example has boxes (two, both labelled 287).
  ExpectTensorEqual<int64_t>(v2->ragged_values[0],
                             Tensor::FromVector<int64_t>({287, 287}));
  ExpectTensorEqual<int64_t>(v2->ragged_splits[0],
                             Tensor::FromVector<int64_t>({0, 2, 2, 2}));
}

TEST(ParseExampleV2Test, EmptyBatch) {
  ParseSpec spec;
  spec.sparse = {{"s", DT_FLOAT}};
  spec.dense = {
      {"d", DT_INT64, PartialTensorShape({3}), EmptyDefault(DT_INT64)}};
  auto p =
      ParseExampleV2(Strings({}, {0}), Strings({}), spec, {{"r", DT_FLOAT}});
  ASSERT_OK(p.status());
  EXPECT_EQ(p->dense[0].shape(), TensorShape({0, 3}));
  EXPECT_EQ(p->indices[0].shape(), TensorShape({0, 2}));
  ExpectTensorEqual<int64_t>(p->shapes[0], Tensor::FromVector<int64_t>({0, 0}));
  EXPECT_EQ(p->ragged_values[0].shape(), TensorShape({0}));
  ExpectTensorEqual<int64_t>(p->ragged_splits[0],
                             Tensor::FromVector<int64_t>({0}));
}

TEST(ParseExampleV2Test, BadInputs) {
  const std::string good = MakeExample({{"f", Floats({1, 2})}});
  ParseSpec spec;
  spec.dense = {
      {"f", DT_FLOAT, PartialTensorShape({2}), EmptyDefault(DT_FLOAT)}};

  // Missing required dense feature, with the example's name.
  auto p = ParseExampleV2(Strings({good, MakeExample({{"g", Floats({1})}})}),
                          Strings({"ex0", "ex1"}), spec);
  ExpectInvalid(p.status(), "Feature: f (data type: float) is required");
  ExpectInvalid(p.status(), "ex1");
  // Malformed proto; wrong value count; wrong list kind (dense and ragged).
  ExpectInvalid(ParseExampleV2(Strings({std::string("\x0a\xff\x01", 3)}),
                               Strings({}), spec)
                    .status(),
                "Could not parse example input");
  ExpectInvalid(ParseExampleV2(Strings({MakeExample({{"f", Floats({1})}})}),
                               Strings({}), spec)
                    .status(),
                "values size: 1");
  ExpectInvalid(ParseExampleV2(Strings({MakeExample({{"f", Int64s({1, 2})}})}),
                               Strings({}), spec)
                    .status(),
                "Data type: int64 but expected type: float");
  ExpectInvalid(ParseExampleV2(Strings({good}), Strings({}), ParseSpec(),
                               {{"f", DT_STRING}})
                    .status(),
                "Data type: float but expected type: string");
  // A default of the wrong shape or dtype.
  ParseSpec bad_default = spec;
  bad_default.dense[0].default_value = Tensor::FromVector<float>({1, 2, 3});
  ExpectInvalid(
      ParseExampleV2(Strings({good}), Strings({}), bad_default).status(),
      "is not compatible with dense_shapes[0]");

  // Keys: one per config, as a vector.
  {
    // Two dense keys for one dense type.
    OpTestCase k("ParseExampleV2");
    k.Attr("num_sparse", int64_t{0});
    AddTypeAttrs(spec, &k);
    k.Attr("ragged_value_types", MakeAttrValue(absl::Span<const DataType>()))
        .Attr("ragged_split_types",
              MakeAttrValue(absl::Span<const DataType>()));
    k.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({"f", "g"}))
        .Input(Strings({}))
        .Input(EmptyDefault(DT_FLOAT));
    ExpectInvalid(k.Run(),
                  "Expected len(dense_keys) == len(dense_types) but got: 2 vs. "
                  "1");
  }
  {
    // A sparse key missing for num_sparse = 1.
    ParseSpec sparse;
    sparse.sparse = {{"f", DT_FLOAT}};
    OpTestCase k("ParseExampleV2");
    k.Attr("num_sparse", int64_t{1});
    AddTypeAttrs(sparse, &k);
    k.Attr("ragged_value_types", MakeAttrValue(absl::Span<const DataType>()))
        .Attr("ragged_split_types",
              MakeAttrValue(absl::Span<const DataType>()));
    k.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({}));
    ExpectInvalid(k.Run(),
                  "Expected len(sparse_keys) == num_sparse but got: 0 vs. 1");
  }
  {
    // Ragged keys of rank 2: the kernel and the shape function reject them.
    OpTestCase k("ParseExampleV2");
    k.Attr("num_sparse", int64_t{0});
    AddTypeAttrs(ParseSpec(), &k);
    k.Attr("ragged_value_types", MakeAttrValue(std::vector<DataType>{DT_FLOAT}))
        .Attr("ragged_split_types",
              MakeAttrValue(std::vector<DataType>{DT_INT64}));
    k.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({"f"}, {1, 1}));
    ExpectInvalid(k.RunKernelOnly(),
                  "Expected ragged_keys to be a vector, got shape: [1,1]");
    ExpectInvalid(k.Run(), "rank");
  }
  {
    // serialized of rank 2; names that do not match serialized.
    OpTestCase t =
        ParseExampleV2Case(Strings({good, good}, {1, 2}), Strings({}), spec);
    ExpectInvalid(t.RunKernelOnly(),
                  "Expected serialized to be a scalar or vector, got shape: "
                  "[1,2]");
    ExpectInvalid(t.Run(), "rank");
    OpTestCase n =
        ParseExampleV2Case(Strings({good, good}), Strings({"only one"}), spec);
    ExpectInvalid(n.Run(), "Expected names");
  }
  {
    // Ragged type lists of different lengths.
    OpTestCase k("ParseExampleV2");
    k.Attr("num_sparse", int64_t{0});
    AddTypeAttrs(ParseSpec(), &k);
    k.Attr("ragged_value_types", MakeAttrValue(std::vector<DataType>{DT_FLOAT}))
        .Attr("ragged_split_types",
              MakeAttrValue(absl::Span<const DataType>()));
    k.Input(Strings({good}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({}))
        .Input(Strings({"f"}));
    ExpectInvalid(k.RunKernelOnly(), "len(ragged_split_types)");
    ExpectInvalid(k.Run(), "len(ragged_split_types)");
  }
}

TEST(ParseExampleV2Test, ShapeFunction) {
  AttrMap attrs;
  attrs["num_sparse"] = MakeAttrValue(int64_t{1});
  attrs["sparse_types"] = MakeAttrValue(std::vector<DataType>{DT_STRING});
  attrs["Tdense"] = MakeAttrValue(std::vector<DataType>{DT_FLOAT, DT_INT64});
  attrs["dense_shapes"] = MakeAttrValue(std::vector<PartialTensorShape>{
      PartialTensorShape({3}), PartialTensorShape({-1, 2})});
  attrs["ragged_value_types"] = MakeAttrValue(std::vector<DataType>{DT_FLOAT});
  attrs["ragged_split_types"] = MakeAttrValue(std::vector<DataType>{DT_INT32});
  auto infer = [&](const PartialTensorShape& serialized) {
    return InferShapes(
        "ParseExampleV2", attrs,
        {serialized, PartialTensorShape({0}), PartialTensorShape({1}),
         PartialTensorShape({2}), PartialTensorShape({1}),
         PartialTensorShape({0}), PartialTensorShape({})});
  };
  // A batch of 4.
  auto s = infer(PartialTensorShape({4}));
  ASSERT_OK(s.status());
  ASSERT_EQ(s->size(), 7u);
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 2}));
  EXPECT_EQ((*s)[1], PartialTensorShape({-1}));
  EXPECT_EQ((*s)[2], PartialTensorShape({2}));
  EXPECT_EQ((*s)[3], PartialTensorShape({4, 3}));
  EXPECT_EQ((*s)[4], PartialTensorShape({4, -1, 2}));
  EXPECT_EQ((*s)[5], PartialTensorShape({-1}));
  EXPECT_EQ((*s)[6], PartialTensorShape({5}));
  // One example.
  s = infer(PartialTensorShape({}));
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 1}));
  EXPECT_EQ((*s)[2], PartialTensorShape({1}));
  EXPECT_EQ((*s)[3], PartialTensorShape({3}));
  EXPECT_EQ((*s)[4], PartialTensorShape({-1, 2}));
  EXPECT_EQ((*s)[6], PartialTensorShape({-1}));
  // Unknown rank: sparse rank and dense outputs unknown.
  s = infer(PartialTensorShape());
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1}));
  EXPECT_EQ((*s)[2], PartialTensorShape({-1}));
  EXPECT_TRUE((*s)[3].unknown_rank());
  EXPECT_EQ((*s)[6], PartialTensorShape({-1}));
  // Rank 2 is rejected.
  EXPECT_FALSE(infer(PartialTensorShape({2, 2})).ok());
}

}  // namespace
}  // namespace runnel
