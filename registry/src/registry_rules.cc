// rule_source(): a Client's runtime rules from a registry's rules
// subscription (Registry::subscribe_rules; EtcdRegistry's keeps the last good
// version of every key and builds the consumer's CallRules).

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/registry/rules.h>

namespace wheelrpc::registry {
namespace {

// start → subscribe_rules, stop → unsubscribe; each CallRules the
// subscription reports goes to the listener as it is, each failed read or
// watch as an error (the client keeps its rules). Both run on the registry's
// strand, so never concurrently.
class RegistryRuleSource final : public rpc::RuleSource {
 public:
  RegistryRuleSource(std::shared_ptr<Registry> registry, std::string service, RuleScope consumer)
      : registry_(std::move(registry)), service_(std::move(service)), consumer_(std::move(consumer)) {}

  ~RegistryRuleSource() override { stop(); }

  void start(Listener listener) override {
    common::LockGuard l(mu_);
    if (started_) return;
    started_ = true;
    auto on_error = [listener](boost::system::error_code ec, const std::string& why) { listener(ec, nullptr, why); };
    auto on_rules = [listener = std::move(listener)](std::shared_ptr<const rpc::CallRules> rules) {
      listener({}, std::move(rules), {});
    };
    id_ = registry_->subscribe_rules(service_, consumer_, std::move(on_rules), std::move(on_error));
  }

  void stop() override {
    common::LockGuard l(mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    if (id_ != 0) registry_->unsubscribe(id_);
  }

  std::string describe() const override { return "etcd rules of '" + service_ + "'"; }

 private:
  std::shared_ptr<Registry> registry_;
  std::string service_;
  RuleScope consumer_;
  common::Mutex mu_;
  bool started_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  SubscriptionId id_ WHEELRPC_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::shared_ptr<rpc::RuleSource> rule_source(std::shared_ptr<Registry> registry, std::string service,
                                             RuleScope consumer) {
  return std::make_shared<RegistryRuleSource>(std::move(registry), std::move(service), std::move(consumer));
}

}  // namespace wheelrpc::registry
