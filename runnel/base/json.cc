#include "runnel/base/json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace runnel {

namespace {

void AppendU16(uint32_t u, std::string* out) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(u));
  *out += buf;
}

// Decodes the UTF-8 sequence at s[*i], advancing *i; U+FFFD (one byte
// consumed) for an invalid, overlong or truncated sequence or a surrogate.
uint32_t DecodeUtf8(absl::string_view s, size_t* i) {
  const unsigned char c = s[*i];
  int len = 0;
  uint32_t cp = 0, min = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2, cp = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, cp = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, cp = c & 0x07, min = 0x10000;
  }
  if (len == 0 || *i + len > s.size()) {
    ++*i;
    return 0xfffd;
  }
  for (int k = 1; k < len; ++k) {
    const unsigned char cc = s[*i + k];
    if ((cc & 0xc0) != 0x80) {
      ++*i;
      return 0xfffd;
    }
    cp = (cp << 6) | (cc & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    ++*i;
    return 0xfffd;
  }
  *i += len;
  return cp;
}

}  // namespace

std::string JsonString(absl::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    if (c >= 0x80) {
      const uint32_t cp = DecodeUtf8(s, &i);
      if (cp >= 0x10000) {  // A surrogate pair.
        AppendU16(0xd800 + ((cp - 0x10000) >> 10), &out);
        AppendU16(0xdc00 + ((cp - 0x10000) & 0x3ff), &out);
      } else {
        AppendU16(cp, &out);
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&') {
          AppendU16(c, &out);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonNumber(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace runnel
