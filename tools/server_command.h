// `runnel server`: one task of a cluster (see server_command.cc).
#ifndef RUNNEL_TOOLS_SERVER_COMMAND_H_
#define RUNNEL_TOOLS_SERVER_COMMAND_H_

#include <string>
#include <vector>

namespace runnel {

// Exit status: 0 after SIGINT/SIGTERM, 1 on errors, 2 on usage errors.
int ServerCommand(const std::vector<std::string>& args);

// Registers "grpc://" session targets (for `runnel run --master`), with
// mutual TLS when the three PEM paths are given.
void EnableGrpcSessions(const std::string& tls_cert = "",
                        const std::string& tls_key = "",
                        const std::string& tls_ca = "");

}  // namespace runnel

#endif  // RUNNEL_TOOLS_SERVER_COMMAND_H_
