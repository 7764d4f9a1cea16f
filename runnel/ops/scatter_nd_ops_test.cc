#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) {
  return Tensor::FromVector<float>(v, shape);
}
template <typename I = int32_t>
Tensor Ints(std::vector<I> v, TensorShape shape) {
  return Tensor::FromVector<I>(v, shape);
}

void ExpectError(const Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(fragment), std::string::npos)
      << "message '" << s.message() << "' lacks '" << fragment << "'";
}

OpTestCase GatherNdCase(const Tensor& params, const Tensor& indices) {
  OpTestCase t("GatherNd", "gnd");
  t.Attr("Tparams", params.dtype())
      .Attr("Tindices", indices.dtype())
      .Input(params)
      .Input(indices);
  return t;
}

// ---------------------------------------------------------------------------
// GatherNd

TEST(GatherNdTest, ElementsAndSlices) {
  const Tensor p = Floats({0, 1, 2, 3, 4, 5}, {2, 3});
  {  // Full coordinates: elements.
    OpTestCase t = GatherNdCase(p, Ints({1, 2, 0, 1}, {2, 2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Floats({5, 1}, {2}));
  }
  {  // One coordinate: rows, with a batch of shape [2, 1].
    OpTestCase t = GatherNdCase(p, Ints<int64_t>({1, 1}, {2, 1, 1}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0),
                             Floats({3, 4, 5, 3, 4, 5}, {2, 1, 3}));
  }
  {  // No coordinates: the whole of params per row.
    OpTestCase t = GatherNdCase(p, Ints({}, {2, 0}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(
        t.output(0), Floats({0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, {2, 2, 3}));
  }
}

// Found by the kernel fuzzer: indices of shape [2^40, 0] over empty params
// made 2^40 slice offsets before noticing nothing moves; and over params
// with elements the output (2^40 copies) is refused before any offset is
// made.
TEST(GatherNdTest, HugeBatchesOfNoCoordinates) {
  const int64_t huge = int64_t{1} << 40;
  OpTestCase empty = GatherNdCase(Floats({}, {0}), Ints({}, {huge, 0}));
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({huge, 0}));
  OpTestCase big = GatherNdCase(Floats({1}, {1}), Ints({}, {huge, 0}));
  EXPECT_EQ(big.Run().code(), absl::StatusCode::kResourceExhausted);
}

TEST(GatherNdTest, Strings) {
  Tensor p(DT_STRING, TensorShape({2, 2}));
  p.flat<tstring>()[0] = "a";
  p.flat<tstring>()[1] = "b";
  p.flat<tstring>()[2] = "c";
  p.flat<tstring>()[3] = "d";
  OpTestCase t = GatherNdCase(p, Ints({1, 0, 0, 1}, {2, 2}));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).flat<tstring>()[0], "c");
  EXPECT_EQ(t.output(0).flat<tstring>()[1], "b");
}

TEST(GatherNdTest, BadIndicesAreInvalidArgument) {
  const Tensor p = Floats({0, 1, 2, 3, 4, 5}, {2, 3});
  OpTestCase t = GatherNdCase(p, Ints({1, 2, 2, 0}, {2, 2}));
  Status s = t.Run();
  ExpectError(s, "indices[1] = [2, 0] does not index into param shape [2,3]");
  ExpectError(s, "'gnd'");
  ExpectError(GatherNdCase(p, Ints({0, -1}, {1, 2})).Run(), "[0, -1]");
  ExpectError(GatherNdCase(p, Ints({0, 0, 0}, {1, 3})).Run(),
              "indices.shape[-1] must be <= params.rank");
  ExpectError(GatherNdCase(Floats({}, {0, 3}), Ints({0}, {1, 1})).Run(),
              "params is empty");
}

// ---------------------------------------------------------------------------
// ScatterNd

TEST(ScatterNdTest, DuplicatesAdd) {
  OpTestCase t("ScatterNd", "snd");
  t.Attr("T", DT_FLOAT)
      .Attr("Tindices", DT_INT32)
      .Input(Ints({4, 3, 1, 4}, {4, 1}))
      .Input(Floats({9, 10, 11, 12}, {4}))
      .Input(Ints({8}, {1}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0),
                           Floats({0, 11, 0, 10, 21, 0, 0, 0}, {8}));
}

TEST(ScatterNdTest, Slices) {
  OpTestCase t("ScatterNd");
  t.Attr("T", DT_DOUBLE)
      .Attr("Tindices", DT_INT64)
      .Input(Ints<int64_t>({1}, {1, 1}))
      .Input(Tensor::FromVector<double>({1, 2}, TensorShape({1, 2})))
      .Input(Ints<int64_t>({3, 2}, {2}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<double>(
      t.output(0),
      Tensor::FromVector<double>({0, 0, 1, 2, 0, 0}, TensorShape({3, 2})));
}

TEST(ScatterNdTest, BadInputsAreInvalidArgument) {
  auto run = [](const Tensor& idx, const Tensor& upd, const Tensor& shape) {
    OpTestCase t("ScatterNd", "snd");
    t.Attr("T", DT_FLOAT)
        .Attr("Tindices", DT_INT32)
        .Input(idx)
        .Input(upd)
        .Input(shape);
    return t.RunKernelOnly();
  };
  Status s = run(Ints({1, 5}, {2, 1}), Floats({1, 2}, {2}), Ints({4}, {1}));
  ExpectError(s, "indices[1] = [5] does not index into shape [4]");
  ExpectError(s, "'snd'");
  ExpectError(run(Ints({1}, {1, 1}), Floats({1, 2}, {2}), Ints({4}, {1})),
              "updates must have shape");
  ExpectError(run(Ints({1}, {1, 1}), Floats({1}, {1}), Ints({-4}, {1})), "");
}

// ---------------------------------------------------------------------------
// TensorScatterUpdate, TensorScatterAdd

OpTestCase TensorScatterCase(const std::string& op, const Tensor& tensor,
                             const Tensor& indices, const Tensor& updates) {
  OpTestCase t(op, "ts");
  t.Attr("T", tensor.dtype())
      .Attr("Tindices", indices.dtype())
      .Input(tensor)
      .Input(indices)
      .Input(updates);
  return t;
}

TEST(TensorScatterTest, UpdateAndAdd) {
  const Tensor x = Floats({1, 2, 3, 4, 5, 6}, {3, 2});
  const Tensor idx = Ints({2, 0}, {2, 1});
  const Tensor upd = Floats({10, 20, 30, 40}, {2, 2});
  {
    OpTestCase t = TensorScatterCase("TensorScatterUpdate", x, idx, upd);
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0),
                             Floats({30, 40, 3, 4, 10, 20}, {3, 2}));
  }
  {
    OpTestCase t =
        TensorScatterCase("TensorScatterAdd", x, Ints({0, 1, 0, 1}, {2, 2}),
                          Floats({10, 20}, {2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Floats({1, 32, 3, 4, 5, 6}, {3, 2}));
  }
  // The input is unchanged (the kernel copies when it cannot forward).
  ExpectTensorEqual<float>(x, Floats({1, 2, 3, 4, 5, 6}, {3, 2}));
}

TEST(TensorScatterTest, BadIndicesAreInvalidArgument) {
  const Tensor x = Floats({1, 2, 3, 4, 5, 6}, {3, 2});
  for (const char* op : {"TensorScatterUpdate", "TensorScatterAdd"}) {
    SCOPED_TRACE(op);
    Status s =
        TensorScatterCase(op, x, Ints({3}, {1, 1}), Floats({1, 2}, {1, 2}))
            .Run();
    ExpectError(s, "indices[0] = [3] does not index into shape [3,2]");
    ExpectError(s, "'ts'");
    ExpectError(TensorScatterCase(op, x, Ints({0}, {1, 1}), Floats({1}, {1}))
                    .RunKernelOnly(),
                "updates must have shape");
  }
}

}  // namespace
}  // namespace runnel
