#include "runnel/distributed/grpc_util.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace runnel {

grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  int code = static_cast<int>(s.error_code());
  if (code < 0 || code > 16)
    code = static_cast<int>(absl::StatusCode::kUnknown);
  return Status(static_cast<absl::StatusCode>(code), s.error_message());
}

void SerializeToByteBuffer(const google::protobuf::MessageLite& msg,
                           grpc::ByteBuffer* out) {
  const size_t size = msg.ByteSizeLong();
  grpc::Slice slice(size);
  msg.SerializeWithCachedSizesToArray(const_cast<uint8_t*>(slice.begin()));
  grpc::ByteBuffer tmp(&slice, 1);
  out->Swap(&tmp);
}

Status ParseFromByteBuffer(const grpc::ByteBuffer& buf,
                           google::protobuf::MessageLite* msg,
                           absl::string_view what) {
  // ProtoBufferReader needs a mutable buffer; copying a ByteBuffer only
  // takes references on its slices.
  grpc::ByteBuffer copy(buf);
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !msg->ParseFromZeroCopyStream(&reader)) {
    return errors::InvalidArgument("cannot parse the ", msg->GetTypeName(),
                                   " of ", what, " (", buf.Length(), " bytes)");
  }
  return absl::OkStatus();
}

namespace {

StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return errors::InvalidArgument("cannot read the TLS ", what, " file '",
                                   path, "'");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status CheckComplete(const TlsFiles& f) {
  if (f.cert.empty() || f.key.empty() || f.ca.empty()) {
    return errors::InvalidArgument(
        "TLS needs all three of a certificate, its key and the CA "
        "certificate (--tls_cert, --tls_key, --tls_ca)");
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  RETURN_IF_ERROR(CheckComplete(files));
  ASSIGN_OR_RETURN(std::string cert, ReadPem(files.cert, "certificate"));
  ASSIGN_OR_RETURN(std::string key, ReadPem(files.key, "key"));
  ASSIGN_OR_RETURN(std::string ca, ReadPem(files.ca, "CA"));
  grpc::SslServerCredentialsOptions opts(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_root_certs = ca;
  opts.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(opts);
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureChannelCredentials();
  RETURN_IF_ERROR(CheckComplete(files));
  grpc::SslCredentialsOptions opts;
  ASSIGN_OR_RETURN(opts.pem_root_certs, ReadPem(files.ca, "CA"));
  ASSIGN_OR_RETURN(opts.pem_private_key, ReadPem(files.key, "key"));
  ASSIGN_OR_RETURN(opts.pem_cert_chain, ReadPem(files.cert, "certificate"));
  return grpc::SslCredentials(opts);
}

std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  std::string target = address;
  if (absl::StartsWith(target, "grpc://")) target = target.substr(7);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  // Certificates name "localhost"; clusters address 127.0.0.1.
  args.SetSslTargetNameOverride("localhost");
  return grpc::CreateCustomChannel(target, credentials, args);
}

// One call: read the request, run the handler, write the response.
class RpcService::Reactor final : public grpc::ServerGenericBidiReactor {
 public:
  Reactor(const Entry* entry, ThreadPool* pool, const std::string& method)
      : entry_(entry), pool_(pool) {
    if (entry_ == nullptr) {
      Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          absl::StrCat("unknown method '", method, "'")));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the call carried no request message"));
      return;
    }
    if (entry_->blocking) {
      pool_->Schedule([this] { Handle(); });
    } else {
      Handle();
    }
  }

  void OnWriteDone(bool) override {}
  // The caller cancelled or went away. gRPC runs OnDone only after this
  // returns, so call_ outlives its cancel callback.
  void OnCancel() override { call_.StartCancel(); }
  void OnDone() override { delete this; }

 private:
  void Handle() {
    entry_->handler(request_, &response_, &call_, [this](const Status& s) {
      if (s.ok()) {
        StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
      } else {
        Finish(ToGrpcStatus(s));
      }
    });
  }

  const Entry* entry_;
  ThreadPool* pool_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  CallOptions call_;
};

RpcService::RpcService(int blocking_threads) : pool_("rpc", blocking_threads) {}

RpcService::~RpcService() = default;

void RpcService::Register(const std::string& method, Handler handler,
                          bool blocking) {
  methods_[method] = Entry{std::move(handler), blocking};
}

grpc::ServerGenericBidiReactor* RpcService::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  auto it = methods_.find(context->method());
  return new Reactor(it == methods_.end() ? nullptr : &it->second, &pool_,
                     context->method());
}

}  // namespace runnel
