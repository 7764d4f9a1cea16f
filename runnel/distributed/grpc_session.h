// GrpcSession: a Session whose master is a server of a cluster, reached at
// "grpc://host:port" over "/tensorflow.MasterService/<Method>" (TF's
// GrpcSession). Create/Extend send the graph, Run is one RunStep (feeds and
// fetches as TensorProtos), Close closes the master's session.
//
//   RegisterGrpcSessionFactory();  // once: NewSession handles grpc://
//   SessionOptions opts;
//   opts.target = "grpc://127.0.0.1:2222";
//   ASSIGN_OR_RETURN(auto session, NewSession(opts));
//
// Errors keep the master's codes; a master that cannot be reached gives
// Unavailable naming the target.
#ifndef RUNNEL_DISTRIBUTED_GRPC_SESSION_H_
#define RUNNEL_DISTRIBUTED_GRPC_SESSION_H_

#include <memory>

#include "runnel/distributed/grpc_util.h"
#include "runnel/runtime/session.h"

namespace runnel {

// `tls` (may be empty) for a cluster with mutual TLS.
StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options,
                                                  const TlsFiles& tls = {});

// Registers NewGrpcSession for "grpc://" targets of NewSession, with `tls`
// for every such session (call again to change it).
void RegisterGrpcSessionFactory(const TlsFiles& tls = {});

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_SESSION_H_
