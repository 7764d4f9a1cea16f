// The value syntax of `runnel run --feed NAME=VALUE`: a number, true/false,
// a quoted string ('...' or "...", no escapes), a bare word (a string), or a
// nested list of them like [[1, 2], [3, 4]]. The list's nesting gives the
// shape ([] is a [0] tensor, [[], []] a [2, 0] one); the dtype comes from
// the caller (the fed node's output type).
//
// The text is untrusted (a command line, a fuzzer), so the parser is
// bounded: nesting deeper than kMaxFeedDepth and more than kMaxFeedElements
// scalars are errors, not a stack overflow or an unbounded allocation; the
// recursion never goes deeper than kMaxFeedDepth frames.
//
// Thread-safe (no state); allocates only the result.
#ifndef RUNNEL_TOOLS_FEED_PARSER_H_
#define RUNNEL_TOOLS_FEED_PARSER_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"

namespace runnel {

// Deepest list nesting accepted (the rank of the result).
inline constexpr int kMaxFeedDepth = 64;
// Most scalars one value may hold (a command-line argument is at most
// 128 KiB on Linux, so this bounds only other callers).
inline constexpr int64_t kMaxFeedElements = int64_t{1} << 20;

// Parses `text` into a tensor of `dtype`. A single scalar for a `declared`
// shape with exactly one element ([1], [1, 1]) takes that shape; otherwise
// the shape is the list's. Numbers must be whole tokens in range for
// `dtype`: "1.5" is not an int32, "300" not a uint8, "1e999" not a float
// (write "inf"; "nan" and "-inf" are accepted too). bool takes
// true/false/1/0. DT_STRING takes any scalar (quotes are stripped).
//
// Errors are InvalidArgument: malformed or ragged lists (with the byte
// offset), too deep, too many elements, a bad number naming the token, a
// dtype with no text form (e.g. resource, complex).
StatusOr<Tensor> ParseFeedValue(
    absl::string_view text, DataType dtype,
    const PartialTensorShape& declared = PartialTensorShape());

}  // namespace runnel

#endif  // RUNNEL_TOOLS_FEED_PARSER_H_
