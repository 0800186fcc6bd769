// announcer(): a Server's registration, with Dubbo's `check`.

#include <atomic>
#include <memory>

#include <boost/asio/error.hpp>
#include <spdlog/spdlog.h>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/registry/errc.h>
#include <wheelrpc/registry/rpc_binding.h>

#include "endpoint_address.h"
#include "log.h"

namespace wheelrpc::registry {
using boost::system::error_code;

namespace {

// One announce's completion, shared by the registration listener and the
// check deadline: whichever comes first completes `done`, exactly once.
struct PendingAnnounce {
  PendingAnnounce(rpc::ServiceAnnouncer::Done d, std::weak_ptr<Registry> r, ServiceInstance i)
      : done(std::move(d)), registry(std::move(r)), instance(std::move(i)) {}

  common::Mutex mu;
  rpc::ServiceAnnouncer::Done done WHEELRPC_GUARDED_BY(mu);  // empty once completed
  std::weak_ptr<Registry> registry;
  ServiceInstance instance;

  rpc::ServiceAnnouncer::Done take() {
    common::LockGuard l(mu);
    return std::move(done);
  }
  /// Fails the check unless it completed already: the registration is
  /// withdrawn (its retry cancelled) and `message` reported (and logged).
  void fail(error_code ec, const std::string& message, bool log = true) {
    auto d = take();
    if (!d) return;
    if (auto r = registry.lock()) r->unregister_instance(instance.service, instance.endpoint);
    if (log) detail::logger()->error("{}", message);
    d(ec, message);
  }
};

class RegistryAnnouncer final : public rpc::ServiceAnnouncer {
 public:
  RegistryAnnouncer(std::shared_ptr<Registry> registry, ServiceInstance instance, AnnounceOptions options)
      : registry_(std::move(registry)), instance_(std::move(instance)), options_(std::move(options)) {}

  void announce(const boost::asio::ip::tcp::endpoint& endpoint, Done done) override {
    ServiceInstance inst;
    {
      common::LockGuard l(mu_);
      if (instance_.endpoint.empty()) instance_.endpoint = detail::format_endpoint(detail::announceable(endpoint));
      inst = instance_;
      announced_ = true;
    }
    if (auto reason = inst.invalid_reason(); !reason.empty()) {
      done(make_error_code(boost::system::errc::invalid_argument), "cannot announce: " + reason);
      return;
    }
    const std::string what = "registration of '" + inst.service + "' at " + inst.endpoint;
    // What the registry says of the registration, for in_force(), then the user's listener.
    auto on_state = [in_force = in_force_, user = options_.on_state](error_code ec, const std::string& why) {
      in_force->store(!ec);
      if (user) user(ec, why);
    };
    if (!options_.check) {
      registry_->register_instance(inst, on_state);
      done({}, {});
      return;
    }
    auto pending = std::make_shared<PendingAnnounce>(std::move(done), registry_, inst);
    // A failed attempt fails the check at once (Dubbo's check=true): etcd
    // that refused in a millisecond is not worth check_timeout of waiting.
    // The timeout is for an etcd that does not answer at all.
    registry_->register_instance(inst, [pending, on_state, what](error_code ec, const std::string& why) {
      on_state(ec, why);
      if (ec) return pending->fail(ec, what + " failed: " + (why.empty() ? ec.message() : why));
      if (auto d = pending->take()) d({}, {});  // confirmed (unless it completed already)
    });
    const auto limit = options_.check_timeout;
    const bool timed = registry_->call_after(limit, [pending, what, limit, where = registry_->describe()] {
      pending->fail(make_error_code(errc::timeout),
                    what + " not confirmed within " + std::to_string(limit.count()) + " ms: no answer from " + where);
    });
    if (!timed) {
      pending->fail(make_error_code(errc::unavailable), what + ": the registry cannot time the check (timer stopped?)",
                    /*log=*/false);
    }
  }

  bool in_force() const noexcept override { return in_force_->load(); }

  void withdraw(Done done) override {
    ServiceInstance inst;
    {
      common::LockGuard l(mu_);
      if (!announced_) {
        done({}, {});
        return;
      }
      announced_ = false;
      inst = instance_;
    }
    in_force_->store(false);
    const std::string what = "unregister of '" + inst.service + "' at " + inst.endpoint;
    registry_->unregister_instance(inst.service, inst.endpoint, [done = std::move(done), what](error_code ec) {
      if (!ec) return done({}, {});
      if (ec == boost::asio::error::operation_aborted) return done(ec, what + ": the registry is closed");
      done(ec, what + " failed (retried in the background): " + ec.message());
    });
  }

 private:
  std::shared_ptr<Registry> registry_;
  common::Mutex mu_;
  ServiceInstance instance_ WHEELRPC_GUARDED_BY(mu_);
  bool announced_ WHEELRPC_GUARDED_BY(mu_) = false;
  const AnnounceOptions options_;
  // The registry confirmed the registration (and did not report it lost
  // since). Shared with the listeners, which may outlive the announcer.
  std::shared_ptr<std::atomic<bool>> in_force_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace

std::shared_ptr<rpc::ServiceAnnouncer> announcer(std::shared_ptr<Registry> registry, ServiceInstance instance,
                                                 AnnounceOptions options) {
  return std::make_shared<RegistryAnnouncer>(std::move(registry), std::move(instance), std::move(options));
}

}  // namespace wheelrpc::registry
