// String ops: StringJoin (a Saver uses it to build temporary checkpoint
// names).
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// StringJoin

// A scalar if every input is one; else the merge of the non-scalar inputs
// of known rank (an input of unknown rank may be a scalar, so it does not
// constrain the result).
Status StringJoinShape(InferenceContext* c) {
  bool all_scalar = true;
  for (int i = 0; i < c->num_inputs(); ++i) {
    if (c->input(i).dims() != 0) all_scalar = false;
  }
  if (all_scalar) return shape_fns::ScalarShape(c);
  PartialTensorShape out;  // Unknown rank.
  for (int i = 0; i < c->num_inputs(); ++i) {
    const int rank = c->input(i).dims();
    if (rank <= 0) continue;  // Unknown rank (-1) or a scalar.
    PartialTensorShape merged;
    Status s = c->Merge(out, c->input(i), &merged);
    if (!s.ok()) {
      return c->InvalidArgument(
          "input ", i, " has shape ", c->input(i).DebugString(),
          ", incompatible with the other inputs' ", out.DebugString());
    }
    out = merged;
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("StringJoin")
    .Input("inputs: N * string")
    .Attr("N: int")
    .Attr("separator: string = ''")
    .Output("output: string")
    .SetShapeFn(StringJoinShape)
    .Doc(
        R"doc(Joins the strings in the given list of string tensors into one tensor.

Element-wise, with `separator` between the parts; scalar inputs are
broadcast to the shape of the others, which must all be equal.)doc");

class StringJoinKernel : public OpKernel {
 public:
  explicit StringJoinKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("separator", &separator_));
  }

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    TensorShape shape;  // Of the non-scalar inputs; a scalar if none.
    bool have_shape = false;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = ctx->input(i);
      if (t.dims() == 0) continue;
      if (!have_shape) {
        shape = t.shape();
        have_shape = true;
      } else {
        OP_REQUIRES(ctx, t.shape() == shape,
                    errors::InvalidArgument(
                        "input shapes do not match: ", shape.DebugString(),
                        " vs. ", t.shape().DebugString(), " (input ", i, ")"));
      }
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    auto dst = out->flat<tstring>();
    const std::string& sep = separator_;
    auto join = [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        std::string& s = dst[j];
        s.clear();
        for (int i = 0; i < n; ++i) {
          const Tensor& t = ctx->input(i);
          if (i > 0) s += sep;
          s += t.flat<tstring>()[t.dims() == 0 ? 0 : j];
        }
      }
    };
    ctx->intra_op_threadpool()->ParallelFor(dst.size(), 50 * (n + 1), join);
  }

 private:
  std::string separator_;
};
REGISTER_KERNEL_BUILDER(Name("StringJoin").Device(kDeviceCpu),
                        StringJoinKernel);

}  // namespace

REGISTER_NO_GRADIENT("StringJoin", "strings are not differentiable");

}  // namespace runnel
