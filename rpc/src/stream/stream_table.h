#pragma once
// The streams open on one connection, by id: what its transport routes a
// stream frame to. Thread-safe: entries are added on the connection's strand
// (or by a sender, for a client's stream being opened), looked up on the
// strand, removed by the stream's end from any thread. `mu_` is a leaf.

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>

#include "stream/stream_side.h"

namespace wheelrpc::rpc::detail {

class StreamCore;
class StreamWire;

class StreamTable {
  /// Ids are a pending table's `(sequence << 24) | slot`: std::hash (the
  /// identity) would put the streams opened together in one bucket. Mixed.
  struct IdHash {
    std::size_t operator()(std::uint64_t x) const noexcept {
      x ^= x >> 33;
      x *= 0xff51afd7ed558ccdULL;
      x ^= x >> 33;
      return static_cast<std::size_t>(x);
    }
  };

 public:
  /// What the connection's streams share while any is open (a server's:
  /// their side, with the connection's executor; the wire that says their
  /// operations), held by the streams, not by the table.
  SharedCache<const StreamSide> side;
  SharedCache<StreamWire> wire;

  /// False if `id` is taken, or the table was closed.
  bool add(std::uint64_t id, std::shared_ptr<StreamCore> stream) {
    common::LockGuard lock(mu_);
    if (closed_) return false;
    return streams_.emplace(id, std::move(stream)).second;
  }
  std::shared_ptr<StreamCore> find(std::uint64_t id) const {
    common::LockGuard lock(mu_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }
  /// Removes `id` if it maps to `stream` (a stream ends once; its id may be reused after).
  void remove(std::uint64_t id, const StreamCore* stream) {
    common::LockGuard lock(mu_);
    auto it = streams_.find(id);
    if (it != streams_.end() && it->second.get() == stream) streams_.erase(it);
  }
  /// Removes `id` and returns what it mapped to (null: nothing).
  std::shared_ptr<StreamCore> take(std::uint64_t id) {
    common::LockGuard lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return nullptr;
    auto s = std::move(it->second);
    streams_.erase(it);
    return s;
  }
  std::size_t size() const {
    common::LockGuard lock(mu_);
    return streams_.size();
  }
  /// Closes the table (nothing is added after) and hands over its streams.
  std::vector<std::shared_ptr<StreamCore>> close() {
    std::vector<std::shared_ptr<StreamCore>> out;
    common::LockGuard lock(mu_);
    closed_ = true;
    out.reserve(streams_.size());
    for (auto& [id, s] : streams_) out.push_back(std::move(s));
    streams_.clear();
    return out;
  }
  /// Its streams, for a snapshot or a shutdown (the table stays open).
  std::vector<std::shared_ptr<StreamCore>> all() const {
    std::vector<std::shared_ptr<StreamCore>> out;
    common::LockGuard lock(mu_);
    out.reserve(streams_.size());
    for (const auto& [id, s] : streams_) out.push_back(s);
    return out;
  }

 private:
  mutable common::Mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<StreamCore>, IdHash> streams_ WHEELRPC_GUARDED_BY(mu_);
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;
};

}  // namespace wheelrpc::rpc::detail
