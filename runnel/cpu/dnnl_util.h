// Shared pieces for the back-ends that run oneDNN primitives (conv.cc,
// gemm.cc): the process's CPU engine and 64-byte aligned execution buffers.
//
// Thread safety: DnnlEngine() may be called from any thread (the engine is
// created once and never destroyed); an AlignedBuffer belongs to one owner.
#ifndef RUNNEL_CPU_DNNL_UTIL_H_
#define RUNNEL_CPU_DNNL_UTIL_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

namespace runnel::cpu {

// oneDNN's CPU engine, shared by every primitive of the process.
const dnnl::engine& DnnlEngine();

// 64-byte aligned scratch memory of at least `bytes` (at least 64) bytes.
struct AlignedBuffer {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  size_t size = 0;
  std::unique_ptr<char, Free> data;
};

}  // namespace runnel::cpu

#endif  // RUNNEL_CPU_DNNL_UTIL_H_
