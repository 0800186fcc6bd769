#include "load/connect_wait.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace wheelrpc::examples::load {

bool connections_settled(const std::vector<rpc::ProviderStats>& providers, const rpc::SourceState& source) {
  // No provider, and the source has said why (it failed, or its set is
  // empty): nothing will connect soon, so there is nothing to wait for.
  if (source.providers == 0 && !source.error.empty()) return true;
  const auto ready_or_failed = [](const rpc::ProviderStats& p) {
    return p.removed || p.ready || !p.last_error.empty();
  };
  // None yet: a provider source (names, a registry) has not reported a set.
  return source.providers > 0 && std::all_of(providers.begin(), providers.end(), ready_or_failed);
}

std::string not_ready_text(const std::vector<rpc::ProviderStats>& providers, const rpc::SourceState& source) {
  if (source.providers == 0) {
    if (!source.error.empty()) return source.error;
    return source.source + ": no answer yet";
  }
  std::string text;
  for (const auto& p : providers) {
    if (p.ready || p.removed) continue;
    if (!text.empty()) text += "; ";
    text += p.last_error.empty() ? p.peer + ": still connecting" : p.last_error;
  }
  return text;
}

void ConnectWait::start(std::function<void()> done) {
  done_ = std::move(done);
  started_ = std::chrono::steady_clock::now();
  client_.connect();
  poll();
}

void ConnectWait::poll() {
  if (!done_) return;
  // The source first: a report that lands between the two reads then shows
  // as providers not yet connecting, never as a set with none.
  const rpc::SourceState source = client_.source_state();
  const std::vector<rpc::ProviderStats> providers = client_.providers();
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  if (connections_settled(providers, source) || waited >= kBound) {
    if (std::none_of(providers.begin(), providers.end(), [](const rpc::ProviderStats& p) { return p.ready; })) {
      std::fprintf(stderr, "echo_client: no server ready after %lld ms: %s\n", static_cast<long long>(waited.count()),
                   not_ready_text(providers, source).c_str());
    }
    return end();
  }
  timer_.expires_after(kPoll);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) poll();
  });
}

void ConnectWait::end() {
  if (!done_) return;
  timer_.cancel();
  auto done = std::exchange(done_, nullptr);
  done();
}

}  // namespace wheelrpc::examples::load
