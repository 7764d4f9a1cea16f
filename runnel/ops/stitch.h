// The merge step shared by DynamicStitch (slicing_ops.cc) and
// ParallelDynamicStitch (embedding_ops.cc), after each kernel has validated
// its inputs.
#ifndef RUNNEL_OPS_STITCH_H_
#define RUNNEL_OPS_STITCH_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/tensor.h"

namespace runnel {

// Writes merged[indices[m][j], ...] = data[m][j, ...] into `dst`, which has
// `rows` rows of `row` elements of the moved word type W (see
// runnel/ops/moved_words.h). The kernel's inputs 0..n-1 are the int32
// indices, every one already checked to lie in [0, rows); inputs n..2n-1 the
// data, data[m] holding indices[m].NumElements() rows. Where an index appears
// more than once the last (highest m, then latest position) wins; rows that
// no index names are zero.
//
// Few indices for many rows (a large max index): zero the output and copy
// the named rows in order, so the cost is the output's bytes and not a loop
// over every row. Otherwise every output row is written once, in parallel,
// from a table of the last position naming it.
template <typename W>
Status StitchRows(OpKernelContext* ctx, int n, int64_t rows, int64_t row,
                  W* dst) {
  // Rough cost in ns of moving one element, for ParallelRange.
  constexpr int64_t kMoveNs = std::is_same_v<W, tstring> ? 40 : 1;
  std::vector<int64_t> starts(n + 1, 0);
  for (int m = 0; m < n; ++m) {
    starts[m + 1] = starts[m] + ctx->input(m).NumElements();
  }
  if (starts[n] < rows / 4) {
    cpu::ParallelRange(ctx->intra_op_threadpool(), rows, row * kMoveNs + 1,
                       [&](int64_t r0, int64_t r1) {
                         std::fill(dst + r0 * row, dst + r1 * row, W{});
                       });
    for (int m = 0; m < n; ++m) {
      const int32_t* idx = ctx->input(m).data<int32_t>();
      const W* in = static_cast<const W*>(ctx->input(n + m).raw_data());
      const int64_t count = ctx->input(m).NumElements();
      for (int64_t j = 0; j < count; ++j) {
        std::copy_n(in + j * row, row, dst + int64_t{idx[j]} * row);
      }
    }
    return absl::OkStatus();
  }
  // source[r]: the last position, in the concatenation of the indices
  // inputs, naming row r, or -1. A temp tensor, so that a failed allocation
  // is a Status.
  Tensor source_t;
  RETURN_IF_ERROR(ctx->allocate_temp(DT_INT64, TensorShape({rows}), &source_t));
  int64_t* source = source_t.data<int64_t>();
  std::fill_n(source, rows, -1);
  for (int m = 0; m < n; ++m) {
    const int32_t* idx = ctx->input(m).data<int32_t>();
    for (int64_t j = 0; j < ctx->input(m).NumElements(); ++j) {
      source[idx[j]] = starts[m] + j;
    }
  }
  cpu::ParallelRange(
      ctx->intra_op_threadpool(), rows, row * kMoveNs + 5,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          W* o = dst + r * row;
          const int64_t q = source[r];
          if (q < 0) {
            std::fill_n(o, row, W{});
            continue;
          }
          const int m = static_cast<int>(
              std::upper_bound(starts.begin(), starts.end(), q) -
              starts.begin() - 1);
          const W* in = static_cast<const W*>(ctx->input(n + m).raw_data());
          std::copy_n(in + (q - starts[m]) * row, row, o);
        }
      });
  return absl::OkStatus();
}

}  // namespace runnel

#endif  // RUNNEL_OPS_STITCH_H_
