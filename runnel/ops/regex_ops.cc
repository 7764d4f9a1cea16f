// Regular-expression ops (TensorFlow's, declared in its string_ops.cc):
// RegexFullMatch, StaticRegexFullMatch, RegexReplace, StaticRegexReplace.
// Patterns use RE2 syntax (https://github.com/google/re2/wiki/Syntax) with
// RE2's default options, as in TensorFlow: UTF-8, `.` does not match a
// newline, matching is leftmost-first.
//
// TF 2 SavedModels carry StaticRegexFullMatch (pattern "^s3://.*" on the
// checkpoint prefix) in their saver functions, and tf.strings.regex_replace
// becomes StaticRegexReplace when its pattern and rewrite are Python
// strings.
//
// None of these ops is differentiable: their inputs are strings.
#include <memory>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "re2/re2.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// RE2's defaults, without its own error logging: a bad pattern is reported
// once, as the op's InvalidArgument.
RE2::Options QuietOptions() {
  RE2::Options options;
  options.set_log_errors(false);
  return options;
}

Status InvalidPattern(const RE2& re) {
  return errors::InvalidArgument("Invalid pattern: ", re.pattern(),
                                 ", error: ", re.error());
}

// The pattern of a dynamic-pattern op, compiled. Graphs nearly always feed
// the same pattern every step, so the last compiled one is kept (as TF's
// CachedRE2). Thread-safe: Compute may run for several steps at once.
class LastPattern {
 public:
  std::shared_ptr<const RE2> Get(const std::string& pattern) {
    {
      absl::MutexLock l(&mu_);
      if (last_ != nullptr && last_->pattern() == pattern) return last_;
    }
    auto re = std::make_shared<const RE2>(pattern, QuietOptions());
    absl::MutexLock l(&mu_);
    last_ = re;
    return re;
  }

 private:
  absl::Mutex mu_;
  std::shared_ptr<const RE2> last_ ABSL_GUARDED_BY(mu_);
};

// Scalar input `i` (named `what` in the error) as a string.
Status ScalarString(OpKernelContext* ctx, int i, const char* what,
                    const std::string** out) {
  const Tensor& t = ctx->input(i);
  if (t.dims() != 0) {
    return errors::InvalidArgument(what, " must be scalar, but received ",
                                   t.shape().DebugString());
  }
  *out = &t.scalar<tstring>();
  return absl::OkStatus();
}

// Input 0's shape; inputs [1, n) must be scalars (pattern, rewrite).
Status ScalarParamsShape(InferenceContext* c) {
  for (int i = 1; i < c->num_inputs(); ++i) {
    PartialTensorShape unused;
    RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  }
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// Per-element cost for ParallelFor: regex work is roughly linear in the
// input length.
int64_t AverageLength(const Tensor& t) {
  const auto in = t.flat<tstring>();
  if (in.size() == 0) return 0;
  int64_t total = 0;
  for (const tstring& s : in) total += static_cast<int64_t>(s.size());
  return total / static_cast<int64_t>(in.size());
}

// output[i] = whether `re` matches all of input[i].
void FullMatch(OpKernelContext* ctx, const RE2& re) {
  const Tensor& input = ctx->input(0);
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
  const auto in = input.flat<tstring>();
  bool* dst = out->data<bool>();
  ctx->intra_op_threadpool()->ParallelFor(
      static_cast<int64_t>(in.size()), 20 * (AverageLength(input) + 10),
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          dst[i] = RE2::FullMatch(in[i], re);
        }
      });
}

// Note [Regex rewrites]. `rewrite` may name capture groups: \0 is the whole
// match, \1..\9 the groups, \\ a backslash. As in TensorFlow (RE2::Replace
// and RE2::GlobalReplace, whose failures TF ignores), a rewrite naming a
// group the pattern lacks, or with a bad escape, leaves the string
// unchanged. With `replace_global` every non-overlapping match is replaced
// (an empty pattern matches between all characters), else the first only.
void Replace(OpKernelContext* ctx, const RE2& re, const std::string& rewrite,
             bool replace_global) {
  const Tensor& input = ctx->input(0);
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
  const auto in = input.flat<tstring>();
  tstring* dst = out->data<tstring>();
  ctx->intra_op_threadpool()->ParallelFor(
      static_cast<int64_t>(in.size()), 40 * (AverageLength(input) + 10),
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          std::string s = in[i];
          if (replace_global) {
            RE2::GlobalReplace(&s, re, rewrite);
          } else {
            RE2::Replace(&s, re, rewrite);
          }
          dst[i] = std::move(s);
        }
      });
}

// ---------------------------------------------------------------------------
// RegexFullMatch

REGISTER_OP("RegexFullMatch")
    .Input("input: string")
    .Input("pattern: string")
    .Output("output: bool")
    .SetShapeFn(ScalarParamsShape)
    .Doc(
        "Checks if the input matches the regex pattern.\n"
        "`input` is a string tensor of any shape; `pattern` a scalar string, "
        "an RE2 regular expression (https://github.com/google/re2/wiki/Syntax)"
        ". output[i] is true when the pattern matches the whole of input[i] "
        "(so the empty pattern matches only empty strings). InvalidArgument "
        "if the pattern does not compile. StaticRegexFullMatch takes the "
        "pattern as an attr.");

class RegexFullMatchKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const std::string* pattern;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 1, "Pattern", &pattern));
    std::shared_ptr<const RE2> re = last_.Get(*pattern);
    OP_REQUIRES(ctx, re->ok(), InvalidPattern(*re));
    FullMatch(ctx, *re);
  }

 private:
  LastPattern last_;
};
REGISTER_KERNEL_BUILDER(Name("RegexFullMatch").Device(kDeviceCpu),
                        RegexFullMatchKernel);
REGISTER_NO_GRADIENT("RegexFullMatch", "its inputs are strings");

// ---------------------------------------------------------------------------
// StaticRegexFullMatch

REGISTER_OP("StaticRegexFullMatch")
    .Input("input: string")
    .Attr("pattern: string")
    .Output("output: bool")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(
        "Checks if the input matches the regex pattern.\n"
        "Like RegexFullMatch with the RE2 `pattern` given as an attr: it is "
        "compiled once, when the kernel is built, and a pattern that does not "
        "compile is an InvalidArgument then.");

class StaticRegexFullMatchKernel : public OpKernel {
 public:
  explicit StaticRegexFullMatchKernel(OpKernelConstruction* c) : OpKernel(c) {
    std::string pattern;
    OP_REQUIRES_OK(c, c->GetAttr("pattern", &pattern));
    re_ = std::make_unique<const RE2>(pattern, QuietOptions());
    OP_REQUIRES(c, re_->ok(), InvalidPattern(*re_));
  }

  void Compute(OpKernelContext* ctx) override { FullMatch(ctx, *re_); }

 private:
  std::unique_ptr<const RE2> re_;
};
REGISTER_KERNEL_BUILDER(Name("StaticRegexFullMatch").Device(kDeviceCpu),
                        StaticRegexFullMatchKernel);
REGISTER_NO_GRADIENT("StaticRegexFullMatch", "its input is a string");

// ---------------------------------------------------------------------------
// RegexReplace

REGISTER_OP("RegexReplace")
    .Input("input: string")
    .Input("pattern: string")
    .Input("rewrite: string")
    .Output("output: string")
    .Attr("replace_global: bool = true")
    .SetShapeFn(ScalarParamsShape)
    .Doc(
        "Replaces matches of the `pattern` regular expression in `input` with "
        "the replacement string provided in `rewrite`.\n"
        "`pattern` (RE2 syntax) and `rewrite` are scalar strings; the output "
        "has the shape of `input`. In `rewrite`, \\0 is the whole match and "
        "\\1 to \\9 its capture groups. With `replace_global` (the default) "
        "every non-overlapping match is replaced, else only the first; an "
        "empty pattern matches before, between and after all characters. As "
        "in TensorFlow, a rewrite naming a group the pattern lacks leaves the "
        "strings unchanged. InvalidArgument if the pattern does not compile. "
        "StaticRegexReplace takes pattern and rewrite as attrs.");

class RegexReplaceKernel : public OpKernel {
 public:
  explicit RegexReplaceKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("replace_global", &replace_global_));
  }

  void Compute(OpKernelContext* ctx) override {
    const std::string *pattern, *rewrite;
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 1, "Pattern", &pattern));
    OP_REQUIRES_OK(ctx, ScalarString(ctx, 2, "Rewrite", &rewrite));
    std::shared_ptr<const RE2> re = last_.Get(*pattern);
    OP_REQUIRES(ctx, re->ok(), InvalidPattern(*re));
    Replace(ctx, *re, *rewrite, replace_global_);
  }

 private:
  bool replace_global_ = true;
  LastPattern last_;
};
REGISTER_KERNEL_BUILDER(Name("RegexReplace").Device(kDeviceCpu),
                        RegexReplaceKernel);
REGISTER_NO_GRADIENT("RegexReplace", "its inputs are strings");

// ---------------------------------------------------------------------------
// StaticRegexReplace

REGISTER_OP("StaticRegexReplace")
    .Input("input: string")
    .Attr("pattern: string")
    .Attr("rewrite: string")
    .Output("output: string")
    .Attr("replace_global: bool = true")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(
        "Replaces the match of pattern in input with rewrite.\n"
        "Like RegexReplace with `pattern` and `rewrite` given as attrs: the "
        "pattern is compiled once, when the kernel is built, and a pattern "
        "that does not compile is an InvalidArgument then.");

class StaticRegexReplaceKernel : public OpKernel {
 public:
  explicit StaticRegexReplaceKernel(OpKernelConstruction* c) : OpKernel(c) {
    std::string pattern;
    OP_REQUIRES_OK(c, c->GetAttr("pattern", &pattern));
    OP_REQUIRES_OK(c, c->GetAttr("rewrite", &rewrite_));
    OP_REQUIRES_OK(c, c->GetAttr("replace_global", &replace_global_));
    re_ = std::make_unique<const RE2>(pattern, QuietOptions());
    OP_REQUIRES(c, re_->ok(), InvalidPattern(*re_));
  }

  void Compute(OpKernelContext* ctx) override {
    Replace(ctx, *re_, rewrite_, replace_global_);
  }

 private:
  std::unique_ptr<const RE2> re_;
  std::string rewrite_;
  bool replace_global_ = true;
};
REGISTER_KERNEL_BUILDER(Name("StaticRegexReplace").Device(kDeviceCpu),
                        StaticRegexReplaceKernel);
REGISTER_NO_GRADIENT("StaticRegexReplace", "its input is a string");

}  // namespace
}  // namespace runnel
