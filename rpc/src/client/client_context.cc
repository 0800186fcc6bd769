#include "client/client_context.h"

#include "stream/stream_side.h"

namespace wheelrpc::rpc::detail {
namespace {

std::shared_ptr<const ClientWireSettings> wire_settings(const ClientOptions& options) {
  auto s = std::make_shared<ClientWireSettings>();
  s->protocol = options.protocol;
  s->channel = options.channel;
  if (options.tls.enabled) s->tls = transport::TlsContext::make(options.tls, transport::TlsRole::client);
  s->server_name = options.tls.server_name;
  s->stream_window = options.stream_window;
  s->coding = PayloadCoding{options.compression.threshold, options.compression.accept, options.compression.max_ratio};
  s->clock = options.clock;
  return s;
}

}  // namespace

ClientContext::ClientContext(boost::asio::any_io_executor executor, timer::Timer& t, ClientOptions opts,
                             ClientWireFactory factory)
    : ex(std::move(executor)),
      io_ex(ex.target<boost::asio::io_context::executor_type>()),
      timer(t),
      options(std::move(opts)),
      clock(options.clock),
      wire(wire_settings(options)),
      make_transport(factory) {
  if (!options.interceptors.empty()) {
    interceptors = std::make_shared<const std::vector<std::shared_ptr<ClientInterceptor>>>(options.interceptors);
  }
  if (!options.attempt_interceptors.empty()) {
    attempt_interceptors =
        std::make_shared<const std::vector<std::shared_ptr<ClientInterceptor>>>(options.attempt_interceptors);
  }
}

std::shared_ptr<StreamSide> make_stream_side(const std::shared_ptr<ClientContext>& ctx) {
  auto side = std::make_shared<StreamSide>();
  side->client = true;
  side->ex = ctx->ex;
  side->timer = &ctx->timer;
  side->clock = ctx->clock;
  side->owner = ctx;
  side->gate = &ctx->sweep_work;
  side->max_message = ctx->options.max_stream_message;
  side->coding = &ctx->wire->coding;
  return side;
}

}  // namespace wheelrpc::rpc::detail
