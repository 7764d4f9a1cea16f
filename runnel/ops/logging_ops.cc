// Logging and checking ops (TensorFlow's logging_ops and CheckNumerics):
// Assert, Print, PrintV2, StringFormat, CheckNumerics. TF 1.x training
// graphs carry Assert and CheckNumerics nodes (tf.debugging, Keras's shape
// checks, tf.add_check_numerics_ops), and TF 2's tf.print becomes
// StringFormat + PrintV2.
//
// Note [Summarized tensors]. Tensors in messages are written as TensorFlow
// writes them. Assert and Print use its legacy form (Tensor::SummarizeValue
// in TF): the first `summarize` elements in row-major order separated by
// spaces ("1 2 3"), nested in brackets when the rank is 2 or more
// ("[1 2][3 4]" inside an outer pair), then "..." right after the last one
// shown when some were left out. StringFormat (and so tf.print) uses the
// NumPy-like form (SummarizeValue with print_v2): per dimension, all elements
// if there are at most 2 * summarize, else the first and last `summarize`
// around
// "..."; elements of the last dimension separated by spaces, rows by a
// newline and one space per depth; strings in double quotes; a negative
// summarize shows everything.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"

namespace runnel {
namespace {

// Element i as TF prints it: strings raw (legacy) or quoted (print_v2),
// booleans 1/0 (legacy) or True/False (print_v2).
std::string Element(const Tensor& t, int64_t i, bool print_v2) {
  if (t.dtype() == DT_STRING) {
    const std::string& s = t.flat<tstring>()[i];
    return print_v2 ? absl::StrCat("\"", s, "\"") : s;
  }
  if (t.dtype() == DT_BOOL) {
    const bool b = t.flat<bool>()[i];
    if (print_v2) return b ? "True" : "False";
    return b ? "1" : "0";
  }
  return t.ElementString(i);
}

// Note [Summarized tensors], legacy form.
std::string SummarizeLegacy(const Tensor& t, int64_t summarize) {
  const int64_t n = t.NumElements();
  if (t.dims() == 0) return n == 1 ? Element(t, 0, false) : "";
  const int64_t limit = summarize < 0 ? n : std::min(n, summarize);
  if (t.dims() == 1) {
    std::vector<std::string> parts;
    for (int64_t i = 0; i < limit; ++i) parts.push_back(Element(t, i, false));
    std::string out = absl::StrJoin(parts, " ");
    if (limit < n) out += "...";
    return out;
  }
  // Sub-array sizes per dimension, to open and close brackets.
  std::vector<int64_t> block(t.dims(), 1);
  int64_t b = 1;
  for (int d = t.dims() - 1; d >= 0; --d) {
    b *= t.dim_size(d);
    block[d] = b;
  }
  std::string out;
  for (int64_t i = 0; i < limit; ++i) {
    bool opened = false;
    for (int d = 0; d < t.dims(); ++d) {
      if (i % block[d] == 0) {
        out += '[';
        opened = true;
      }
    }
    if (!opened) out += ' ';
    out += Element(t, i, false);
    for (int d = 0; d < t.dims(); ++d) {
      if ((i + 1) % block[d] == 0) out += ']';
    }
  }
  if (limit < n) out += "...";
  return out;
}

// Note [Summarized tensors], NumPy-like form: the sub-array of dimension
// `d` starting at element `offset`.
void SummarizeV2Dim(const Tensor& t, int d, int64_t offset,
                    const std::vector<int64_t>& block, int64_t summarize,
                    std::string* out) {
  const int64_t size = t.dim_size(d);
  // size > 2 * summarize, without overflowing for a huge summarize.
  const bool cut = summarize >= 0 && summarize <= (size - 1) / 2;
  const bool last = d == t.dims() - 1;
  const std::string sep =
      last ? " " : absl::StrCat("\n", std::string(d + 1, ' '));
  *out += '[';
  bool first = true;
  for (int64_t i = 0; i < size; ++i) {
    if (cut && i == summarize) {
      *out += first ? "..." : absl::StrCat(sep, "...");
      first = false;
      i = size - summarize - 1;
      continue;
    }
    if (!first) *out += sep;
    first = false;
    const int64_t at = offset + i * (last ? 1 : block[d + 1]);
    if (last) {
      *out += Element(t, at, true);
    } else {
      SummarizeV2Dim(t, d + 1, at, block, summarize, out);
    }
  }
  *out += ']';
}

std::string SummarizeV2(const Tensor& t, int64_t summarize) {
  if (t.dims() == 0) return Element(t, 0, true);
  for (int d = 0; d < t.dims(); ++d) {
    if (t.dim_size(d) == 0) {
      return std::string(t.dims(), '[') + std::string(t.dims(), ']');
    }
  }
  std::vector<int64_t> block(t.dims() + 1, 1);
  for (int d = t.dims() - 1; d >= 0; --d) {
    block[d] = block[d + 1] * t.dim_size(d);
  }
  std::string out;
  SummarizeV2Dim(t, 0, 0, block, summarize, &out);
  return out;
}

// ---------------------------------------------------------------------------
// Assert

REGISTER_OP("Assert")
    .Input("condition: bool")
    .Input("data: T")
    .Attr("T: list(type) >= 0")
    .Attr("summarize: int = 3")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      // A scalar, or TF's legacy scalar [1].
      const PartialTensorShape& cond = c->input(0);
      if (cond.dims() > 1 || (cond.dims() == 1 && cond.dim_size(0) > 1)) {
        return errors::InvalidArgument(
            "Assert: condition must be a scalar, got ", cond.DebugString());
      }
      return absl::OkStatus();
    })
    .Doc(R"doc(Fails the step with InvalidArgument if `condition` is false.

condition is a scalar (or a 1-element vector, as TensorFlow accepts); the
error reads "assertion failed: " and then each data tensor in brackets, its
first `summarize` elements in TensorFlow's legacy form, separated by spaces.
No outputs: steps depend on it through control edges.)doc");

class AssertKernel : public OpKernel {
 public:
  explicit AssertKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("summarize", &summarize_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    OP_REQUIRES(
        ctx,
        cond.NumElements() == 1 && (cond.dims() == 0 || (cond.dims() == 1)),
        errors::InvalidArgument("In[0] should be a scalar: ",
                                cond.shape().DebugString()));
    if (cond.flat<bool>()[0]) return;
    std::string msg = "assertion failed: ";
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      absl::StrAppend(&msg, "[", SummarizeLegacy(ctx->input(i), summarize_),
                      "]");
      if (i + 1 < ctx->num_inputs()) msg += ' ';
    }
    ctx->SetStatus(errors::InvalidArgument(msg));
  }

 private:
  int64_t summarize_ = 3;
};
REGISTER_KERNEL_BUILDER(Name("Assert").Device(kDeviceCpu), AssertKernel);

// ---------------------------------------------------------------------------
// Print

REGISTER_OP("Print")
    .Input("input: T")
    .Input("data: U")
    .Output("output: T")
    .Attr("T: type")
    .Attr("U: list(type) >= 0")
    .Attr("message: string = ''")
    .Attr("first_n: int = -1")
    .Attr("summarize: int = 3")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(R"doc(Passes `input` through, printing `data` to standard error.

Each run prints `message` and then each data tensor in brackets (its first
`summarize` elements, TensorFlow's legacy form) on one line; with first_n >= 0
only the first first_n runs of this node print.)doc");

class PrintKernel : public OpKernel {
 public:
  explicit PrintKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("message", &message_));
    OP_REQUIRES_OK(c, c->GetAttr("first_n", &first_n_));
    OP_REQUIRES_OK(c, c->GetAttr("summarize", &summarize_));
  }
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, ctx->input_value(0));
    if (first_n_ >= 0) {
      absl::MutexLock l(&mu_);
      if (printed_ >= first_n_) return;
      ++printed_;
    }
    std::string msg = message_;
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      absl::StrAppend(&msg, "[", SummarizeLegacy(ctx->input(i), summarize_),
                      "]");
    }
    msg += '\n';
    std::fwrite(msg.data(), 1, msg.size(), stderr);
  }

 private:
  std::string message_;
  int64_t first_n_ = -1;
  int64_t summarize_ = 3;
  absl::Mutex mu_;
  int64_t printed_ ABSL_GUARDED_BY(mu_) = 0;
};
REGISTER_KERNEL_BUILDER(Name("Print").Device(kDeviceCpu), PrintKernel);

// ---------------------------------------------------------------------------
// PrintV2

REGISTER_OP("PrintV2")
    .Input("input: string")
    .Attr("output_stream: string = 'stderr'")
    .Attr("end: string = '\n'")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      return c->WithRank(0, 0, &unused);
    })
    .Doc(R"doc(Prints a string scalar, then `end`.

output_stream is "stderr", "stdout", "log(info)", "log(warning)" or
"log(error)" (the log streams are standard error with a level prefix).
TensorFlow's "file://PATH" streams are refused: an op in a graph must not
choose files to write (see SECURITY.md).)doc");

class PrintV2Kernel : public OpKernel {
 public:
  explicit PrintV2Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("output_stream", &stream_));
    OP_REQUIRES_OK(c, c->GetAttr("end", &end_));
    OP_REQUIRES(
        c,
        stream_ == "stderr" || stream_ == "stdout" || stream_ == "log(info)" ||
            stream_ == "log(warning)" || stream_ == "log(error)",
        errors::InvalidArgument("PrintV2: output_stream '", stream_,
                                "' is not one of stderr, stdout, log(info), "
                                "log(warning), log(error)",
                                stream_.rfind("file://", 0) == 0
                                    ? " (graphs may not write files)"
                                    : ""));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    OP_REQUIRES(
        ctx, input.dims() == 0,
        errors::InvalidArgument("Input is expected to be scalar, but got ",
                                input.shape().DebugString()));
    std::string text = input.scalar<tstring>();
    if (stream_ == "log(info)") text = "I " + text;
    if (stream_ == "log(warning)") text = "W " + text;
    if (stream_ == "log(error)") text = "E " + text;
    text += end_;
    std::FILE* out = stream_ == "stdout" ? stdout : stderr;
    std::fwrite(text.data(), 1, text.size(), out);
    std::fflush(out);
  }

 private:
  std::string stream_, end_;
};
REGISTER_KERNEL_BUILDER(Name("PrintV2").Device(kDeviceCpu), PrintV2Kernel);

// ---------------------------------------------------------------------------
// StringFormat

// The template's pieces around its placeholders.
StatusOr<std::vector<std::string>> SplitTemplate(const std::string& tmpl,
                                                 const std::string& placeholder,
                                                 int64_t num_inputs) {
  if (placeholder.empty()) {
    return errors::InvalidArgument("StringFormat: the placeholder is empty");
  }
  std::vector<std::string> pieces = absl::StrSplit(tmpl, placeholder);
  if (static_cast<int64_t>(pieces.size()) != num_inputs + 1) {
    return errors::InvalidArgument(
        "num placeholders in template and num inputs must match: ",
        pieces.size() - 1, " vs. ", num_inputs);
  }
  return pieces;
}

REGISTER_OP("StringFormat")
    .Input("inputs: T")
    .Output("output: string")
    .Attr("T: list(type) >= 0")
    .Attr("template: string = '%s'")
    .Attr("placeholder: string = '%s'")
    .Attr("summarize: int = 3")
    .SetShapeFn([](InferenceContext* c) {
      std::string tmpl, placeholder;
      auto get = [&](const char* name, std::string* v) {
        auto it = c->attrs().find(name);
        if (it != c->attrs().end()) *v = it->second.s();
      };
      tmpl = "%s";
      placeholder = "%s";
      get("template", &tmpl);
      get("placeholder", &placeholder);
      RETURN_IF_ERROR(
          SplitTemplate(tmpl, placeholder, c->num_inputs()).status());
      c->set_output(0, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(R"doc(Formats tensors into a string scalar (tf.strings.format).

Each `placeholder` in `template` is replaced by the next input, summarized
in TensorFlow's NumPy-like form with `summarize` elements at each end of
every dimension (Note [Summarized tensors]); there must be exactly as many
placeholders as inputs.)doc");

class StringFormatKernel : public OpKernel {
 public:
  explicit StringFormatKernel(OpKernelConstruction* c) : OpKernel(c) {
    std::string tmpl, placeholder;
    OP_REQUIRES_OK(c, c->GetAttr("template", &tmpl));
    OP_REQUIRES_OK(c, c->GetAttr("placeholder", &placeholder));
    OP_REQUIRES_OK(c, c->GetAttr("summarize", &summarize_));
    auto pieces = SplitTemplate(tmpl, placeholder, c->num_inputs());
    OP_REQUIRES_OK(c, pieces.status());
    pieces_ = *std::move(pieces);
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    std::string out = pieces_[0];
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      absl::StrAppend(&out, SummarizeV2(ctx->input(i), summarize_),
                      pieces_[i + 1]);
    }
    Tensor* t = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &t));
    t->scalar<tstring>() = std::move(out);
  }

 private:
  std::vector<std::string> pieces_;
  int64_t summarize_ = 3;
};
REGISTER_KERNEL_BUILDER(Name("StringFormat").Device(kDeviceCpu),
                        StringFormatKernel);

// ---------------------------------------------------------------------------
// CheckNumerics

REGISTER_OP("CheckNumerics")
    .Input("tensor: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double}")
    .Attr("message: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(R"doc(Passes `tensor` through, or fails on NaN or infinite values.

The error is InvalidArgument "<message> : Tensor had NaN values" (or "Inf",
or "Inf and NaN"), as in TensorFlow.)doc");

template <typename T>
float AsFloat(T v) {
  if constexpr (std::is_same_v<T, half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return BFloat16ToFloat(v);
  } else {
    return static_cast<float>(v);
  }
}

class CheckNumericsKernel : public OpKernel {
 public:
  explicit CheckNumericsKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("message", &message_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    bool nan = false, inf = false;
    auto scan = [&]<typename T>() {
      auto v = in.flat<T>();
      for (size_t i = 0; i < v.size(); ++i) {
        double d;
        if constexpr (std::is_same_v<T, double>) {
          d = v[i];
        } else {
          d = AsFloat(v[i]);
        }
        nan |= std::isnan(d);
        inf |= std::isinf(d);
      }
    };
    switch (in.dtype()) {
      case DT_FLOAT:
        scan.operator()<float>();
        break;
      case DT_DOUBLE:
        scan.operator()<double>();
        break;
      case DT_HALF:
        scan.operator()<half>();
        break;
      case DT_BFLOAT16:
        scan.operator()<bfloat16>();
        break;
      default:
        ctx->SetStatus(errors::InvalidArgument(
            "CheckNumerics: unsupported dtype ", DataTypeString(in.dtype())));
        return;
    }
    if (nan || inf) {
      const char* what = nan && inf ? "Inf and NaN" : nan ? "NaN" : "Inf";
      ctx->SetStatus(
          errors::InvalidArgument(message_, " : Tensor had ", what, " values"));
      return;
    }
    ctx->set_output(0, ctx->input_value(0));
  }

 private:
  std::string message_;
};
REGISTER_KERNEL_BUILDER(Name("CheckNumerics").Device(kDeviceCpu),
                        CheckNumericsKernel);

}  // namespace
}  // namespace runnel
