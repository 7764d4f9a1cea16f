// op_gen: writes the typed C++ op wrappers (runnel::ops::MatMul, ...) for
// every op in the registry it is linked with: the op definitions only
// (runnel_op_defs), as the gradient builders are written with the wrappers
// (Note [Op family targets] in runnel/ops/CMakeLists.txt).
//
//   op_gen OUT_HEADER OUT_SOURCE
//
// For each op (except internal "_..." ops and Const, which is hand-written
// in runnel/graph/scope.h) it emits a class in TensorFlow's shape:
//
//   class MatMul {
//    public:
//     static constexpr absl::string_view kOpName = "MatMul";
//     struct Attrs { Attrs TransposeA(bool x) const; ... };  // optional attrs
//     static Attrs TransposeA(bool x);
//     MatMul(const Scope& scope, Input a, Input b,
//            const Attrs& attrs = Attrs());
//     operator Output() const;  // one-output ops (and operator Input)
//     Operation operation;
//     Output product;  // one member per output arg (OutputList for lists)
//   };
//
// Type and number attrs that the inputs determine (T, N, Tidx) are not
// parameters; attrs without a default are constructor parameters after the
// inputs; attrs with a default are Attrs setters named in CamelCase. The
// constructor builds the node with NodeBuilder (see runnel/graph/scope.h).
// Files are only rewritten when their content changes, so a rebuild of the
// op libraries that leaves the op defs alone recompiles nothing.
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/substitute.h"
#include "runnel/framework/op.h"

namespace runnel {
namespace {

// The C++ parameter type for an attr type; "" if the generator has none.
std::string AttrCppType(const std::string& type) {
  static const auto* kTypes = new std::map<std::string, std::string>{
      {"int", "int64_t"},
      {"float", "float"},
      {"bool", "bool"},
      {"string", "absl::string_view"},
      {"type", "::runnel::DataType"},
      {"shape", "const ::runnel::PartialTensorShape&"},
      {"tensor", "const ::runnel::Tensor&"},
      {"func", "const ::runnel::NameAttrList&"},
      {"list(int)", "absl::Span<const int64_t>"},
      {"list(float)", "absl::Span<const float>"},
      {"list(string)", "absl::Span<const std::string>"},
      {"list(type)", "absl::Span<const ::runnel::DataType>"},
      {"list(shape)", "absl::Span<const ::runnel::PartialTensorShape>"},
  };
  auto it = kTypes->find(type);
  return it == kTypes->end() ? "" : it->second;
}

// `name`, with a '_' appended if it is a C++ keyword or a name the generated
// code uses itself.
std::string Identifier(const std::string& name) {
  static const auto* kTaken = new std::set<std::string>{
      "and", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "continue", "default", "delete", "do", "double", "else", "enum",
      "explicit", "false", "float", "for", "friend", "if", "inline", "int",
      "long", "namespace", "new", "not", "operator", "or", "private",
      "protected", "public", "return", "short", "signed", "sizeof", "static",
      "struct", "switch", "template", "this", "throw", "true", "try", "typedef",
      "union", "unsigned", "using", "virtual", "void", "while", "xor",
      // Used by the generated code.
      "scope", "attrs", "builder", "operation", "node", "Attrs"};
  return kTaken->contains(name) ? name + "_" : name;
}

// "transpose_a" -> "TransposeA".
std::string CamelCase(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
    } else {
      out += upper ? static_cast<char>(std::toupper(c)) : c;
      upper = false;
    }
  }
  return out;
}

bool IsList(const OpDef::ArgDef& arg) {
  return !arg.number_attr().empty() || !arg.type_list_attr().empty();
}

// One op, sorted into what the generated class needs.
struct OpInfo {
  const OpDef* def = nullptr;
  std::vector<const OpDef::AttrDef*> required;  // Constructor parameters.
  std::vector<const OpDef::AttrDef*> optional;  // Attrs setters.
  std::string skip_reason;                      // Non-empty: not generated.
  // C++ parameter names: one per input arg, then one per required attr.
  std::vector<std::string> input_params, attr_params;
};

OpInfo Analyze(const OpDef& def) {
  OpInfo info;
  info.def = &def;
  std::set<std::string> inferred;
  for (const auto& arg : def.input_arg()) {
    for (const std::string* a :
         {&arg.type_attr(), &arg.number_attr(), &arg.type_list_attr()}) {
      if (!a->empty()) inferred.insert(*a);
    }
  }
  for (const auto& attr : def.attr()) {
    if (inferred.contains(attr.name())) continue;
    if (AttrCppType(attr.type()).empty()) {
      info.skip_reason =
          absl::StrCat("attr '", attr.name(), "' has type ", attr.type());
      return info;
    }
    (attr.has_default_value() ? info.optional : info.required).push_back(&attr);
  }
  std::set<std::string> used;
  auto unique = [&](const std::string& name) {
    std::string id = Identifier(name);
    while (used.contains(id)) id += "_";
    used.insert(id);
    return id;
  };
  for (const auto& arg : def.input_arg())
    info.input_params.push_back(unique(arg.name()));
  for (const auto* attr : info.required)
    info.attr_params.push_back(unique(attr->name()));
  return info;
}

// The constructor's parameter list (without the leading scope).
std::string Params(const OpInfo& info, bool with_defaults) {
  std::vector<std::string> params = {"const ::runnel::Scope& scope"};
  for (int i = 0; i < info.def->input_arg_size(); ++i) {
    params.push_back(absl::StrCat(IsList(info.def->input_arg(i))
                                      ? "::runnel::InputList "
                                      : "::runnel::Input ",
                                  info.input_params[i]));
  }
  for (size_t i = 0; i < info.required.size(); ++i) {
    params.push_back(absl::StrCat(AttrCppType(info.required[i]->type()), " ",
                                  info.attr_params[i]));
  }
  if (!info.optional.empty()) {
    params.push_back(
        absl::StrCat("const Attrs& attrs", with_defaults ? " = Attrs()" : ""));
  }
  return absl::StrJoin(params, ", ");
}

std::string SetterName(const OpInfo& info, const OpDef::AttrDef& attr) {
  std::string name = CamelCase(attr.name());
  return name == info.def->name() ? name + "_" : name;
}

void EmitClass(const OpInfo& info, std::ostream& h) {
  const OpDef& def = *info.def;
  const std::string& cls = def.name();
  std::string summary = def.summary().empty() ? "(no summary)" : def.summary();
  h << "// " << absl::StrReplaceAll(summary, {{"\n", "\n// "}}) << "\n"
    << "class " << cls << " {\n public:\n"
    << "  static constexpr absl::string_view kOpName = \"" << cls << "\";\n";
  if (!info.optional.empty()) {
    h << "  // Optional attrs; unset ones take the op's default.\n"
      << "  struct Attrs {\n";
    for (const auto* attr : info.optional) {
      h << absl::Substitute(
          "    // Default: $0.\n"
          "    Attrs $1($2 x) const {\n"
          "      Attrs r = *this;\n"
          "      r.values[\"$3\"] = ::runnel::MakeAttrValue(x);\n"
          "      return r;\n"
          "    }\n",
          SummarizeAttrValue(attr->default_value()), SetterName(info, *attr),
          AttrCppType(attr->type()), attr->name());
    }
    h << "    ::runnel::AttrMap values;\n  };\n";
    for (const auto* attr : info.optional) {
      h << absl::Substitute(
          "  static Attrs $0($1 x) { return Attrs().$0(x); }\n",
          SetterName(info, *attr), AttrCppType(attr->type()));
    }
    h << "\n";
  }
  // Only a scope (and maybe Attrs): explicit, so a Scope never converts.
  const bool explicit_ctor = def.input_arg_size() == 0 && info.required.empty();
  h << "  " << (explicit_ctor ? "explicit " : "") << cls << "("
    << Params(info, true) << ");\n";
  const auto& outs = def.output_arg();
  if (outs.empty()) {
    h << "  operator ::runnel::Operation() const { return operation; }\n";
  } else if (outs.size() == 1 && !IsList(outs[0])) {
    h << absl::Substitute(
        "  operator ::runnel::Output() const { return $0; }\n"
        "  operator ::runnel::Input() const { return $0; }\n",
        Identifier(outs[0].name()));
  } else if (outs.size() == 1) {
    h << absl::Substitute(
        "  ::runnel::Output operator[](size_t i) const { return $0[i]; }\n",
        Identifier(outs[0].name()));
  }
  h << "  ::runnel::Node* node() const { return operation.node(); }\n\n"
    << "  ::runnel::Operation operation;\n";
  for (const auto& out : outs) {
    h << "  " << (IsList(out) ? "::runnel::OutputList " : "::runnel::Output ")
      << Identifier(out.name()) << ";\n";
  }
  h << "};\n\n";
}

void EmitConstructor(const OpInfo& info, std::ostream& cc) {
  const OpDef& def = *info.def;
  cc << def.name() << "::" << def.name() << "(" << Params(info, false)
     << ") {\n"
     << "  ::runnel::NodeBuilder builder(scope, \"" << def.name() << "\");\n";
  for (const std::string& param : info.input_params) {
    cc << "  builder.Input(" << param << ");\n";
  }
  for (size_t i = 0; i < info.required.size(); ++i) {
    cc << "  builder.Attr(\"" << info.required[i]->name() << "\", "
       << info.attr_params[i] << ");\n";
  }
  if (!info.optional.empty()) cc << "  builder.Attrs(attrs.values);\n";
  cc << "  scope.UpdateStatus(builder.Finalize(&operation));\n"
     << "  if (!scope.ok()) return;\n";
  // Outputs before the first list arg have fixed indices.
  bool fixed = true;
  for (int i = 0; i < def.output_arg_size(); ++i) {
    const auto& out = def.output_arg(i);
    fixed = fixed && !IsList(out);
    cc << "  this->" << Identifier(out.name()) << " = ";
    if (fixed) {
      cc << "operation.output(" << i << ");\n";
    } else {
      cc << "operation.output_list(\"" << out.name() << "\")"
         << (IsList(out) ? "" : ".front()") << ";\n";
    }
  }
  cc << "}\n\n";
}

// Writes `content` to `path` unless the file already holds exactly that.
bool WriteIfChanged(const std::string& path, const std::string& content) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream old;
  old << in.rdbuf();
  if (in && old.str() == content) return true;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: op_gen OUT_HEADER OUT_SOURCE\n";
    return 2;
  }
  std::ostringstream h, cc;
  const char* kBanner =
      "// Generated by tools/op_gen.cc from the op registry. Do not edit.\n";
  h << kBanner
    << "#ifndef RUNNEL_OPS_OPS_GEN_H_\n#define RUNNEL_OPS_OPS_GEN_H_\n\n"
    << "#include <cstdint>\n#include <string>\n\n#include "
       "\"absl/strings/string_view.h\"\n"
    << "#include \"absl/types/span.h\"\n#include \"runnel/graph/scope.h\"\n\n"
    << "namespace runnel {\nnamespace ops {\n\n";
  cc << kBanner
     << "#include \"runnel/ops/ops_gen.h\"\n\nnamespace runnel {\nnamespace "
        "ops {\n\n";
  int generated = 0;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    if (name.starts_with("_") || name == "Const") continue;
    const OpInfo info = Analyze(OpRegistry::Global()->LookUp(name)->op_def);
    if (!info.skip_reason.empty()) {
      h << "// " << name << ": no wrapper (" << info.skip_reason << ").\n\n";
      continue;
    }
    EmitClass(info, h);
    EmitConstructor(info, cc);
    ++generated;
  }
  h << "}  // namespace ops\n}  // namespace runnel\n\n#endif  // "
       "RUNNEL_OPS_OPS_GEN_H_\n";
  cc << "}  // namespace ops\n}  // namespace runnel\n";
  if (!WriteIfChanged(argv[1], h.str()) || !WriteIfChanged(argv[2], cc.str())) {
    std::cerr << "op_gen: cannot write " << argv[1] << " / " << argv[2] << "\n";
    return 1;
  }
  std::cout << "op_gen: " << generated << " op wrappers\n";
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) { return runnel::Main(argc, argv); }
