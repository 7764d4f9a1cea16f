#include "runnel/cpu/dnnl_util.h"

#include <algorithm>

#include "runnel/base/logging.h"

namespace runnel::cpu {

const dnnl::engine& DnnlEngine() {
  static const dnnl::engine* engine =
      new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

AlignedBuffer::AlignedBuffer(size_t bytes)
    : size(std::max<size_t>(64, (bytes + 63) / 64 * 64)),
      data(static_cast<char*>(std::aligned_alloc(64, size))) {
  RUNNEL_CHECK(data != nullptr);
}

}  // namespace runnel::cpu
