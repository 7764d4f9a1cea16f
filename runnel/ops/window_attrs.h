// The window attrs of the pooling and convolution families (pooling_ops.cc,
// conv_ops.cc), read and validated once for shape functions and kernels
// alike: data_format, padding, explicit_paddings, strides, and ksize
// (pooling) or dilations (convolutions). Private to runnel/ops.
//
// Errors are InvalidArgument naming the attr and its values; callers add the
// node's prefix.
#ifndef RUNNEL_OPS_WINDOW_ATTRS_H_
#define RUNNEL_OPS_WINDOW_ATTRS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/cpu/conv.h"
#include "runnel/framework/attr_value.h"

namespace runnel {

// Window attrs larger than this are rejected (TensorFlow keeps them in
// int32).
inline constexpr int64_t kMaxWindowAttr = std::numeric_limits<int32_t>::max();

// Which attrs an op has besides data_format, padding and strides.
enum class WindowFamily {
  kPooling,      // ksize; explicit_paddings when the op has it.
  kConvolution,  // dilations and explicit_paddings.
};

struct WindowAttrs {
  bool channels_first = false;
  cpu::Padding padding = cpu::Padding::kValid;
  int64_t window_rows = 1, window_cols = 1;  // ksize (pooling only).
  int64_t stride_rows = 1, stride_cols = 1;
  int64_t dilation_rows = 1, dilation_cols = 1;  // Convolutions only.
  // EXPLICIT padding only; each in [0, kMaxWindowAttr].
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

namespace window_attrs_internal {

// Checks a 4-entry ksize/strides/dilations list: 1 on batch and depth, rows
// and columns in [1, 2^31).
inline Status CheckWindowList(const std::vector<int64_t>& v, const char* what,
                              const cpu::Dims4& d) {
  if (v.size() != 4) {
    return errors::InvalidArgument("Sliding window ", what,
                                   " field must specify 4 dimensions, got ",
                                   v.size(), " values");
  }
  if (v[d.n] != 1 || v[d.c] != 1) {
    return errors::InvalidArgument(
        "Current implementation does not yet support ", what,
        " in the batch and depth dimensions: [", absl::StrJoin(v, ","), "]");
  }
  if (v[d.h] <= 0 || v[d.w] <= 0 || v[d.h] > kMaxWindowAttr ||
      v[d.w] > kMaxWindowAttr) {
    return errors::InvalidArgument("Row and column ", what,
                                   " must be in [1, 2^31): [",
                                   absl::StrJoin(v, ","), "]");
  }
  return absl::OkStatus();
}

// Checks the 8 explicit paddings (before and after per dimension; zero on
// batch and depth) and stores the spatial ones in `a`.
inline Status CheckExplicitPaddings(const std::vector<int64_t>& p,
                                    const cpu::Dims4& d, WindowAttrs* a) {
  if (p.size() != 8) {
    return errors::InvalidArgument(
        "explicit_paddings attribute must contain 8 values, but got: ",
        p.size());
  }
  for (int64_t v : p) {
    if (v < 0 || v > kMaxWindowAttr) {
      return errors::InvalidArgument(
          "All elements of explicit_paddings must be non-negative and below "
          "2^31, got [",
          absl::StrJoin(p, ","), "]");
    }
  }
  if (p[2 * d.n] != 0 || p[2 * d.n + 1] != 0 || p[2 * d.c] != 0 ||
      p[2 * d.c + 1] != 0) {
    return errors::InvalidArgument(
        "Nonzero explicit padding in the batch or depth dimensions is not "
        "supported: [",
        absl::StrJoin(p, ","), "]");
  }
  a->pad_top = p[2 * d.h];
  a->pad_bottom = p[2 * d.h + 1];
  a->pad_left = p[2 * d.w];
  a->pad_right = p[2 * d.w + 1];
  return absl::OkStatus();
}

}  // namespace window_attrs_internal

// Reads and validates the window attrs of an op of `family` from `attrs`
// (which must hold the op's defaults). Output sizes are not checked here:
// they need the input shape (cpu::WindowedOutputSize).
inline Status ParseWindowAttrs(const AttrMap& attrs, WindowFamily family,
                               WindowAttrs* a) {
  using window_attrs_internal::CheckWindowList;
  const bool pooling = family == WindowFamily::kPooling;
  std::string format, padding;
  std::vector<int64_t> ksize, strides, dilations, explicit_paddings;
  RETURN_IF_ERROR(GetAttr(attrs, "data_format", &format));
  RETURN_IF_ERROR(GetAttr(attrs, "padding", &padding));
  if (pooling) RETURN_IF_ERROR(GetAttr(attrs, "ksize", &ksize));
  RETURN_IF_ERROR(GetAttr(attrs, "strides", &strides));
  if (!pooling) RETURN_IF_ERROR(GetAttr(attrs, "dilations", &dilations));
  if (!pooling || attrs.find("explicit_paddings") != attrs.end()) {
    RETURN_IF_ERROR(GetAttr(attrs, "explicit_paddings", &explicit_paddings));
  }
  if (format != "NHWC" && format != "NCHW") {
    return errors::InvalidArgument("data_format ", format,
                                   " is not supported on CPU; use NHWC or "
                                   "NCHW");
  }
  a->channels_first = format == "NCHW";
  const cpu::Dims4 d = cpu::DimsOf(a->channels_first);
  if (pooling) {
    RETURN_IF_ERROR(CheckWindowList(ksize, "ksize", d));
    a->window_rows = ksize[d.h];
    a->window_cols = ksize[d.w];
  }
  RETURN_IF_ERROR(CheckWindowList(strides, "strides", d));
  a->stride_rows = strides[d.h];
  a->stride_cols = strides[d.w];
  if (!pooling) {
    RETURN_IF_ERROR(CheckWindowList(dilations, "dilations", d));
    a->dilation_rows = dilations[d.h];
    a->dilation_cols = dilations[d.w];
  }
  RETURN_IF_ERROR(cpu::ParsePadding(padding, &a->padding));
  if (a->padding == cpu::Padding::kExplicit) {
    return window_attrs_internal::CheckExplicitPaddings(explicit_paddings, d,
                                                        a);
  }
  if (!explicit_paddings.empty()) {
    return errors::InvalidArgument(
        "explicit_paddings attribute must be empty if the padding attribute "
        "is not EXPLICIT, got [",
        absl::StrJoin(explicit_paddings, ","), "]");
  }
  return absl::OkStatus();
}

}  // namespace runnel

#endif  // RUNNEL_OPS_WINDOW_ATTRS_H_
