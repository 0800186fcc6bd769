// provider_source(): a Client's providers from a registry subscription.

#include <algorithm>
#include <cstdint>

#include <spdlog/spdlog.h>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/registry/rpc_binding.h>

#include "endpoint_address.h"
#include "log.h"

namespace wheelrpc::registry {
namespace {

// start → subscribe, stop → unsubscribe; each set the subscription reports is
// converted to ProviderInfo (endpoint, weight, zone, tags) and reported whole (possibly empty); each failed
// read or watch is reported as an error (the client keeps its set). The
// listener runs on the registry's strand, so never concurrently with itself.
class RegistryProviderSource final : public rpc::ProviderSource {
 public:
  RegistryProviderSource(std::shared_ptr<Registry> registry, std::string service)
      : registry_(std::move(registry)), service_(std::move(service)) {}

  ~RegistryProviderSource() override { stop(); }

  void start(Listener listener) override {
    start_with_info([listener = std::move(listener)](boost::system::error_code ec,
                                                     std::vector<rpc::ProviderInfo> providers, std::string why) {
      std::vector<boost::asio::ip::tcp::endpoint> eps;
      eps.reserve(providers.size());
      for (auto& p : providers) eps.push_back(p.endpoint);
      listener(ec, std::move(eps), std::move(why));
    });
  }

  // Each record's weight (clamped to 0..10000), zone and tags go with its
  // endpoint: a record that changed only in weight changes the client's
  // weight, not its connection.
  void start_with_info(InfoListener listener) override {
    common::LockGuard l(mu_);
    if (started_) return;
    started_ = true;
    // Both callbacks run on the registry's strand, never concurrently. The
    // client names the source (describe()) before `why`: no prefix here.
    auto on_error = [listener](boost::system::error_code ec, const std::string& why) { listener(ec, {}, why); };
    auto on_set = [listener = std::move(listener), service = service_](const std::vector<ServiceInstance>& providers) {
      std::vector<rpc::ProviderInfo> infos;
      infos.reserve(providers.size());
      for (const auto& p : providers) {
        std::string why;
        if (auto ep = detail::parse_ip_endpoint(p.endpoint, why)) {
          rpc::ProviderInfo info(*ep);
          info.weight = static_cast<std::uint32_t>(std::clamp(p.weight, 0, 10000));
          info.zone = p.zone;
          info.tags = p.tags;
          info.epoch = static_cast<std::uint64_t>(std::max<std::int64_t>(p.create_revision, 0));
          infos.push_back(std::move(info));
        } else {
          detail::logger()->warn("etcd service '{}': provider skipped: {}", service, why);
        }
      }
      listener({}, std::move(infos), {});
    };
    id_ = registry_->subscribe_with_errors(service_, std::move(on_set), std::move(on_error));
  }

  void stop() override {
    common::LockGuard l(mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    registry_->unsubscribe(id_);
  }

  std::string describe() const override { return "etcd service '" + service_ + "'"; }
  std::string why_empty() const override {
    return "service '" + service_ + "' has no providers registered in " + registry_->describe();
  }

 private:
  std::shared_ptr<Registry> registry_;
  std::string service_;
  common::Mutex mu_;
  bool started_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  SubscriptionId id_ WHEELRPC_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::shared_ptr<rpc::ProviderSource> provider_source(std::shared_ptr<Registry> registry, std::string service) {
  return std::make_shared<RegistryProviderSource>(std::move(registry), std::move(service));
}

}  // namespace wheelrpc::registry
