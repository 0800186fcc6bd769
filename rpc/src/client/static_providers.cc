// static_providers(): a fixed set, reported once at start; and the default
// ProviderSource::start_with_info.

#include <algorithm>
#include <atomic>
#include <sstream>
#include <utility>

#include <wheelrpc/rpc/provider_source.h>

namespace wheelrpc::rpc {
namespace {

using boost::asio::ip::tcp;

/// Reports its endpoints once, at start, on the thread that calls start().
/// Duplicates are dropped (the first occurrence keeps its place).
class StaticProviders final : public ProviderSource {
 public:
  explicit StaticProviders(std::vector<tcp::endpoint> endpoints) {
    for (auto& ep : endpoints)
      if (std::find(endpoints_.begin(), endpoints_.end(), ep) == endpoints_.end()) endpoints_.push_back(ep);
    std::ostringstream out;
    for (std::size_t i = 0; i < endpoints_.size(); ++i) out << (i ? "," : "") << endpoints_[i];
    description_ = endpoints_.empty() ? std::string("no providers") : out.str();
  }

  void start(Listener listener) override {
    if (stopped_.load(std::memory_order_acquire) || !listener) return;
    listener({}, endpoints_, {});
  }
  void stop() override { stopped_.store(true, std::memory_order_release); }
  std::string describe() const override { return description_; }

 private:
  std::vector<tcp::endpoint> endpoints_;
  std::string description_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

void ProviderSource::start_with_info(InfoListener listener) {
  start([listener = std::move(listener)](boost::system::error_code ec, std::vector<tcp::endpoint> endpoints,
                                         std::string why) {
    listener(ec, std::vector<ProviderInfo>(endpoints.begin(), endpoints.end()), std::move(why));
  });
}

std::shared_ptr<ProviderSource> static_providers(std::vector<tcp::endpoint> endpoints) {
  return std::make_shared<StaticProviders>(std::move(endpoints));
}

}  // namespace wheelrpc::rpc
