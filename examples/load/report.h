#pragma once
/// The load generator's output on stdout: progress lines and the summary,
/// as text or (--json) as one JSON object per line.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <wheelrpc/rpc/client.h>

#include "load/config.h"
#include "load/tally.h"

namespace wheelrpc::examples::load {

/// What a progress line shows besides the tally.
struct Progress {
  std::chrono::steady_clock::duration elapsed{};  ///< since the first call
  std::size_t in_flight = 0;
  double ok_per_s = 0;            ///< successful calls per second since the previous line
  std::uint64_t connects = 0;     ///< connections made so far (ClientStats::connects)
  std::size_t providers_now = 0;  ///< providers in the client's set now
};

/// JSON: {"t_ms":..,"ok":..,"errors":{..},"providers_now":N} (cumulative
/// counts); text: one line with the counts, the rate, the connects and the
/// providers now.
void print_progress(const Config& cfg, const Tally& tally, const Progress& p);

/// What the summary shows besides the tally.
struct Summary {
  double elapsed_s = 0;    ///< from the first call to the last completion
  std::uint64_t lost = 0;  ///< calls that never completed
  rpc::ClientStats stats;
  std::vector<rpc::ProviderStats>
      providers;  ///< every provider ever in the set (Client::providers(), those that left included)
  /// The heartbeat intervals agreed with the servers (distinct, ascending;
  /// from the connections open at the end), and the one this client proposed.
  std::vector<std::chrono::milliseconds> heartbeats;
  std::chrono::milliseconds proposed_heartbeat{0};
  /// With --warmup-s, once it ended: what came after (the latencies then
  /// count only those calls).
  struct Warm {
    double elapsed_s = 0;
    std::uint64_t ok = 0;
    std::vector<std::pair<std::string, std::uint64_t>> attempts;  ///< by provider
  };
  std::optional<Warm> warm;
};

/// JSON: one line with every counter (README.md lists the fields); text: the
/// counts, latencies, errors by code, attempts, a line per provider and one
/// for the attempts that found none, the agreed heartbeat, one example
/// message per error code and, last, the latency histogram of the ok calls
/// (text_histogram). Every count adds up with the others: calls = ok + timed
/// out + failed otherwise + lost; the errors by code sum to the failed calls;
/// attempts = the providers' attempts + those with no provider; a provider's
/// attempts = ok + failed + cancelled + in flight.
void print_summary(const Config& cfg, const Tally& tally, const Summary& s);

/// What a progress line of a run of streams shows besides the tally.
struct StreamProgress {
  std::chrono::steady_clock::duration elapsed{};  ///< since the first stream
  std::size_t open = 0;                           ///< streams open now
};

/// JSON: {"t_ms":..,"streams":..,"streams_ok":..,"errors":{..},"open":N}
/// (cumulative counts); text: one line with the same.
void print_stream_progress(const Config& cfg, const StreamTally& tally, const StreamProgress& p);

/// JSON: one line with `method`, `streams`, `streams_ok`, `messages_sent`,
/// `messages_received`, `max_gap_ms`, `errors`, `lost`, `completed_twice`,
/// `error_examples`, `elapsed_s` (README.md describes them); text: the
/// same in words, the errors by code and one example message per code.
/// streams = streams_ok + the errors by code.
void print_stream_summary(const Config& cfg, const StreamTally& tally, double elapsed_s);

}  // namespace wheelrpc::examples::load
