#include "runnel/runtime/local_rendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

Rendezvous::ParsedKey Key(absl::string_view name, FrameAndIter fi = {}) {
  Rendezvous::ParsedKey k;
  Status s = Rendezvous::ParseKey(
      Rendezvous::CreateKey(kCpu0, 0x1234abcdull, kCpu1, name, fi), &k);
  EXPECT_TRUE(s.ok()) << s;
  return k;
}

TEST(RendezvousKeyTest, TensorFlowFormatRoundTrips) {
  const std::string key =
      Rendezvous::CreateKey(kCpu0, 0x1234abcdull, kCpu1, "edge_5_a", {77, 3});
  EXPECT_EQ(key,
            absl::StrCat(kCpu0, ";000000001234abcd;", kCpu1, ";edge_5_a;77:3"));
  Rendezvous::ParsedKey k;
  ASSERT_OK(Rendezvous::ParseKey(key, &k));
  EXPECT_EQ(k.src_device, kCpu0);
  EXPECT_EQ(k.dst_device, kCpu1);
  EXPECT_EQ(k.src_incarnation, 0x1234abcdull);
  EXPECT_EQ(k.edge_name, "edge_5_a");
  EXPECT_EQ(k.frame_iter, (FrameAndIter{77, 3}));
  EXPECT_EQ(k.dst.id, 1);
  // Copies re-point their views into their own string.
  Rendezvous::ParsedKey copy = k;
  k.full_key.assign(k.full_key.size(), 'x');
  EXPECT_EQ(copy.edge_name, "edge_5_a");
  EXPECT_EQ(copy.src_device, kCpu0);
}

TEST(RendezvousKeyTest, MalformedKeysAreErrorsNamingTheKey) {
  Rendezvous::ParsedKey k;
  for (const char* bad :
       {"", "a;b;c", "/cpu:0;zz;/cpu:1;e;0:0", "/cpu:0;0000000000000001;;e;0:0",
        "/cpu:0;0000000000000001;/cpu:1;;0:0",
        "/cpu:0;0000000000000001;/cpu:1;e;0",
        "/cpu:0;0000000000000001;/cpu:1;e;x:y",
        "nodevice;0000000000000001;"
        "/cpu:1;e;0:0"}) {
    Status s = Rendezvous::ParseKey(bad, &k);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LocalRendezvousTest, SendThenRecv) {
  LocalRendezvous r;
  ASSERT_OK(r.Send(Key("a"), {}, Tensor::FromVector<float>({1, 2}), false));
  EXPECT_EQ(r.NumPendingSends(), 1);
  Tensor t;
  bool dead = true;
  ASSERT_OK(r.Recv(Key("a"), {}, &t, &dead));
  EXPECT_FALSE(dead);
  EXPECT_EQ(t.flat<float>()[1], 2.0f);
  EXPECT_EQ(r.NumPendingSends(), 0);
}

TEST(LocalRendezvousTest, RecvThenSendSharesTheBuffer) {
  LocalRendezvous r;
  Tensor got;
  bool called = false;
  r.RecvAsync(Key("a"), {},
              [&](const Status& s, const Rendezvous::Args&,
                  const Rendezvous::Args&, const Tensor& v, bool dead) {
                EXPECT_OK(s);
                EXPECT_FALSE(dead);
                got = v;
                called = true;
              });
  EXPECT_FALSE(called);
  EXPECT_EQ(r.NumPendingRecvs(), 1);
  Tensor sent = Tensor::FromVector<int32_t>({7});
  ASSERT_OK(r.Send(Key("a"), {}, sent, false));
  ASSERT_TRUE(called);
  EXPECT_EQ(got.flat<int32_t>().data(), sent.flat<int32_t>().data());
}

TEST(LocalRendezvousTest, KeysDifferByFrameAndIteration) {
  LocalRendezvous r;
  ASSERT_OK(
      r.Send(Key("a", {5, 0}), {}, Tensor::FromVector<int32_t>({0}), false));
  ASSERT_OK(
      r.Send(Key("a", {5, 1}), {}, Tensor::FromVector<int32_t>({1}), false));
  Tensor t;
  bool dead;
  ASSERT_OK(r.Recv(Key("a", {5, 1}), {}, &t, &dead));
  EXPECT_EQ(t.flat<int32_t>()[0], 1);
  ASSERT_OK(r.Recv(Key("a", {5, 0}), {}, &t, &dead));
  EXPECT_EQ(t.flat<int32_t>()[0], 0);
  // Nothing under the root frame's key.
  EXPECT_EQ(r.Recv(Key("a"), {}, &t, &dead, 20).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(LocalRendezvousTest, DeadTokensArriveDead) {
  LocalRendezvous r;
  ASSERT_OK(r.Send(Key("a"), {}, Tensor(), true));
  Tensor t;
  bool dead = false;
  ASSERT_OK(r.Recv(Key("a"), {}, &t, &dead));
  EXPECT_TRUE(dead);
}

TEST(LocalRendezvousTest, AbortWakesWaitersAndFailsLaterCalls) {
  LocalRendezvous r;
  Status got;
  r.RecvAsync(Key("a"), {},
              [&](const Status& s, const Rendezvous::Args&,
                  const Rendezvous::Args&, const Tensor&, bool) { got = s; });
  r.StartAbort(errors::InvalidArgument("partition 2 failed"));
  EXPECT_EQ(got.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.message(), "partition 2 failed");
  EXPECT_EQ(r.Send(Key("b"), {}, Tensor(), false).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor t;
  bool dead;
  EXPECT_EQ(r.Recv(Key("b"), {}, &t, &dead).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LocalRendezvousTest, DestroyingCallsPendingReceivers) {
  Status got;
  {
    LocalRendezvous r;
    r.RecvAsync(Key("a"), {},
                [&](const Status& s, const Rendezvous::Args&,
                    const Rendezvous::Args&, const Tensor&, bool) { got = s; });
  }
  EXPECT_EQ(got.code(), absl::StatusCode::kAborted);
}

TEST(LocalRendezvousTest, ManyThreadsEveryValueArrivesOnce) {
  LocalRendezvous r;
  constexpr int kN = 2000;
  std::atomic<int64_t> sum{0};
  std::thread sender([&] {
    for (int i = 0; i < kN; ++i) {
      ASSERT_OK(r.Send(Key(absl::StrCat("e", i)), {},
                       Tensor::FromVector<int64_t>({i}), false));
    }
  });
  std::thread receiver([&] {
    for (int i = kN - 1; i >= 0; --i) {
      r.RecvAsync(Key(absl::StrCat("e", i)), {},
                  [&](const Status& s, const Rendezvous::Args&,
                      const Rendezvous::Args&, const Tensor& v, bool) {
                    EXPECT_OK(s);
                    sum += v.flat<int64_t>()[0];
                  });
    }
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(sum.load(), int64_t{kN} * (kN - 1) / 2);
  EXPECT_EQ(r.NumPendingSends(), 0);
  EXPECT_EQ(r.NumPendingRecvs(), 0);
}

}  // namespace
}  // namespace runnel
