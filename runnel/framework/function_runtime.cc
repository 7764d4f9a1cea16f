#include "runnel/framework/function_runtime.h"

#include <atomic>

namespace runnel {
namespace {

uint64_t NextRuntimeId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

FunctionLibraryRuntime::FunctionLibraryRuntime() : id_(NextRuntimeId()) {}

}  // namespace runnel
