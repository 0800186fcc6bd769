#pragma once
/// ORCA's load report (gRFC A51, A58; xds.data.orca.v3.OrcaLoadReport), encoded
/// and decoded by hand: the RPC library speaks it without libprotobuf.
///
///   message OrcaLoadReport {
///     double cpu_utilization = 1;
///     double mem_utilization = 2;
///     uint64 rps = 3 [deprecated = true];
///     map<string, double> request_cost = 4;
///     map<string, double> utilization = 5;
///     double rps_fractional = 6;
///     double eps = 7;
///     map<string, double> named_metrics = 8;
///     double application_utilization = 9;
///   }
///
/// A server attaches one to a reply (ServerOptions::load_reports) under
/// kLoadReportKey: on the gRPC wire the trailer of that name (binary metadata,
/// base64 in HTTP/2, as every ORCA-aware gRPC client reads it), on the native
/// wire a reply attachment of that name among the reply's trailing metadata.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wheelrpc::rpc::detail {

/// The trailer (gRPC) and attachment (native) that carries a reply's load report.
inline constexpr std::string_view kLoadReportKey = "endpoint-load-metrics-bin";

/// The largest encoding decode() reads (a longer one is refused unread): far
/// above what a server sends (a handful of doubles and named metrics), and a
/// bound on the work a hostile peer can ask of the client.
inline constexpr std::size_t kMaxLoadReportBytes = 64 * 1024;

/// One OrcaLoadReport. Maps are lists of (key, value) in the order encoded;
/// decode() keeps one entry per key (the last, as protobuf does).
/// Fractions are of the resource (0..1, may exceed 1 past a soft limit);
/// rates are per second.
struct LoadReport {
  double cpu_utilization = 0;          ///< field 1: the process's CPU time over its CPUs' wall time
  double mem_utilization = 0;          ///< field 2
  std::uint64_t rps = 0;               ///< field 3 (deprecated: rps_fractional); decoded, never encoded unless set
  double rps_fractional = 0;           ///< field 6: replies per second
  double eps = 0;                      ///< field 7: errors per second
  double application_utilization = 0;  ///< field 9: Server::set_application_utilization (0: not set)
  std::vector<std::pair<std::string, double>> request_cost;   ///< field 4
  std::vector<std::pair<std::string, double>> utilization;    ///< field 5
  std::vector<std::pair<std::string, double>> named_metrics;  ///< field 8

  /// The named metric `name`, or nullopt.
  std::optional<double> named_metric(std::string_view name) const;

  bool operator==(const LoadReport&) const = default;
};

/// The report in protobuf's wire format, as libprotobuf writes it: fields in
/// number order, a scalar at its default (0) left out, each map entry with
/// its key (1) and value (2).
std::string encode(const LoadReport& report);

/// Parses an OrcaLoadReport; nullopt for malformed bytes: truncated, a length
/// past the end, an overlong varint, field number 0, a group, a known field of
/// another wire type, or more than kMaxLoadReportBytes. Unknown fields are
/// skipped. Work is linear in the input (n log n for maps' duplicate keys).
/// Values are passed on as they came (NaN, negative): the reader decides.
std::optional<LoadReport> decode(std::string_view bytes);

}  // namespace wheelrpc::rpc::detail
