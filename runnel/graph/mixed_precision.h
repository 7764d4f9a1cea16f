// The bfloat16 compute pass: TensorFlow's auto_mixed_precision_onednn_bfloat16
// (RewriterConfig field 31; the deprecated auto_mixed_precision_mkl, 25,
// too), done Runnel's way. Every float MatMul, _FusedMatMul, Conv2D,
// _FusedConv2D, Conv2DBackpropInput and Conv2DBackpropFilter on a CPU
// device gets the internal attr kBf16ComputeAttr, and its kernel rounds its
// two operands to bfloat16 and runs oneDNN's AVX512-BF16 kernels,
// accumulating and returning fp32 (cpu::GemmBf16, Conv2DRunner::
// SetBf16Compute). Variables,
// optimizer updates, activations and losses stay fp32 (fp32 master
// weights), so no loss scaling is needed; only the products' inputs lose
// precision (8 bits of mantissa). TensorFlow's pass instead retypes the
// nodes to DT_BFLOAT16 with Cast nodes around them, which also rounds the
// products' outputs.
//
// On a CPU without native bf16 dot products the kernels run in fp32 (the
// attr is a request, not a promise), so results then equal fp32's.
//
// Runs last in the step compiler (runnel/graph/optimizer.h,
// GraphOptimizerOptions::bf16_compute); off by default.
//
// Thread safety: mutates `g`, which must not be shared while it runs.
#ifndef RUNNEL_GRAPH_MIXED_PRECISION_H_
#define RUNNEL_GRAPH_MIXED_PRECISION_H_

#include "runnel/graph/graph.h"

namespace runnel {

// Marks the nodes above; returns how many it marked.
int MarkBf16Compute(Graph* g);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_MIXED_PRECISION_H_
