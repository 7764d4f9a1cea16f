// The ref-variable ops of state_ops.cc through a Session (ref inputs need
// the executor).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

std::vector<Tensor> Fetch(const ClientSession& session,
                          const std::vector<Output>& fetches) {
  std::vector<Tensor> out;
  Status s = session.Run(fetches, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// AssignAdd / AssignSub on integers wrap (two's complement) as in
// TensorFlow instead of overflowing (undefined behaviour; a fuzz finding).
template <typename T>
void CheckAssignUpdateWraps() {
  constexpr T kMax = std::numeric_limits<T>::max();
  constexpr T kMin = std::numeric_limits<T>::min();
  Scope root = Scope::NewRootScope();
  const Tensor init = Tensor::FromVector<T>({kMax, kMin, 5});
  auto var = ops::VariableV2(root.WithOpName("v"), init.shape(), init.dtype());
  auto assign = ops::Assign(root, var, ops::Const(root, init));
  auto add = ops::AssignAdd(root, var,
                            ops::Const(root, Tensor::FromVector<T>({1, 0, 2})));
  auto sub = ops::AssignSub(root, var,
                            ops::Const(root, Tensor::FromVector<T>({1, 1, 2})));
  ASSERT_OK(root.status());
  ClientSession session(root);
  Fetch(session, {assign});
  auto got = Fetch(session, {ops::Identity(root, add)});
  ASSERT_EQ(got.size(), 1u);
  // kMax + 1 == kMin.
  ExpectTensorEqual<T>(got[0], Tensor::FromVector<T>({kMin, kMin, 7}));
  got = Fetch(session, {ops::Identity(root, sub)});
  ASSERT_EQ(got.size(), 1u);
  // kMin - 1 == kMax.
  ExpectTensorEqual<T>(got[0], Tensor::FromVector<T>({kMax, kMax, 5}));
}

TEST(AssignUpdateTest, Int32Wraps) { CheckAssignUpdateWraps<int32_t>(); }
TEST(AssignUpdateTest, Int64Wraps) { CheckAssignUpdateWraps<int64_t>(); }

TEST(AssignUpdateTest, Floats) {
  Scope root = Scope::NewRootScope();
  const Tensor init = Tensor::FromVector<float>({1.5f, -2});
  auto var = ops::VariableV2(root.WithOpName("v"), init.shape(), init.dtype());
  auto assign = ops::Assign(root, var, ops::Const(root, init));
  auto add = ops::AssignAdd(
      root, var, ops::Const(root, Tensor::FromVector<float>({1, 0.5f})));
  ClientSession session(root);
  Fetch(session, {assign});
  auto got = Fetch(session, {ops::Identity(root, add)});
  ASSERT_EQ(got.size(), 1u);
  ExpectTensorEqual<float>(got[0], Tensor::FromVector<float>({2.5f, -1.5f}));
}

}  // namespace
}  // namespace runnel
