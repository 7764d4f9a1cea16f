// The `runnel` command line.
//
//   runnel run GRAPH [--feed NAME=VALUE]... [--fetch NAME]... [--target
//   NODE]...
//                    [--init NODE]... [--repeat N] [--json]
//
// `--init` nodes run once first (e.g. a variable initializer); then the
// targets and fetches run N times in one session (training from the command
// line), and the fetches of the last run are printed.
//   runnel inspect GRAPH
//   runnel ops
//
// GRAPH is a binary (.pb) or text (.pbtxt) GraphDef. A feed VALUE is a
// number, true/false, a quoted string, or a nested list like [[1,2],[3,4]];
// its dtype comes from the fed node's output and its shape from the list's
// nesting (a single value fills a placeholder whose shape has one element).
// Errors go to stderr with exit status 1 (2 for usage errors).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/tensor_id.h"
#include "runnel/runtime/session.h"

namespace runnel {
namespace {

int Usage() {
  std::cerr << "usage:\n"
               "  runnel run GRAPH [--feed NAME=VALUE]... [--fetch NAME]... "
               "[--target NODE]... [--init NODE]... [--repeat N] [--json]\n"
               "  runnel inspect GRAPH\n"
               "  runnel ops\n";
  return 2;
}

int Fail(const Status& s) {
  std::cerr << "runnel: " << s << "\n";
  return 1;
}

// ---------------------------------------------------------------------------
// Parsing feed values

struct Literal {
  std::vector<std::string> leaves;  // Scalar tokens in row-major order.
  std::vector<int64_t> shape;
};

class LiteralParser {
 public:
  explicit LiteralParser(absl::string_view s) : s_(s) {}

  Status Parse(Literal* out) {
    std::vector<int64_t> shape;
    RETURN_IF_ERROR(Value(0, out));
    SkipSpace();
    if (pos_ != s_.size()) return Error("unexpected text");
    return absl::OkStatus();
  }

 private:
  Status Value(int depth, Literal* out) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '[') {
      ++pos_;
      int64_t count = 0;
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return SetDim(depth, 0, out, /*is_leaf_level=*/true);
      }
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
      return SetDim(depth, count, out, false);
    }
    // A scalar token: a quoted string or a bare word.
    if (leaf_depth_ >= 0 && leaf_depth_ != depth)
      return Error("ragged nested list");
    leaf_depth_ = depth;
    if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {
      const char q = s_[pos_++];
      size_t end = s_.find(q, pos_);
      if (end == absl::string_view::npos) return Error("unterminated string");
      out->leaves.emplace_back(s_.substr(pos_ - 1, end - pos_ + 2));
      pos_ = end + 1;
      return absl::OkStatus();
    }
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != ']' &&
           s_[pos_] != '[' && s_[pos_] != ' ') {
      ++pos_;
    }
    if (start == pos_) return Error("expected a value");
    out->leaves.emplace_back(s_.substr(start, pos_ - start));
    return absl::OkStatus();
  }

  Status SetDim(int depth, int64_t n, Literal* out, bool empty) {
    if (static_cast<int>(dims_.size()) <= depth) dims_.resize(depth + 1, -1);
    if (dims_[depth] >= 0 && dims_[depth] != n)
      return Error("ragged nested list");
    dims_[depth] = n;
    if (empty) {
      if (leaf_depth_ >= 0 && leaf_depth_ != depth + 1)
        return Error("ragged nested list");
      leaf_depth_ = depth + 1;
    }
    out->shape.assign(dims_.begin(), dims_.end());
    return absl::OkStatus();
  }

  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  Status Error(absl::string_view what) const {
    return errors::InvalidArgument("cannot parse value '", s_, "' at offset ",
                                   pos_, ": ", what);
  }

  absl::string_view s_;
  size_t pos_ = 0;
  std::vector<int64_t> dims_;
  int leaf_depth_ = -1;
};

template <typename T>
bool ParseNumber(absl::string_view tok, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (tok == "true" || tok == "1") return *out = true, true;
    if (tok == "false" || tok == "0") return *out = false, true;
    return false;
  } else if constexpr (std::is_floating_point_v<T>) {
    double d;
    if (!absl::SimpleAtod(tok, &d)) return false;
    *out = static_cast<T>(d);
    return true;
  } else {
    int64_t v;
    if (!absl::SimpleAtoi(tok, &v)) return false;
    if (v < static_cast<int64_t>(std::numeric_limits<T>::lowest()) ||
        static_cast<uint64_t>(std::max<int64_t>(v, 0)) >
            static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return false;
    }
    *out = static_cast<T>(v);
    return true;
  }
}

StatusOr<Tensor> MakeFeed(const std::string& name, const std::string& text,
                          DataType dtype, const PartialTensorShape& declared) {
  Literal lit;
  RETURN_IF_ERROR(LiteralParser(text).Parse(&lit));
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(lit.shape));
  // A single value for a placeholder declared with one element ([1], [1,1]).
  if (shape.dims() == 0 && declared.IsFullyDefined() &&
      declared.num_elements() == 1) {
    ASSIGN_OR_RETURN(shape, declared.AsTensorShape());
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(cpu_allocator(), dtype, shape));
  Status status;
  auto bad = [&](const std::string& tok) {
    return errors::InvalidArgument("feed '", name, "': '", tok,
                                   "' is not a valid ", DataTypeString(dtype));
  };
  if (dtype == DT_STRING) {
    for (size_t i = 0; i < lit.leaves.size(); ++i) {
      absl::string_view tok = lit.leaves[i];
      if (tok.size() >= 2 && (tok[0] == '"' || tok[0] == '\''))
        tok = tok.substr(1, tok.size() - 2);
      t.flat<tstring>()[i] = std::string(tok);
    }
    return t;
  }
  const bool ok =
      DispatchNumeric(dtype,
                      [&]<typename T>() {
                        for (size_t i = 0; i < lit.leaves.size() && status.ok();
                             ++i) {
                          if (!ParseNumber<T>(lit.leaves[i], &t.flat<T>()[i]))
                            status = bad(lit.leaves[i]);
                        }
                      }) ||
      (dtype == DT_BOOL && [&] {
        for (size_t i = 0; i < lit.leaves.size() && status.ok(); ++i) {
          if (!ParseNumber<bool>(lit.leaves[i], &t.flat<bool>()[i]))
            status = bad(lit.leaves[i]);
        }
        return true;
      }());
  if (!ok) {
    return errors::InvalidArgument("feed '", name, "': cannot feed dtype ",
                                   DataTypeString(dtype),
                                   " from the command line");
  }
  RETURN_IF_ERROR(status);
  return t;
}

// ---------------------------------------------------------------------------
// Output

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
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
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonValue(const Tensor& t, int64_t i) {
  if (t.dtype() == DT_STRING) return JsonString(t.flat<tstring>()[i]);
  std::string v = t.ElementString(i);
  if (v == "nan" || v == "-nan") return "\"NaN\"";
  if (v == "inf") return "\"Infinity\"";
  if (v == "-inf") return "\"-Infinity\"";
  return v;
}

std::string JsonTensor(const Tensor& t) {
  std::vector<std::string> values;
  for (int64_t i = 0; i < t.NumElements(); ++i)
    values.push_back(JsonValue(t, i));
  return absl::StrCat("{\"dtype\": \"", DataTypeString(t.dtype()),
                      "\", \"shape\": [",
                      absl::StrJoin(t.shape().dim_sizes(), ", "),
                      "], \"values\": [", absl::StrJoin(values, ", "), "]}");
}

// ---------------------------------------------------------------------------
// Commands

int Run(const std::vector<std::string>& args) {
  if (args.empty()) return Usage();
  std::string graph_path;
  std::vector<std::pair<std::string, std::string>> feed_text;
  std::vector<std::string> fetches, targets, inits;
  bool json = false;
  int64_t repeat = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--json") {
      json = true;
    } else if (a == "--feed" && value(&v)) {
      size_t eq = v.find('=');
      if (eq == std::string::npos) {
        std::cerr << "runnel: --feed wants NAME=VALUE, got '" << v << "'\n";
        return 2;
      }
      feed_text.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--fetch" && value(&v)) {
      fetches.push_back(v);
    } else if (a == "--target" && value(&v)) {
      targets.push_back(v);
    } else if (a == "--init" && value(&v)) {
      inits.push_back(v);
    } else if (a == "--repeat" && value(&v)) {
      if (!absl::SimpleAtoi(v, &repeat) || repeat < 1) {
        std::cerr << "runnel: --repeat wants a positive count\n";
        return 2;
      }
    } else if (!a.empty() && a[0] != '-' && graph_path.empty()) {
      graph_path = a;
    } else {
      std::cerr << "runnel: unexpected argument '" << a << "'\n";
      return Usage();
    }
  }
  if (graph_path.empty()) return Usage();
  if (fetches.empty() && targets.empty()) {
    std::cerr << "runnel: nothing to run: give --fetch or --target\n";
    return 2;
  }
  GraphDef gdef;
  if (Status s = ReadGraphDefFile(graph_path, &gdef); !s.ok()) return Fail(s);
  Graph graph;
  if (Status s = ImportGraphDef(gdef, &graph); !s.ok()) return Fail(s);

  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, text] : feed_text) {
    auto id = ParseTensorName(name);
    if (!id.ok()) return Fail(id.status());
    const Node* n = graph.FindNode(id->node);
    if (n == nullptr)
      return Fail(errors::InvalidArgument("feed '", name, "': no node '",
                                          id->node, "'"));
    if (id->index < 0 || id->index >= n->num_outputs()) {
      return Fail(errors::InvalidArgument("feed '", name, "': node '", id->node,
                                          "' has ", n->num_outputs(),
                                          " outputs"));
    }
    PartialTensorShape declared;
    if (!GetAttr(n->attrs(), "shape", &declared).ok())
      declared = PartialTensorShape();
    auto t =
        MakeFeed(name, text, BaseType(n->output_type(id->index)), declared);
    if (!t.ok()) return Fail(t.status());
    feeds.emplace_back(name, std::move(*t));
  }

  auto session = NewSession();
  if (!session.ok()) return Fail(session.status());
  if (Status s = (*session)->Create(gdef); !s.ok()) return Fail(s);
  std::vector<Tensor> outputs;
  if (!inits.empty()) {
    if (Status s = (*session)->Run({}, {}, inits, nullptr); !s.ok())
      return Fail(s);
  }
  for (int64_t r = 0; r < repeat; ++r) {
    if (Status s = (*session)->Run(feeds, fetches, targets, &outputs); !s.ok())
      return Fail(s);
  }
  if (json) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < fetches.size(); ++i) {
      parts.push_back(
          absl::StrCat(JsonString(fetches[i]), ": ", JsonTensor(outputs[i])));
    }
    std::cout << "{" << absl::StrJoin(parts, ", ") << "}\n";
  } else {
    for (size_t i = 0; i < fetches.size(); ++i) {
      const Tensor& t = outputs[i];
      std::cout << fetches[i] << " (" << DataTypeString(t.dtype()) << " "
                << t.shape().DebugString() << "): " << t.SummarizeValue(1000)
                << "\n";
    }
    if (fetches.empty())
      std::cout << "ran " << absl::StrJoin(targets, ", ") << "\n";
  }
  return 0;
}

int Inspect(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage();
  GraphDef gdef;
  if (Status s = ReadGraphDefFile(args[0], &gdef); !s.ok()) return Fail(s);
  Graph graph;
  Status import = ImportGraphDef(gdef, &graph);
  std::cout << args[0] << ": " << gdef.node_size() << " nodes, producer "
            << gdef.versions().producer() << "\n";
  if (!import.ok())
    std::cout << "  (does not import here: " << import.message() << ")\n";
  std::map<std::string, int> histogram;
  std::map<std::string, int> devices;
  std::cout << "\nnodes:\n";
  for (const NodeDef& n : gdef.node()) {
    ++histogram[n.op()];
    ++devices[n.device().empty() ? "(unspecified)" : n.device()];
    std::cout << "  " << n.name() << " = " << n.op() << "("
              << absl::StrJoin(n.input(), ", ") << ")";
    if (!n.device().empty()) std::cout << " @" << n.device();
    std::cout << "\n";
  }
  std::cout << "\ndevices:\n";
  for (const auto& [d, c] : devices)
    std::cout << "  " << d << ": " << c << "\n";
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [op, c] : histogram) ops.emplace_back(-c, op);
  std::sort(ops.begin(), ops.end());
  std::cout << "\nop histogram:\n";
  for (const auto& [c, op] : ops) std::cout << "  " << -c << "  " << op << "\n";
  return 0;
}

int Ops() {
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!op.empty() && op[0] == '_') continue;
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(op);
    std::cout << op << ": " << d->op_def.summary() << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return runnel::Usage();
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "run") return runnel::Run(args);
  if (cmd == "inspect") return runnel::Inspect(args);
  if (cmd == "ops") return runnel::Ops();
  return runnel::Usage();
}
