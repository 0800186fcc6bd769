#pragma once
// The client's providers: the published provider set (the subchannels new
// attempts may use), its changes from the provider source (providers join,
// leave to drain and close, come back), and the counters of providers that
// left, so per-provider counts never drop. Each published set carries its
// providers' effective weights (a runtime rule's over the source's) and the
// balancer its picks go through (the rules' policy, else the client's): a
// change of either publishes a new set, so a pick reads set and policy
// together from one SetPin.
//
// Threads: the set is immutable once published; a change publishes a new one
// (read with a pointer copy under a leaf lock, or SetPin). Changes are
// serialized by `mu_`, which also guards the providers that left and still
// drain; it is taken before a subchannel's lock, never after one, and never
// with a call's lock held.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/common/thread_slot.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/transport/channel.h>

#include "client/attempt_policy.h"
#include "client/load_balancer.h"
#include "base/shared_ptr_cell.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class ClientTransport;
class Subchannel;
class SubchannelListener;

/// The providers new attempts may use: immutable once published.
struct ProviderSet {
  std::vector<std::shared_ptr<Subchannel>> conns;
  /// "a:1,b:2" for messages; the source's description when empty.
  std::string peers;
  /// A set was received; false while the source has not reported one yet
  /// (calls wait for it, as for a connection being made).
  bool known = false;
  /// Why the source could produce no set (only while none is known).
  std::string source_error;
  /// Why a known set has no provider (ProviderSource::why_empty()); "" when
  /// it has some.
  std::string empty_why;
  /// Each provider's effective weight (0..10000), by index in `conns`: a
  /// rule's (CallRules::weights) over the source's (ProviderInfo::weight).
  std::vector<std::uint32_t> weights;
  /// Where each weight comes from: "rule <origin>", "registry" (the source's
  /// record set one other than the default), "default" (100).
  std::vector<std::string> weight_from;
  /// Tag routing (docs/governance.md): each provider's tag, by index in
  /// `conns` ("" untagged): a tag rule's address list (CallRules::tags) over
  /// the "tag" entry of the source's record (ProviderInfo::tags). `tagged`:
  /// some provider has one. `strict_tags`: the tags whose rule says
  /// "fallback": false, sorted; `strict_from`, by index in it, where each
  /// such rule comes from ("runtime override <key> rev N, etcd rules of
  /// 'echo'"), for messages.
  std::vector<std::string> tags;
  bool tagged = false;
  bool any_untagged = true;
  std::vector<std::string> strict_tags;
  std::vector<std::string> strict_from;
  /// Where an attempt of a call tagged `tag` ("": none) may go: to any
  /// provider, only to those whose tag is `only` ("": the untagged ones), or
  /// nowhere (its tag has no provider and its rule forbids the fallback).
  struct Route {
    enum class Kind : std::uint8_t { any, only, none } kind = Kind::any;
    std::string_view only;
  };
  Route route(std::string_view tag) const;
  /// A call tagged `tag` has nowhere to go (route(tag) is Kind::none). Cheap
  /// when no tag rule forbids the fallback.
  bool unroutable(std::string_view tag) const {
    return !strict_tags.empty() && !tag.empty() && route(tag).kind == Route::Kind::none;
  }
  /// Why a call tagged `tag` has nowhere to go, for its message: "no
  /// provider serves tag 'canary' and its rule allows no fallback (<where
  /// the rule comes from>)".
  std::string no_route_why(std::string_view tag) const;
  /// The policy picks from this set go through (CallRules::load_balance, else
  /// ClientOptions::load_balance). One per set: its state (the round robin's
  /// cursor, smooth WRR scores) is by index in `conns`. Never null.
  std::shared_ptr<LoadBalancer> balancer;
  /// `balancer` is load-aware: picks scale weights by load factors.
  bool load_aware = false;
};

class ProviderPool {
 public:
  explicit ProviderPool(std::shared_ptr<ClientContext> ctx);
  ~ProviderPool();

  /// A fixed list of providers.
  void init(std::weak_ptr<SubchannelListener> listener, const std::vector<boost::asio::ip::tcp::endpoint>& servers);
  /// Follows `source` (ProviderSource::start_with_info); its reports go to
  /// `on_report` (then to on_source_report).
  void init(std::weak_ptr<SubchannelListener> listener, std::shared_ptr<ProviderSource> source,
            ProviderSource::InfoListener on_report);
  /// A report of the source (any thread, never concurrently with itself).
  /// True when what calls wait for may have changed (a new set, or news of
  /// why there is none). A provider whose record changed only in weight
  /// keeps its connection: a new set with the new weight is published.
  bool on_source_report(boost::system::error_code ec, std::vector<ProviderInfo> providers, std::string why);
  SourceState source_state() const;

  /// The current set (a pointer copy).
  std::shared_ptr<const ProviderSet> current() const { return set_.load(); }
  /// The current set, held for the calling thread while the pin lives: from
  /// the thread's own cache line (thread_slot.h), without a lock or a
  /// reference count, while the set is the one the thread saw last; else
  /// copied as current() does. Pins nest (a retry sent from inside a
  /// dispatch): an inner pin never lets go of the set an outer one holds.
  class SetPin {
   public:
    explicit SetPin(const ProviderPool& pool);
    ~SetPin() {
      if (line_) --line_->pins;
    }
    SetPin(const SetPin&) = delete;
    SetPin& operator=(const SetPin&) = delete;
    const ProviderSet& operator*() const noexcept { return *set_; }
    const ProviderSet* operator->() const noexcept { return set_; }

    // The cache: the set a thread slot saw last, with the version of set_ it
    // came with. Only its slot's thread touches a line.
    struct alignas(64) Line {
      std::uint64_t version = ~std::uint64_t{0};
      std::shared_ptr<const ProviderSet> set;
      int pins = 0;
    };

   private:
    Line* line_ = nullptr;  // null: held_ holds the set
    std::shared_ptr<const ProviderSet> held_;
    const ProviderSet* set_ = nullptr;
  };

  /// Marks the client started and has every provider of the set connect if
  /// it is not (any thread but the timer's worker).
  void wake_all(TimePoint t);
  /// A connect to `endpoint` was refused: tells the source (a name may
  /// resolve elsewhere now).
  void connect_failed(const boost::asio::ip::tcp::endpoint& endpoint);
  /// A retired provider's channel closed (or it had none): forget it.
  void forget_retired(Subchannel& sub);
  /// The current set's subchannels, then the retired ones still draining.
  std::vector<std::shared_ptr<Subchannel>> all() const;
  /// The client closes: stops the source and hands over every subchannel.
  std::vector<std::shared_ptr<Subchannel>> close();
  /// Appends the stats of the providers that left.
  void add_left(std::vector<ProviderStats>& out) const;
  /// Fills the weight and its origin of each entry whose peer is in the
  /// current set (the others keep weight_from "").
  void fill_weights(std::vector<ProviderStats>& out) const;
  void fill_weights(std::vector<ConnectionInfo>& out) const;
  /// The client's runtime rules changed (any thread but the timer's worker,
  /// never concurrently with itself): their weights and load-balancing
  /// policy take effect for the next pick. `rules` may be empty (no rule).
  void on_rules(const std::shared_ptr<const CallRules>& rules);

 private:
  /// Transports to close once mu_ is released: a close may run the
  /// subchannel's close event inline (a strand dispatch), which takes mu_.
  using ToClose = std::vector<std::shared_ptr<ClientTransport>>;
  /// Makes `endpoints` the set: keeps the providers in both, brings back or
  /// creates the new ones, retires the ones that left.
  void apply_set_locked(std::vector<ProviderInfo> providers, ToClose& to_close) WHEELRPC_REQUIRES(mu_);
  /// Fills `set`'s weights from infos_ and rules_, by its conns.
  void fill_weights_locked(ProviderSet& set) const WHEELRPC_REQUIRES(mu_);
  /// The policy in force: the rules', else the client's.
  LoadBalance policy_locked() const WHEELRPC_REQUIRES(mu_);
  std::shared_ptr<Subchannel> make_subchannel_locked(const boost::asio::ip::tcp::endpoint& endpoint)
      WHEELRPC_REQUIRES(mu_);
  /// Keeps `sub`'s counters: its attempts and failures in left_, its tasks'
  /// counts in the client's totals.
  void remember_left_locked(const Subchannel& sub) WHEELRPC_REQUIRES(mu_);
  static void close_retired(ToClose& to_close);

  const std::shared_ptr<ClientContext> ctx_;
  std::weak_ptr<SubchannelListener> listener_;  // set by init(), then fixed
  std::shared_ptr<ProviderSource> source_;      // set by init(source), then fixed
  SharedPtrCell<const ProviderSet> set_;
  mutable std::array<SetPin::Line, common::kThreadSlots> set_cache_;  // SetPin's, one line per thread slot
  mutable common::Mutex mu_;
  // Providers that left the set and still drain.
  std::map<boost::asio::ip::tcp::endpoint, std::shared_ptr<Subchannel>> retiring_ WHEELRPC_GUARDED_BY(mu_);
  std::uint64_t next_seed_ WHEELRPC_GUARDED_BY(mu_) = 1;
  // What the source says of each provider of the set (weight, zone, tags).
  std::map<boost::asio::ip::tcp::endpoint, ProviderInfo> infos_ WHEELRPC_GUARDED_BY(mu_);
  // The client's runtime rules (on_rules); null: none.
  std::shared_ptr<const CallRules> rules_ WHEELRPC_GUARDED_BY(mu_);
  // The counters of providers that left and were closed (at most kLeftKept,
  // the oldest dropped), handed back to a subchannel to the same endpoint if
  // it joins again.
  static constexpr std::size_t kLeftKept = 1024;
  std::map<boost::asio::ip::tcp::endpoint, ProviderStats> left_ WHEELRPC_GUARDED_BY(mu_);
  std::vector<boost::asio::ip::tcp::endpoint> left_order_ WHEELRPC_GUARDED_BY(mu_);
};

}  // namespace wheelrpc::rpc::detail
