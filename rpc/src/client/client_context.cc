#include "client/client_context.h"

#include <stdexcept>

#include "client/provider_review.h"
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
  if (!options.tag.empty()) {
    auto checked = RoutingTag::make(options.tag);
    if (!checked) {
      throw std::invalid_argument("ClientOptions::tag '" + options.tag +
                                  "' is not a routing tag: 1..64 characters of [A-Za-z0-9._-]");
    }
    tag = *checked;
  }
  if (options.outlier_detection.enabled || options.load_balance == LoadBalance::load_aware || options.rules) {
    review = std::make_shared<ProviderReview>(ex, timer, clock, options.outlier_detection,
                                              options.outlier_detection.enabled);
  }
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

void ClientContext::remember_idl(const std::string& method, const CallOptions& call) {
  const bool any = call.timeout.layer() == Layer::idl || call.attempt_timeout.layer() == Layer::idl ||
                   call.retries.layer() == Layer::idl || call.idempotent.layer() == Layer::idl ||
                   call.hedge_delay.layer() == Layer::idl || call.wait_for_ready.layer() == Layer::idl ||
                   call.compression.layer() == Layer::idl || call.compression_level.layer() == Layer::idl ||
                   call.stream_timeout.layer() == Layer::idl || call.message_timeout.layer() == Layer::idl ||
                   call.stall_timeout.layer() == Layer::idl || call.first_message_timeout.layer() == Layer::idl;
  if (!any) return;
  CallOptions kept;  // the policy Settings only: no attachments, no payload-sized copies
  kept.timeout = call.timeout;
  kept.attempt_timeout = call.attempt_timeout;
  kept.retries = call.retries;
  kept.idempotent = call.idempotent;
  kept.hedge_delay = call.hedge_delay;
  kept.wait_for_ready = call.wait_for_ready;
  kept.compression = call.compression;
  kept.compression_level = call.compression_level;
  kept.stream_timeout = call.stream_timeout;
  kept.message_timeout = call.message_timeout;
  kept.stall_timeout = call.stall_timeout;
  kept.first_message_timeout = call.first_message_timeout;
  common::LockGuard lock(idl_mu);
  idl_seen.insert_or_assign(method, std::move(kept));
}

std::optional<CallOptions> ClientContext::idl_of(std::string_view method) const {
  common::LockGuard lock(idl_mu);
  auto it = idl_seen.find(method);
  if (it == idl_seen.end()) return std::nullopt;
  return it->second;
}

}  // namespace wheelrpc::rpc::detail
