// Writing JSON text: the quoting and number forms that Runnel's JSON
// outputs share (`runnel run --json`, `runnel events --json`, Chrome
// traces, `runnel board`'s embedded data).
//
// Thread-safe; allocation only.
#ifndef RUNNEL_BASE_JSON_H_
#define RUNNEL_BASE_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace runnel {

// `s` as a JSON string literal, quotes included, in plain ASCII: UTF-8 is
// decoded and written as \uXXXX (surrogate pairs past U+FFFF); each byte
// that is not part of a valid sequence (invalid, overlong, truncated, a
// surrogate) as U+FFFD. Control characters are escaped, and so are '<',
// '>' and '&', so the text can sit inside an HTML <script> element without
// closing it or starting markup.
std::string JsonString(absl::string_view s);

// A number in the shortest form that reads back exactly; NaN and the
// infinities, which JSON lacks, as the strings "NaN", "Infinity" and
// "-Infinity".
std::string JsonNumber(double v);

}  // namespace runnel

#endif  // RUNNEL_BASE_JSON_H_
