#pragma once
/// Config: what the load generator was asked to do, from its flags.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/transport/compression.h>

namespace wheelrpc::examples::load {

/// One field per flag (see usage() in flags.cc for the flags' text).
struct Config {
  std::vector<boost::asio::ip::tcp::endpoint> servers;  ///< --server, in order, when every one is an IP literal
  std::vector<std::string> server_targets;              ///< --server as given (resolved when one is a name)
  std::string registry;                                 ///< --registry: etcd endpoints, or empty
  std::string service;                                  ///< --service (with --registry)
  std::string application = "echo_client";              ///< --application: the consumer's name for rule scopes
  std::vector<std::string> tags;                        ///< --tag (repeatable, comma separated): for rule scopes
  std::optional<std::uint64_t> calls;                   ///< --calls: this many in total, or
  std::optional<double> duration_s;                     ///< --duration-s: for this long
  std::optional<double> warmup_s;           ///< --warmup-s: the summary's after_warmup counts only what follows it
  std::size_t concurrency = 1;              ///< --concurrency: calls in flight at once
  std::chrono::milliseconds timeout{1000};  ///< --timeout-ms: deadline of each call
  std::size_t payload_bytes = 64;           ///< --payload-bytes: echo payload size
  std::string method = "echo";              ///< --method: echo, sleep, or a stream: count, sum, chat
  long long sleep_ms = 0;                   ///< --sleep-ms: payload of a sleep call
  std::chrono::milliseconds report_interval{1000};  ///< --report-interval-ms
  bool json = false;                                ///< --json: JSON lines instead of text
  std::chrono::milliseconds heartbeat{15000};       ///< --heartbeat-ms (ClientOptions::heartbeat)
  std::chrono::milliseconds idle_timeout{0};        ///< --idle-timeout-ms (ClientOptions::idle_timeout)
  int retries = rpc::CallOptions{}.retries;         ///< --retries (CallOptions::retries)
  bool idempotent = false;                          ///< --idempotent (CallOptions::idempotent)
  rpc::LoadBalance load_balance = rpc::ClientOptions{}.load_balance;  ///< --lb
  rpc::OutlierDetectionOptions outlier;  ///< --outlier and --outlier-* (ClientOptions::outlier_detection)
  double retry_budget_ratio = rpc::RetryOptions{}.budget_ratio;  ///< --retry-budget-ratio
  bool tcp_user_timeout = true;                                  ///< --no-tcp-user-timeout clears it
  std::chrono::milliseconds hedge_delay{0};                      ///< --hedge-ms; 0 = no hedging
  bool fail_on_error = false;                                    ///< --fail-on-error: exit 1 if a call failed
  int admin_port = -1;                                           ///< --admin-port: -1 = no admin server
  transport::TlsOptions tls;                                     ///< --tls-ca, --tls-cert, --tls-key, --tls-server-name
  rpc::WireProtocol protocol = rpc::WireProtocol::native;        ///< --protocol (ClientOptions::protocol)
  std::string bearer_token;  ///< --bearer-token: sent on every call and stream (BearerTokenInterceptor), or empty
  /// --compression ALG[:LEVEL] (CallOptions::compression, compression_level; 0 = the algorithm's default)
  transport::Compression compression = transport::Compression::identity;
  int compression_level = 0;
  // Streams (--method count|sum|chat; StreamLoad).
  std::size_t streams = 1;                       ///< --streams: streams at once
  std::uint64_t count = 10;                      ///< --count: messages per stream
  std::chrono::milliseconds interval{0};         ///< --interval-ms: between messages
  std::chrono::milliseconds stream_timeout{0};   ///< --stream-timeout-ms (CallOptions::stream_timeout)
  std::chrono::milliseconds message_timeout{0};  ///< --message-timeout-ms (CallOptions::message_timeout)
  std::chrono::milliseconds stall_timeout{0};    ///< --stall-timeout-ms (CallOptions::stall_timeout)
  /// The call-policy flags given on the command line, each a Setting the
  /// calls set as their own (rpc::Layer::call): a runtime rule overrides
  /// only what the command line left alone (docs/governance.md).
  rpc::CallOptions given;

  /// A streaming method: the run opens streams instead of making calls.
  bool streaming() const { return method == "count" || method == "sum" || method == "chat"; }
};

/// Reads the command line into `cfg` (FlagParser). Returns the exit status
/// when the program is to end now: 0 after printing the usage text on stdout
/// (--help), 2 after printing a usage error as one line on stderr
/// ("echo_client: <problem> (see --help)"); nothing otherwise.
std::optional<int> parse_args(int argc, char** argv, Config& cfg);

}  // namespace wheelrpc::examples::load
