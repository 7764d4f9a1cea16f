// Function libraries through a Session: TF 1.x calls by function name, TF 2
// call ops, nested calls, side effects through control outputs, and the
// errors for bad libraries (runnel/graph/function.h).
#include "runnel/graph/function.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

// MySquare(x: T) -> y = x * x, with T an attr (TF's Defun style), and
// SumOfSquares(a, b: float) -> a² + b² calling it through PartitionedCall.
constexpr char kLibrary[] = R"pb(
  library {
    function {
      signature {
        name: "MySquare"
        input_arg { name: "x" type_attr: "T" }
        output_arg { name: "y" type_attr: "T" }
        attr { name: "T" type: "type" }
      }
      node_def {
        name: "mul"
        op: "Mul"
        input: "x"
        input: "x"
        attr {
          key: "T"
          value { placeholder: "T" }
        }
      }
      ret { key: "y" value: "mul:z:0" }
    }
    function {
      signature {
        name: "SumOfSquares"
        input_arg { name: "a" type: DT_FLOAT }
        input_arg { name: "b" type: DT_FLOAT }
        output_arg { name: "sum" type: DT_FLOAT }
      }
      node_def {
        name: "sa"
        op: "PartitionedCall"
        input: "a"
        attr {
          key: "Tin"
          value { list { type: DT_FLOAT } }
        }
        attr {
          key: "Tout"
          value { list { type: DT_FLOAT } }
        }
        attr {
          key: "f"
          value {
            func {
              name: "MySquare"
              attr {
                key: "T"
                value { type: DT_FLOAT }
              }
            }
          }
        }
      }
      node_def {
        name: "sb"
        op: "MySquare"
        input: "b"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "add"
        op: "AddV2"
        input: "sa:output:0"
        input: "sb:y:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "sum" value: "add:z:0" }
    }
    function {
      signature {
        name: "Bump"
        input_arg { name: "v" type: DT_RESOURCE }
        control_output: "assign"
      }
      node_def {
        name: "one"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value { tensor { dtype: DT_FLOAT float_val: 1 } }
        }
      }
      node_def {
        name: "assign"
        op: "AssignAddVariableOp"
        input: "v"
        input: "one:output:0"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
      }
      control_ret { key: "assign" value: "assign" }
    }
  }
)pb";

constexpr char kFloatNode[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "y"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
)pb";

GraphDef Parse(const std::string& text) {
  GraphDef g;
  Status s = ParseGraphDefText(text, &g);
  EXPECT_OK(s);
  return g;
}

std::string CallNode(const std::string& name, const std::string& op,
                     const std::string& f, const std::string& inputs,
                     const std::string& tin, const std::string& tout) {
  return absl::StrCat("node { name: '", name, "' op: '", op, "' ", inputs,
                      " attr { key: 'Tin' value { list { ", tin,
                      " } } } attr { key: 'Tout' value { list { ", tout,
                      " } } } attr { key: 'f' value { func { name: '", f,
                      "' } } } }");
}

TEST(FunctionTest, CallsByNameAndByCallOpsNestedRunInlined) {
  const std::string text = absl::StrCat(
      kLibrary, kFloatNode,
      // TF 1.x style: the op is the function's name.
      "node { name: 'sq' op: 'MySquare' input: 'x' attr { key: 'T' value { "
      "type: DT_FLOAT } } }",
      CallNode("ss", "PartitionedCall", "SumOfSquares", "input: 'x' input: 'y'",
               "type: DT_FLOAT type: DT_FLOAT", "type: DT_FLOAT"),
      "node { name: 'out' op: 'Identity' input: 'ss' attr { key: 'T' value { "
      "type: DT_FLOAT } } }");
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(Parse(text)));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({{"x", Tensor::FromVector<float>({1, -2, 3})},
                             {"y", Tensor::FromVector<float>({4, 5, 0.5})}},
                            {"sq:0", "ss:0", "out:0"}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({1, 4, 9}));
  ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({17, 29, 9.25f}));
  ExpectTensorEqual<float>(out[2], out[1]);
}

TEST(FunctionTest, CallByNameBecomesACallNodeAndExportsItsLibrary) {
  Graph g;
  ASSERT_OK(ImportGraphDef(
      Parse(absl::StrCat(kLibrary, kFloatNode,
                         "node { name: 'sq' op: 'MySquare' input: 'x' attr { "
                         "key: 'T' value { type: DT_FLOAT } } }")),
      &g));
  ASSERT_NE(g.library(), nullptr);
  EXPECT_EQ(g.library()->size(), 3);
  Node* sq = g.FindNode("sq");
  ASSERT_NE(sq, nullptr);
  EXPECT_EQ(sq->type_string(), "PartitionedCall");  // Its body is stateless.
  GraphDef exported;
  ToGraphDef(g, &exported);
  EXPECT_EQ(exported.library().function_size(), 3);
  Graph again;
  ASSERT_OK(ImportGraphDef(exported, &again));
  int inlined = 0;
  ASSERT_OK(InlineFunctionCalls(&again, &inlined));
  EXPECT_EQ(inlined, 1);
  EXPECT_NE(again.FindNode("sq/mul"), nullptr);
  EXPECT_EQ(again.FindNode("sq")->type_string(), "IdentityN");
}

TEST(FunctionTest, ControlOutputsRunWhenTheCallIsATarget) {
  const std::string text = absl::StrCat(
      kLibrary,
      "node { name: 'v' op: 'VarHandleOp' attr { key: 'dtype' value { type: "
      "DT_FLOAT } } attr { key: 'shape' value { shape {} } } }"
      "node { name: 'zero' op: 'Const' attr { key: 'dtype' value { type: "
      "DT_FLOAT } } attr { key: 'value' value { tensor { dtype: DT_FLOAT "
      "tensor_shape {} float_val: 0 } } } }"
      "node { name: 'init' op: 'AssignVariableOp' input: 'v' input: 'zero' "
      "attr { key: 'dtype' value { type: DT_FLOAT } } }"
      "node { name: 'read' op: 'ReadVariableOp' input: 'v' input: '^bump' "
      "attr { key: 'dtype' value { type: DT_FLOAT } } }",
      CallNode("bump", "StatefulPartitionedCall", "Bump", "input: 'v'",
               "type: DT_RESOURCE", ""));
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(Parse(text)));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {}, {"init"}, &out));
  ASSERT_OK((*session)->Run({}, {}, {"bump"}, &out));
  ASSERT_OK((*session)->Run({}, {}, {"bump"}, &out));
  // `read` waits for a third bump through ^bump.
  ASSERT_OK((*session)->Run({}, {"read:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 3.0f);
}

TEST(FunctionTest, BadLibrariesAndCallsAreErrorsNamingTheFunction) {
  auto create = [](const std::string& text) {
    auto session = NewSession();
    EXPECT_OK(session.status());
    return (*session)->Create(Parse(text));
  };
  // A call to a function the library lacks.
  Status s = create(absl::StrCat(
      kFloatNode, CallNode("c", "PartitionedCall", "Nope", "input: 'x'",
                           "type: DT_FLOAT", "type: DT_FLOAT")));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'Nope'"));
  // Tin/Tout that do not match the signature.
  s = create(
      absl::StrCat(kLibrary, kFloatNode,
                   CallNode("c", "PartitionedCall", "SumOfSquares",
                            "input: 'x'", "type: DT_FLOAT", "type: DT_FLOAT")));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("signature"));
  // A body input naming nothing.
  s = create(R"pb(
    library {
      function {
        signature {
          name: "Broken"
          input_arg { name: "x" type: DT_FLOAT }
          output_arg { name: "y" type: DT_FLOAT }
        }
        node_def { name: "id" op: "Identity" input: "nothing:output:0" }
        ret { key: "y" value: "id:output:0" }
      }
    })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("function 'Broken'"));
  // A return value for an output the signature lacks.
  s = create(R"pb(
    library {
      function {
        signature {
          name: "NoRet"
          input_arg { name: "x" type: DT_FLOAT }
          output_arg { name: "y" type: DT_FLOAT }
        }
        ret { key: "z" value: "x" }
      }
    })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'y'"));
  // Recursion without a base case stops at kMaxInlineDepth.
  s = create(
      absl::StrCat(R"pb(
                     library {
                       function {
                         signature {
                           name: "Forever"
                           input_arg { name: "x" type: DT_FLOAT }
                           output_arg { name: "y" type: DT_FLOAT }
                         }
                         node_def { name: "again" op: "Forever" input: "x" }
                         ret { key: "y" value: "again:y:0" }
                       }
                     })pb",
                   kFloatNode, "node { name: 'f' op: 'Forever' input: 'x' }"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("recursive"));
  // Calls that double at every level stop at kMaxInlinedCalls.
  s = create(absl::StrCat(R"pb(
                            library {
                              function {
                                signature {
                                  name: "Twice"
                                  input_arg { name: "x" type: DT_FLOAT }
                                  output_arg { name: "y" type: DT_FLOAT }
                                }
                                node_def { name: "l" op: "Twice" input: "x" }
                                node_def { name: "r" op: "Twice" input: "x" }
                                node_def {
                                  name: "add"
                                  op: "AddV2"
                                  input: "l:y:0"
                                  input: "r:y:0"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                ret { key: "y" value: "add:z:0" }
                              }
                            })pb",
                          kFloatNode,
                          "node { name: 'f' op: 'Twice' input: 'x' }"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("multiply"));
  // The same name defined twice with different bodies.
  GraphDef twice = Parse(kLibrary);
  *twice.mutable_library()->add_function() = twice.library().function(0);
  twice.mutable_library()->mutable_function(3)->mutable_ret()->at("y") = "x";
  auto session = NewSession();
  ASSERT_OK(session.status());
  s = (*session)->Create(twice);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("defined twice"));
}

// TF 1.x's gradient of a Defun call: tf.gradients writes SymbolicGradient(x,
// dy; f) (gradients_impl's _SymGrad, with the call's attrs in f). Sessions
// lower it to a call of f's gradient (Note [Lowered SymbolicGradient]).
std::string SymGradNode(const std::string& name, const std::string& f,
                        const std::string& f_attrs, const std::string& inputs,
                        const std::string& tin, const std::string& tout) {
  return absl::StrCat("node { name: '", name, "' op: 'SymbolicGradient' ",
                      inputs, " attr { key: 'Tin' value { list { ", tin,
                      " } } } attr { key: 'Tout' value { list { ", tout,
                      " } } } attr { key: 'f' value { func { name: '", f, "' ",
                      f_attrs, " } } } }");
}

constexpr char kFloatT[] = "attr { key: 'T' value { type: DT_FLOAT } }";

TEST(FunctionTest, SymbolicGradientOfADefunCallIsItsDerivative) {
  const std::string text = absl::StrCat(
      kLibrary, kFloatNode, "node { name: 'sq' op: 'MySquare' input: 'x' ",
      kFloatT, " }",
      // d(x²)/dx · dy = 2·x·dy, with y as dy.
      SymGradNode("grad", "MySquare", kFloatT, "input: 'x' input: 'y'",
                  "type: DT_FLOAT type: DT_FLOAT", "type: DT_FLOAT"),
      // Of a two-input function: d(a² + b²) = (2a·dy, 2b·dy).
      SymGradNode("grad2", "SumOfSquares", "",
                  "input: 'x' input: 'y' input: 'y'",
                  "type: DT_FLOAT type: DT_FLOAT type: DT_FLOAT",
                  "type: DT_FLOAT type: DT_FLOAT"));
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(Parse(text)));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({{"x", Tensor::FromVector<float>({1, -2, 3})},
                             {"y", Tensor::FromVector<float>({4, 5, 0.5})}},
                            {"sq:0", "grad:0", "grad2:0", "grad2:1"}, {},
                            &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({1, 4, 9}));
  ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({8, -20, 3}));
  ExpectTensorEqual<float>(out[2], Tensor::FromVector<float>({8, -20, 3}));
  ExpectTensorEqual<float>(out[3], Tensor::FromVector<float>({32, 50, 0.5}));
}

// Scale(x: float, n: int32) -> (y = x·n, m = n): dL/dn is zeros (not
// floating point) and dL/dm is ignored; a GradientDef replaces the built
// gradient, as TF's Defun(grad_func=...) does.
constexpr char kScaleLibrary[] = R"pb(
  library {
    function {
      signature {
        name: "Scale"
        input_arg { name: "x" type: DT_FLOAT }
        input_arg { name: "n" type: DT_INT32 }
        output_arg { name: "y" type: DT_FLOAT }
        output_arg { name: "m" type: DT_INT32 }
      }
      node_def {
        name: "nf"
        op: "Cast"
        input: "n"
        attr {
          key: "SrcT"
          value { type: DT_INT32 }
        }
        attr {
          key: "DstT"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "mul"
        op: "Mul"
        input: "x"
        input: "nf:y:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "y" value: "mul:z:0" }
      ret { key: "m" value: "n" }
    }
    function {
      signature {
        name: "Cube"
        input_arg { name: "x" type: DT_FLOAT }
        output_arg { name: "y" type: DT_FLOAT }
      }
      node_def {
        name: "p"
        op: "Pow"
        input: "x"
        input: "three:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "three"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value { tensor { dtype: DT_FLOAT float_val: 3 } }
        }
      }
      ret { key: "y" value: "p:z:0" }
    }
    function {
      signature {
        name: "CubeGradTimesTen"
        input_arg { name: "x" type: DT_FLOAT }
        input_arg { name: "dy" type: DT_FLOAT }
        output_arg { name: "dx" type: DT_FLOAT }
      }
      node_def {
        name: "ten"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value { tensor { dtype: DT_FLOAT float_val: 10 } }
        }
      }
      node_def {
        name: "mul"
        op: "Mul"
        input: "dy"
        input: "ten:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "dx" value: "mul:z:0" }
    }
    gradient { function_name: "Cube" gradient_func: "CubeGradTimesTen" }
  }
)pb";

TEST(FunctionTest, SymbolicGradientZerosIntegersAndUsesAGradientDef) {
  const std::string text = absl::StrCat(
      kScaleLibrary, kFloatNode,
      "node { name: 'n' op: 'Placeholder' attr { key: 'dtype' value { type: "
      "DT_INT32 } } }",
      SymGradNode("grad", "Scale", "",
                  "input: 'x' input: 'n' input: 'y' "
                  "input: 'n'",
                  "type: DT_FLOAT type: DT_INT32 type: DT_FLOAT type: DT_INT32",
                  "type: DT_FLOAT type: DT_INT32"),
      SymGradNode("cube_grad", "Cube", "", "input: 'x' input: 'y'",
                  "type: DT_FLOAT type: DT_FLOAT", "type: DT_FLOAT"));
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(Parse(text)));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({{"x", Tensor::FromVector<float>({1, -2})},
                             {"y", Tensor::FromVector<float>({4, 5})},
                             {"n", Tensor::FromVector<int32_t>({3, 7})}},
                            {"grad:0", "grad:1", "cube_grad:0"}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({12, 35}));
  ExpectTensorEqual<int32_t>(out[1], Tensor::FromVector<int32_t>({0, 0}));
  // The GradientDef's 10·dy, not 3x²·dy.
  ExpectTensorEqual<float>(out[2], Tensor::FromVector<float>({40, 50}));
}

TEST(FunctionTest, BadSymbolicGradientsAreErrorsNamingTheNode) {
  auto create = [](const std::string& text) {
    auto session = NewSession();
    EXPECT_OK(session.status());
    return (*session)->Create(Parse(text));
  };
  // A function the library lacks.
  Status s = create(absl::StrCat(
      kLibrary, kFloatNode,
      SymGradNode("g", "Nope", "", "input: 'x' input: 'y'",
                  "type: DT_FLOAT type: DT_FLOAT", "type: DT_FLOAT")));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 'g'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'Nope'"));
  // No dy: Tin must be the inputs and then the outputs.
  s = create(absl::StrCat(kLibrary, kFloatNode,
                          SymGradNode("g", "MySquare", kFloatT, "input: 'x'",
                                      "type: DT_FLOAT", "type: DT_FLOAT")));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 'g'"));
  // A function with side effects cannot be recomputed for its gradient.
  s = create(absl::StrCat(
      kLibrary,
      "node { name: 'v' op: 'VarHandleOp' attr { key: 'dtype' value { type: "
      "DT_FLOAT } } attr { key: 'shape' value { shape {} } } }",
      SymGradNode("g", "Bump", "", "input: 'v'", "type: DT_RESOURCE",
                  "type: DT_RESOURCE")));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 'g'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("changes state"));
  // One kept out of lowering fails when it runs, naming itself.
  std::string kept =
      SymGradNode("g", "MySquare", kFloatT, "input: 'x' input: 'y'",
                  "type: DT_FLOAT type: DT_FLOAT", "type: DT_FLOAT");
  kept.insert(kept.size() - 1, " attr { key: '_noinline' value { b: true } } ");
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK(
      (*session)->Create(Parse(absl::StrCat(kLibrary, kFloatNode, kept))));
  std::vector<Tensor> out;
  s = (*session)->Run(
      {{"x", Tensor::Scalar<float>(1)}, {"y", Tensor::Scalar<float>(1)}},
      {"g:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'g'"));
}

}  // namespace
}  // namespace runnel
