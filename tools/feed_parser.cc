#include "tools/feed_parser.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runnel/framework/allocator.h"

namespace runnel {
namespace {

// The shape and row-major scalar tokens of a parsed value.
struct Literal {
  std::vector<absl::string_view> leaves;  // Views into the parsed text.
  std::vector<int64_t> shape;
};

// Quotes `s` for an error message, cut to a readable length (a feed may be
// megabytes of brackets).
std::string Quote(absl::string_view s) {
  constexpr size_t kShown = 48;
  return absl::StrCat("'", absl::CHexEscape(s.substr(0, kShown)),
                      s.size() > kShown ? "...'" : "'");
}

class LiteralParser {
 public:
  explicit LiteralParser(absl::string_view s) : s_(s) {}

  Status Parse(Literal* out) {
    RETURN_IF_ERROR(Value(0, out));
    SkipSpace();
    if (pos_ != s_.size()) return Error("unexpected text");
    out->shape.assign(dims_.begin(), dims_.end());
    return absl::OkStatus();
  }

 private:
  // One value at list depth `depth`; recursion is bounded by kMaxFeedDepth.
  Status Value(int depth, Literal* out) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '[') {
      if (depth >= kMaxFeedDepth) {
        return Error(absl::StrCat("lists nested deeper than ", kMaxFeedDepth,
                                  " levels (the limit)"));
      }
      ++pos_;
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return SetDim(depth, 0, /*empty=*/true);
      }
      int64_t count = 0;
      for (;;) {
        RETURN_IF_ERROR(Value(depth + 1, out));
        ++count;
        SkipSpace();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          break;
        }
        return Error("expected ',' or ']'");
      }
      return SetDim(depth, count, /*empty=*/false);
    }
    // A scalar: a quoted string or a bare word.
    if (leaf_depth_ >= 0 && leaf_depth_ != depth)
      return Error("ragged nested list");
    leaf_depth_ = depth;
    if (static_cast<int64_t>(out->leaves.size()) >= kMaxFeedElements) {
      return Error(absl::StrCat("more than ", kMaxFeedElements,
                                " elements (the limit)"));
    }
    if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {
      const char q = s_[pos_];
      const size_t end = s_.find(q, pos_ + 1);
      if (end == absl::string_view::npos) return Error("unterminated string");
      out->leaves.emplace_back(s_.substr(pos_, end - pos_ + 1));
      pos_ = end + 1;
      return absl::OkStatus();
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != ']' &&
           s_[pos_] != '[' && !IsSpace(s_[pos_])) {
      ++pos_;
    }
    if (start == pos_) return Error("expected a value");
    out->leaves.emplace_back(s_.substr(start, pos_ - start));
    return absl::OkStatus();
  }

  // Records that the list at `depth` has `n` items; every list at one depth
  // must have the same count, and scalars must all sit at one depth.
  Status SetDim(int depth, int64_t n, bool empty) {
    if (static_cast<int>(dims_.size()) <= depth) dims_.resize(depth + 1, -1);
    if (dims_[depth] >= 0 && dims_[depth] != n)
      return Error("ragged nested list");
    dims_[depth] = n;
    if (empty) {
      if (leaf_depth_ >= 0 && leaf_depth_ != depth + 1)
        return Error("ragged nested list");
      leaf_depth_ = depth + 1;
    }
    return absl::OkStatus();
  }

  static bool IsSpace(char c) { return c == ' ' || c == '\t'; }
  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }
  Status Error(absl::string_view what) const {
    return errors::InvalidArgument("cannot parse value ", Quote(s_),
                                   " at offset ", pos_, ": ", what);
  }

  absl::string_view s_;
  size_t pos_ = 0;
  std::vector<int64_t> dims_;  // Items per list, by depth.
  int leaf_depth_ = -1;        // The depth scalars sit at, once known.
};

bool IsInfOrNanWord(absl::string_view tok) {
  if (!tok.empty() && (tok[0] == '+' || tok[0] == '-')) tok.remove_prefix(1);
  return absl::EqualsIgnoreCase(tok, "inf") ||
         absl::EqualsIgnoreCase(tok, "infinity") ||
         absl::EqualsIgnoreCase(tok, "nan");
}

template <typename T>
bool ParseScalar(absl::string_view tok, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (tok == "true" || tok == "1") return *out = true, true;
    if (tok == "false" || tok == "0") return *out = false, true;
    return false;
  } else if constexpr (std::is_floating_point_v<T>) {
    double d;
    if (!absl::SimpleAtod(tok, &d)) return false;
    // SimpleAtod turns an overflow ("1e999") into inf; only the words
    // inf/nan may mean that. Likewise for a double too big for a float.
    if (!std::isfinite(d) && !IsInfOrNanWord(tok)) return false;
    if (std::isfinite(d) &&
        std::fabs(d) > static_cast<double>(std::numeric_limits<T>::max())) {
      return false;
    }
    *out = static_cast<T>(d);
    return true;
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!tok.empty() && tok[0] == '-') return false;
    uint64_t v;
    if (!absl::SimpleAtoi(tok, &v)) return false;
    if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    *out = static_cast<T>(v);
    return true;
  } else {
    int64_t v;
    if (!absl::SimpleAtoi(tok, &v)) return false;
    if (v < static_cast<int64_t>(std::numeric_limits<T>::lowest()) ||
        v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return false;
    }
    *out = static_cast<T>(v);
    return true;
  }
}

absl::string_view Unquote(absl::string_view tok) {
  if (tok.size() >= 2 && (tok[0] == '"' || tok[0] == '\'') &&
      tok.back() == tok[0]) {
    return tok.substr(1, tok.size() - 2);
  }
  return tok;
}

}  // namespace

StatusOr<Tensor> ParseFeedValue(absl::string_view text, DataType dtype,
                                const PartialTensorShape& declared) {
  Literal lit;
  RETURN_IF_ERROR(LiteralParser(text).Parse(&lit));
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(lit.shape));
  // A single value for a placeholder declared with one element ([1], [1,1]).
  if (shape.dims() == 0 && declared.IsFullyDefined() &&
      declared.num_elements() == 1) {
    ASSIGN_OR_RETURN(shape, declared.AsTensorShape());
  }
  // The parser's dims and scalars agree by construction; the writes below
  // index by scalar, so say so rather than trust it.
  if (shape.num_elements() != static_cast<int64_t>(lit.leaves.size())) {
    return errors::Internal("feed value ", Quote(text), " has ",
                            lit.leaves.size(), " scalars but shape ",
                            shape.DebugString());
  }
  auto bad = [&](absl::string_view tok) {
    return errors::InvalidArgument(Quote(tok), " is not a valid ",
                                   DataTypeString(dtype));
  };
  if (dtype == DT_STRING) {
    ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(cpu_allocator(), dtype, shape));
    auto flat = t.flat<tstring>();
    for (size_t i = 0; i < lit.leaves.size(); ++i) {
      flat[i] = std::string(Unquote(lit.leaves[i]));
    }
    return t;
  }
  Status status;
  auto fill = [&]<typename T>(Tensor* t) {
    auto flat = t->flat<T>();
    for (size_t i = 0; i < lit.leaves.size(); ++i) {
      if (!ParseScalar<T>(lit.leaves[i], &flat[i])) {
        status = bad(lit.leaves[i]);
        return;
      }
    }
  };
  bool known = dtype == DT_BOOL;
  if (!known) {
    DispatchNumeric(dtype, [&]<typename T>() { known = true; });
  }
  if (!known) {
    return errors::InvalidArgument("cannot feed dtype ", DataTypeString(dtype),
                                   " from text");
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(cpu_allocator(), dtype, shape));
  if (dtype == DT_BOOL) {
    fill.template operator()<bool>(&t);
  } else {
    DispatchNumeric(dtype,
                    [&]<typename T>() { fill.template operator()<T>(&t); });
  }
  RETURN_IF_ERROR(status);
  return t;
}

}  // namespace runnel
