// distributed_transfer: how fast tensors cross tasks on loopback.
//  * recv_tensor: a float variable of N bytes on the PS task is consumed on
//    the worker task (two `runnel server` processes), so each step moves it
//    once with RecvTensor. Throughput = N / median step time.
//  * recv_tensor_bf16: the same with RPCOptions.
//    runnel_float_transfer_as_bfloat16 (N/2 bytes on the wire; throughput
//    counts the N bytes of floats delivered).
//  * fetch: the client fetches an N-byte variable living on the task of its
//    master (one RunStep response carries it).
//  * tcp: the physical reference, a raw loopback TCP socket copying N bytes
//    from one thread to another in this process.
//
//   distributed_transfer [--max_bytes N]
//
// Figure lines:
//   distributed_transfer runnel bytes=N throughput=X GB/s   (recv_tensor)
//   distributed_transfer runnel_bf16 bytes=N throughput=X GB/s
//   distributed_transfer runnel_fetch bytes=N throughput=X GB/s
//   distributed_transfer tcp bytes=N throughput=X GB/s
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/numbers.h"
#include "benchmarks/distributed_util.h"

namespace runnel::bench {
namespace {

std::string VarGraph(int64_t floats, const std::string& device,
                     const std::string& prefix) {
  const std::string v = prefix + "v";
  return NodeText(v, "VariableV2", {}, device,
                  absl::StrCat("attr { key: \"dtype\" value { type: DT_FLOAT } "
                               "} attr { key: \"shape\" value { shape { dim { "
                               "size: ",
                               floats, " } } } }")) +
         NodeText(prefix + "dims", "Const", {}, device,
                  absl::StrCat("attr { key: \"dtype\" value { type: DT_INT32 "
                               "} } attr { key: \"value\" value { tensor { "
                               "dtype: DT_INT32 tensor_shape { dim { size: 1 "
                               "} } int_val: ",
                               floats, " } } }")) +
         ScalarConst(prefix + "one", 1, device) +
         NodeText(prefix + "fill", "Fill", {prefix + "dims", prefix + "one"},
                  device,
                  absl::StrCat(kTFloat,
                               " attr { key: \"index_type\" value { type: "
                               "DT_INT32 } }")) +
         NodeText(prefix + "init", "Assign", {v, prefix + "fill"}, device,
                  kTFloat) +
         NodeText(prefix + "read", "Identity", {v}, device, kTFloat);
}

double MedianStepSeconds(Session* s, const std::vector<std::string>& fetches,
                         const std::vector<std::string>& targets, int reps) {
  std::vector<double> t;
  std::vector<Tensor> out;
  for (int i = 0; i < reps + 2; ++i) {
    const double t0 = NowSeconds();
    Check(s->Run({}, fetches, targets, &out), "step");
    if (i >= 2) t.push_back(NowSeconds() - t0);
  }
  return Median(t);
}

double TcpSeconds(int64_t bytes, int reps) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "tcp: cannot listen on 127.0.0.1\n");
    std::exit(1);
  }
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::fprintf(stderr, "tcp: cannot connect\n");
    std::exit(1);
  }
  int server = accept(listener, nullptr, nullptr);
  std::vector<char> src(bytes, 1), dst(bytes);
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    const double t0 = NowSeconds();
    std::thread writer([&] {
      int64_t off = 0;
      while (off < bytes) {
        ssize_t n = write(client, src.data() + off, bytes - off);
        if (n <= 0) std::exit(1);
        off += n;
      }
    });
    int64_t off = 0;
    while (off < bytes) {
      ssize_t n = read(server, dst.data() + off, bytes - off);
      if (n <= 0) std::exit(1);
      off += n;
    }
    writer.join();
    if (r > 0) t.push_back(NowSeconds() - t0);
  }
  close(client);
  close(server);
  close(listener);
  return Median(t);
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) {
  using namespace runnel::bench;
  int64_t max_bytes = 100 << 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max_bytes" && i + 1 < argc &&
        absl::SimpleAtoi(argv[i + 1], &max_bytes) && max_bytes >= 4096) {
      ++i;
    } else {
      std::fprintf(stderr, "usage: distributed_transfer [--max_bytes N]\n");
      return 2;
    }
  }
  auto cluster = runnel::LocalClusterProcesses::Create(
      RunnelBinary(argv[0]), {{"ps", 1}, {"worker", 1}});
  Check(cluster.status(), "start cluster");
  const std::string worker = Dev("worker", 0);
  for (int64_t bytes : {int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20,
                        int64_t{16} << 20, int64_t{100} << 20}) {
    if (bytes > max_bytes) break;
    const int64_t floats = bytes / 4;
    const int reps = bytes >= (16 << 20) ? 10 : 50;
    // On the PS, consumed on the worker: one RecvTensor per step.
    // Variables live on as long as their servers: a fresh name per size.
    const std::string ps = absl::StrCat("ps", bytes, "_");
    const std::string w = absl::StrCat("w", bytes, "_");
    std::string g =
        VarGraph(floats, Dev("ps", 0), ps) + VarGraph(floats, worker, w) +
        NodeText("use", "Identity", {ps + "read"}, worker, kTFloat) +
        NodeText("done", "NoOp", {"^use"}, worker);
    auto s = RemoteSession((*cluster)->target("worker", 0), g);
    Check(s->Run({}, {}, {ps + "init", w + "init"}, nullptr), "init");
    const double recv = MedianStepSeconds(s.get(), {}, {"done"}, reps);
    std::printf("distributed_transfer runnel bytes=%lld throughput=%.3f GB/s\n",
                static_cast<long long>(bytes), bytes / recv / 1e9);
    {
      runnel::ConfigProto config;
      config.mutable_rpc_options()->set_runnel_float_transfer_as_bfloat16(true);
      auto bf16 = RemoteSession((*cluster)->target("worker", 0), g, config);
      const double t = MedianStepSeconds(bf16.get(), {}, {"done"}, reps);
      std::printf(
          "distributed_transfer runnel_bf16 bytes=%lld throughput=%.3f GB/s\n",
          static_cast<long long>(bytes), bytes / t / 1e9);
      (void)bf16->Close();
    }
    const double fetch = MedianStepSeconds(s.get(), {w + "read"}, {}, reps);
    std::printf(
        "distributed_transfer runnel_fetch bytes=%lld throughput=%.3f GB/s\n",
        static_cast<long long>(bytes), bytes / fetch / 1e9);
    const double tcp = TcpSeconds(bytes, reps);
    std::printf("distributed_transfer tcp bytes=%lld throughput=%.3f GB/s\n",
                static_cast<long long>(bytes), bytes / tcp / 1e9);
    std::fflush(stdout);
    (void)s->Close();
  }
  return 0;
}
