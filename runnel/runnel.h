// The Runnel C++ client API in one include:
//
//   #include <runnel/runnel.h>
//   using namespace runnel;
//
//   Scope root = Scope::NewRootScope();
//   auto a = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}});
//   auto b = ops::MatMul(root, a, a, ops::MatMul::TransposeB(true));
//   ClientSession session(root);
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session.Run({b}, &out));
//
// Scope, Output, Operation, Input, NodeBuilder, ops::Const:
// runnel/graph/scope.h. Typed wrappers for every registered op (generated):
// runnel/ops/ops_gen.h. Running: runnel/api/client_session.h. Symbolic
// gradients: runnel/graph/gradients.h.
#ifndef RUNNEL_RUNNEL_H_
#define RUNNEL_RUNNEL_H_

#include "runnel/api/client_session.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/control_flow.h"
#include "runnel/graph/gradients.h"
#include "runnel/graph/scope.h"
#include "runnel/ops/ops_gen.h"

#endif  // RUNNEL_RUNNEL_H_
