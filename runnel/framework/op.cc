#include "runnel/framework/op.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace runnel {

namespace {

using absl::string_view;

string_view Strip(string_view s) { return absl::StripAsciiWhitespace(s); }

// Splits "name: rest" into its two parts.
Status SplitSpec(string_view spec, string_view* name, string_view* rest) {
  size_t colon = spec.find(':');
  if (colon == string_view::npos) {
    return errors::InvalidArgument("spec '", spec, "' has no ':'");
  }
  *name = Strip(spec.substr(0, colon));
  *rest = Strip(spec.substr(colon + 1));
  if (name->empty())
    return errors::InvalidArgument("spec '", spec, "' has no name");
  return absl::OkStatus();
}

// Position of the '=' that starts a default value, or npos.
size_t FindDefault(string_view s) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"')
      quote = c;
    else if (c == '{' || c == '[' || c == '(')
      ++depth;
    else if (c == '}' || c == ']' || c == ')')
      --depth;
    else if (c == '=' && depth == 0 && (i == 0 || s[i - 1] != '>'))
      return i;
  }
  return string_view::npos;
}

bool ParseTypeSet(string_view s, std::vector<DataType>* types) {
  if (s == "numbertype") {
    *types = NumberTypes();
    return true;
  }
  if (s == "realnumbertype") {
    *types = RealNumberTypes();
    return true;
  }
  if (s == "alltypes") {
    *types = AllTypes();
    return true;
  }
  if (s == "quantizedtype") {
    *types = {DT_QINT8, DT_QUINT8, DT_QINT32, DT_QINT16, DT_QUINT16};
    return true;
  }
  if (!absl::ConsumePrefix(&s, "{") || !absl::ConsumeSuffix(&s, "}"))
    return false;
  for (string_view part : absl::StrSplit(s, ',')) {
    DataType dt;
    if (!DataTypeFromString(Strip(part), &dt)) return false;
    types->push_back(dt);
  }
  return true;
}

string_view Unquote(string_view s) {
  s = Strip(s);
  if (s.size() >= 2 && (s[0] == '\'' || s[0] == '"') && s.back() == s[0]) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

std::vector<string_view> ListItems(string_view s) {
  std::vector<string_view> items;
  s = Strip(s);
  if (!absl::ConsumePrefix(&s, "[") || !absl::ConsumeSuffix(&s, "]"))
    return items;
  if (Strip(s).empty()) return items;
  for (string_view p : absl::StrSplit(s, ',')) items.push_back(Strip(p));
  return items;
}

Status ParseShapeDefault(string_view v, TensorShapeProto* out) {
  v = Strip(v);
  if (absl::StrContains(v, "unknown_rank")) {
    out->set_unknown_rank(true);
    return absl::OkStatus();
  }
  for (string_view item : ListItems(v)) {
    int64_t d;
    if (!absl::SimpleAtoi(item, &d))
      return errors::InvalidArgument("bad shape default ", v);
    out->add_dim()->set_size(d);
  }
  return absl::OkStatus();
}

Status ParseDefault(const std::string& type, string_view v, AttrValue* out) {
  v = Strip(v);
  auto bad = [&] {
    return errors::InvalidArgument("bad default '", v, "' for type ", type);
  };
  if (type == "int") {
    int64_t i;
    if (!absl::SimpleAtoi(v, &i)) return bad();
    out->set_i(i);
  } else if (type == "float") {
    float f;
    if (!absl::SimpleAtof(v, &f)) return bad();
    out->set_f(f);
  } else if (type == "bool") {
    if (v != "true" && v != "false") return bad();
    out->set_b(v == "true");
  } else if (type == "string") {
    out->set_s(std::string(Unquote(v)));
  } else if (type == "type") {
    DataType dt;
    if (!DataTypeFromString(v, &dt)) return bad();
    out->set_type(dt);
  } else if (type == "shape") {
    RETURN_IF_ERROR(ParseShapeDefault(v, out->mutable_shape()));
  } else if (absl::StartsWith(type, "list(")) {
    auto* l = out->mutable_list();
    for (string_view item : ListItems(v)) {
      if (type == "list(int)") {
        int64_t i;
        if (!absl::SimpleAtoi(item, &i)) return bad();
        l->add_i(i);
      } else if (type == "list(float)") {
        float f;
        if (!absl::SimpleAtof(item, &f)) return bad();
        l->add_f(f);
      } else if (type == "list(string)") {
        l->add_s(std::string(Unquote(item)));
      } else if (type == "list(type)") {
        DataType dt;
        if (!DataTypeFromString(item, &dt)) return bad();
        l->add_type(dt);
      } else if (type == "list(bool)") {
        l->add_b(item == "true");
      } else {
        return bad();
      }
    }
  } else {
    return bad();
  }
  return absl::OkStatus();
}

Status ParseAttrSpec(string_view spec, OpDef::AttrDef* attr) {
  string_view name, rest;
  RETURN_IF_ERROR(SplitSpec(spec, &name, &rest));
  attr->set_name(std::string(name));
  string_view default_str;
  bool has_default = false;
  if (size_t eq = FindDefault(rest); eq != string_view::npos) {
    default_str = Strip(rest.substr(eq + 1));
    rest = Strip(rest.substr(0, eq));
    has_default = true;
  }
  // Minimum: "int >= 2", "list(type) >= 1".
  if (size_t ge = rest.find(">="); ge != string_view::npos) {
    int64_t m;
    if (!absl::SimpleAtoi(Strip(rest.substr(ge + 2)), &m)) {
      return errors::InvalidArgument("bad minimum in attr spec '", spec, "'");
    }
    attr->set_has_minimum(true);
    attr->set_minimum(m);
    rest = Strip(rest.substr(0, ge));
  }
  bool is_list = false;
  string_view inner = rest;
  if (absl::StartsWith(rest, "list(") && absl::EndsWith(rest, ")")) {
    is_list = true;
    inner = rest.substr(5, rest.size() - 6);
  }
  std::string base;
  std::vector<DataType> types;
  if (!inner.empty() && inner[0] == '{' && inner.size() > 1 &&
      (inner[1] == '\'' || inner[1] == '"' ||
       Strip(inner.substr(1))[0] == '\'' || Strip(inner.substr(1))[0] == '"')) {
    base = "string";
    string_view body = inner.substr(1, inner.size() - 2);
    for (string_view p : absl::StrSplit(body, ',')) {
      attr->mutable_allowed_values()->mutable_list()->add_s(
          std::string(Unquote(p)));
    }
  } else if (ParseTypeSet(inner, &types)) {
    base = "type";
    for (DataType dt : types) {
      attr->mutable_allowed_values()->mutable_list()->add_type(dt);
    }
  } else {
    static const char* kKinds[] = {"int",  "float", "bool",   "string",
                                   "type", "shape", "tensor", "func"};
    for (const char* k : kKinds) {
      if (inner == k) base = k;
    }
    if (base.empty()) {
      return errors::InvalidArgument("unknown attr type in spec '", spec, "'");
    }
  }
  attr->set_type(is_list ? absl::StrCat("list(", base, ")") : base);
  if (has_default) {
    Status s =
        ParseDefault(attr->type(), default_str, attr->mutable_default_value());
    if (!s.ok())
      return errors::Prefix(s, absl::StrCat("attr spec '", spec, "': "));
  }
  return absl::OkStatus();
}

OpDef::AttrDef* FindAttr(OpDef* op, string_view name) {
  for (auto& a : *op->mutable_attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

Status ParseArgSpec(string_view spec, OpDef* op, OpDef::ArgDef* arg) {
  string_view name, rest;
  RETURN_IF_ERROR(SplitSpec(spec, &name, &rest));
  arg->set_name(std::string(name));
  if (absl::StartsWith(rest, "Ref(") && absl::EndsWith(rest, ")")) {
    arg->set_is_ref(true);
    rest = Strip(rest.substr(4, rest.size() - 5));
  }
  if (size_t star = rest.find('*'); star != string_view::npos) {
    string_view n = Strip(rest.substr(0, star));
    rest = Strip(rest.substr(star + 1));
    arg->set_number_attr(std::string(n));
    if (FindAttr(op, n) == nullptr) {
      auto* a = op->add_attr();
      a->set_name(std::string(n));
      a->set_type("int");
      a->set_has_minimum(true);
      a->set_minimum(0);
    }
  }
  DataType dt;
  if (DataTypeFromString(rest, &dt) && FindAttr(op, rest) == nullptr) {
    arg->set_type(dt);
    return absl::OkStatus();
  }
  OpDef::AttrDef* a = FindAttr(op, rest);
  if (a == nullptr) {
    a = op->add_attr();
    a->set_name(std::string(rest));
    a->set_type("type");
  }
  if (a->type() == "type") {
    arg->set_type_attr(std::string(rest));
  } else if (a->type() == "list(type)") {
    if (!arg->number_attr().empty()) {
      return errors::InvalidArgument("arg '", spec,
                                     "' mixes N * and a type list");
    }
    arg->set_type_list_attr(std::string(rest));
  } else {
    return errors::InvalidArgument("arg spec '", spec, "' refers to attr '",
                                   rest, "' of type ", a->type());
  }
  return absl::OkStatus();
}

}  // namespace

OpDefBuilder::OpDefBuilder(std::string op_name) {
  op_def_.set_name(std::move(op_name));
}
OpDefBuilder& OpDefBuilder::Input(std::string spec) {
  inputs_.push_back(std::move(spec));
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string spec) {
  outputs_.push_back(std::move(spec));
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string spec) {
  attrs_.push_back(std::move(spec));
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsStateful() {
  op_def_.set_is_stateful(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsCommutative() {
  op_def_.set_is_commutative(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsAggregate() {
  op_def_.set_is_aggregate(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetAllowsUninitializedInput() {
  op_def_.set_allows_uninitialized_input(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  shape_fn_ = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetDoesIO() {
  does_io_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Doc(std::string text) {
  doc_ = std::move(text);
  return *this;
}

Status OpDefBuilder::Finalize(OpRegistrationData* data) const {
  OpDef op = op_def_;
  auto where = [&](const Status& s) {
    return errors::Prefix(s,
                          absl::StrCat("REGISTER_OP(\"", op.name(), "\"): "));
  };
  for (const auto& spec : attrs_) {
    Status s = ParseAttrSpec(spec, op.add_attr());
    if (!s.ok()) return where(s);
  }
  for (const auto& spec : inputs_) {
    Status s = ParseArgSpec(spec, &op, op.add_input_arg());
    if (!s.ok()) return where(s);
  }
  for (const auto& spec : outputs_) {
    Status s = ParseArgSpec(spec, &op, op.add_output_arg());
    if (!s.ok()) return where(s);
  }
  if (!doc_.empty()) {
    size_t nl = doc_.find('\n');
    op.set_summary(std::string(Strip(doc_.substr(0, nl))));
    if (nl != std::string::npos) {
      op.set_description(std::string(Strip(doc_.substr(nl + 1))));
    }
  }
  data->op_def = std::move(op);
  data->shape_fn = shape_fn_;
  data->does_io = does_io_;
  return absl::OkStatus();
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* r = new OpRegistry;
  return r;
}

Status OpRegistry::Register(std::unique_ptr<OpRegistrationData> data) {
  const std::string& name = data->op_def.name();
  if (ops_.count(name))
    return errors::AlreadyExists("op '", name, "' registered twice");
  ops_.emplace(name, std::move(data));
  return absl::OkStatus();
}

const OpRegistrationData* OpRegistry::LookUp(absl::string_view op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : it->second.get();
}

Status OpRegistry::LookUpOpDef(absl::string_view op,
                               const OpDef** op_def) const {
  const OpRegistrationData* d = LookUp(op);
  if (d == nullptr) {
    return errors::NotFound("op type not registered: '", op, "' (Runnel has ",
                            ops_.size(), " ops; see `runnel ops`)");
  }
  *op_def = &d->op_def;
  return absl::OkStatus();
}

std::vector<std::string> OpRegistry::ListOps() const {
  std::vector<std::string> names;
  for (const auto& [name, _] : ops_) names.push_back(name);
  return names;
}

bool OpRegistry::DoesIO(absl::string_view op) const {
  const OpRegistrationData* d = LookUp(op);
  return d == nullptr || d->does_io;
}

register_op::OpDefBuilderReceiver::OpDefBuilderReceiver(const OpDefBuilder& b) {
  auto data = std::make_unique<OpRegistrationData>();
  Status s = b.Finalize(data.get());
  if (s.ok()) s = OpRegistry::Global()->Register(std::move(data));
  if (!s.ok()) {
    std::fprintf(stderr, "op registration failed: %s\n",
                 std::string(s.message()).c_str());
    std::abort();
  }
}

// ---------------------------------------------------------------------------
// Node helpers

void AddDefaultsToAttrs(const OpDef& op_def, AttrMap* attrs) {
  for (const auto& a : op_def.attr()) {
    if (a.has_default_value() && attrs->find(a.name()) == attrs->end()) {
      (*attrs)[a.name()] = a.default_value();
    }
  }
}

Status ValidateAttrs(const OpDef& op_def, const AttrMap& attrs) {
  for (const auto& a : op_def.attr()) {
    auto it = attrs.find(a.name());
    if (it == attrs.end()) {
      return errors::InvalidArgument("missing attr '", a.name(), "' of type ",
                                     a.type());
    }
    const AttrValue& v = it->second;
    const std::string kind = AttrValueKind(v);
    const bool is_list = absl::StartsWith(a.type(), "list(");
    const bool kind_ok =
        kind == a.type() || (is_list && (kind == "list" || kind.empty()));
    if (!kind_ok) {
      return errors::InvalidArgument("attr '", a.name(), "' must be ", a.type(),
                                     " but is ", kind.empty() ? "unset" : kind,
                                     " (", SummarizeAttrValue(v), ")");
    }
    // Out-of-range enum values arrive from untrusted GraphDefs (proto3 keeps
    // unknown enum numbers): reject them before anything switches on them.
    auto check_known = [&](int t) -> Status {
      if (DataTypeIsKnown(static_cast<DataType>(t), /*allow_ref=*/false)) {
        return absl::OkStatus();
      }
      return errors::InvalidArgument("attr '", a.name(), "' has DataType ", t,
                                     ", which is not a valid type");
    };
    if (a.type() == "type") RETURN_IF_ERROR(check_known(v.type()));
    if (a.type() == "list(type)") {
      for (int t : v.list().type()) RETURN_IF_ERROR(check_known(t));
    }
    if (a.has_allowed_values()) {
      const auto& allowed = a.allowed_values().list();
      auto check_type = [&](DataType t) -> Status {
        for (int x : allowed.type()) {
          if (x == t) return absl::OkStatus();
        }
        std::vector<std::string> names;
        for (int x : allowed.type())
          names.push_back(DataTypeString(static_cast<DataType>(x)));
        return errors::InvalidArgument(
            "attr '", a.name(), "' value ", DataTypeString(t),
            " is not in the allowed list {", absl::StrJoin(names, ", "), "}");
      };
      auto check_string = [&](const std::string& s) -> Status {
        for (const auto& x : allowed.s()) {
          if (x == s) return absl::OkStatus();
        }
        return errors::InvalidArgument("attr '", a.name(), "' value \"", s,
                                       "\" is not in the allowed list {",
                                       absl::StrJoin(allowed.s(), ", "), "}");
      };
      if (a.type() == "type") RETURN_IF_ERROR(check_type(v.type()));
      if (a.type() == "list(type)") {
        for (int t : v.list().type())
          RETURN_IF_ERROR(check_type(static_cast<DataType>(t)));
      }
      if (a.type() == "string") RETURN_IF_ERROR(check_string(v.s()));
      if (a.type() == "list(string)") {
        for (const auto& s : v.list().s()) RETURN_IF_ERROR(check_string(s));
      }
    }
    if (a.has_minimum()) {
      int64_t got = -1;
      if (a.type() == "int")
        got = v.i();
      else if (is_list) {
        const auto& l = v.list();
        got = l.i_size() + l.f_size() + l.s_size() + l.b_size() +
              l.type_size() + l.shape_size() + l.tensor_size() + l.func_size();
      }
      if (got >= 0 && got < a.minimum()) {
        return errors::InvalidArgument("attr '", a.name(), "' is ", got,
                                       ", must be at least ", a.minimum());
      }
    }
  }
  for (const auto& [name, _] : attrs) {
    if (!name.empty() && name[0] == '_') continue;
    bool known = false;
    for (const auto& a : op_def.attr()) known |= a.name() == name;
    if (!known) {
      return errors::InvalidArgument("unknown attr '", name, "' for op ",
                                     op_def.name());
    }
  }
  return absl::OkStatus();
}

namespace {

Status ArgTypes(const OpDef::ArgDef& arg, const AttrMap& attrs,
                DataTypeVector* out) {
  auto add = [&](DataType dt) {
    out->push_back(arg.is_ref() ? MakeRefType(dt) : dt);
  };
  if (!arg.type_list_attr().empty()) {
    std::vector<DataType> types;
    RETURN_IF_ERROR(GetAttr(attrs, arg.type_list_attr(), &types));
    for (DataType dt : types) add(dt);
    return absl::OkStatus();
  }
  DataType dt = arg.type();
  if (!arg.type_attr().empty())
    RETURN_IF_ERROR(GetAttr(attrs, arg.type_attr(), &dt));
  int64_t n = 1;
  if (!arg.number_attr().empty()) {
    RETURN_IF_ERROR(GetAttr(attrs, arg.number_attr(), &n));
    // A bound on the inputs or outputs one node has: a 30-byte graph must
    // not ask for a million outputs (each a tensor to allocate, even when
    // empty). No real graph comes near it.
    constexpr int64_t kMaxListLength = 1 << 16;
    if (n < 0 || n > kMaxListLength) {
      return errors::InvalidArgument("attr '", arg.number_attr(), "' is ", n,
                                     ", not in [0, ", kMaxListLength, "]");
    }
  }
  for (int64_t i = 0; i < n; ++i) add(dt);
  return absl::OkStatus();
}

}  // namespace

Status InOutTypesForNode(const OpDef& op_def, const AttrMap& attrs,
                         DataTypeVector* inputs, DataTypeVector* outputs) {
  inputs->clear();
  outputs->clear();
  for (const auto& a : op_def.input_arg())
    RETURN_IF_ERROR(ArgTypes(a, attrs, inputs));
  for (const auto& a : op_def.output_arg())
    RETURN_IF_ERROR(ArgTypes(a, attrs, outputs));
  return absl::OkStatus();
}

Status NameRangesForNode(const OpDef& op_def, const AttrMap& attrs,
                         std::map<std::string, std::pair<int, int>>* inputs,
                         std::map<std::string, std::pair<int, int>>* outputs) {
  auto ranges = [&](const auto& args,
                    std::map<std::string, std::pair<int, int>>* out) {
    int start = 0;
    for (const auto& a : args) {
      DataTypeVector types;
      RETURN_IF_ERROR(ArgTypes(a, attrs, &types));
      int end = start + static_cast<int>(types.size());
      (*out)[a.name()] = {start, end};
      start = end;
    }
    return absl::OkStatus();
  };
  if (inputs) RETURN_IF_ERROR(ranges(op_def.input_arg(), inputs));
  if (outputs) RETURN_IF_ERROR(ranges(op_def.output_arg(), outputs));
  return absl::OkStatus();
}

}  // namespace runnel
