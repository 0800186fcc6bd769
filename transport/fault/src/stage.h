#pragma once
// A toxic's state on one direction of one connection pair: a link in the
// pipe's chain between the reader and the writer. Stages run only on the
// pair's strand.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "counters.h"

namespace wheelrpc::fault::detail {

class Pipe;

/// What flows down a pipe: bytes, or the end of the stream (forward a FIN), or
/// "close the connection here" (limit_data). Markers keep their place in line.
struct Segment {
  enum class Kind : std::uint8_t { data, eof, close };
  Kind kind = Kind::data;
  std::string data;
};

class Stage : public std::enable_shared_from_this<Stage> {
 public:
  Stage(Pipe& pipe, const ToxicEntry& entry);
  virtual ~Stage() = default;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  const std::string& name() const { return name_; }
  /// Takes the next segment from the previous stage (or the reader).
  virtual void push(Segment seg) = 0;
  /// Leaves the chain for good (timer stopped, nothing emitted any more) and
  /// hands back what it still holds, oldest first.
  virtual std::deque<Segment> detach();

 protected:
  /// Passes a segment on to the next stage (or the writer).
  void emit(Segment seg);
  /// One more chunk (or connection) this toxic acted on.
  void count_applied();
  bool detached() const { return detached_; }

  Pipe& pipe_;

 private:
  std::string name_;
  std::shared_ptr<Counter> applied_;
  bool detached_ = false;
};

/// A stage that holds segments until their due time, in order. Due times never
/// go backwards, so the front is always the next one due.
class TimedStage : public Stage {
 public:
  using Clock = std::chrono::steady_clock;
  TimedStage(Pipe& pipe, const ToxicEntry& entry);
  std::deque<Segment> detach() override;

 protected:
  /// Queues `seg` for max(due, the last due time). Returns the time used.
  Clock::time_point enqueue(Clock::time_point due, Segment seg);

 private:
  void arm();
  void on_timer();

  boost::asio::steady_timer timer_;
  std::deque<std::pair<Clock::time_point, Segment>> queue_;
  Clock::time_point last_due_{};
  bool armed_ = false;
};

/// Makes the stage for a data-shaping toxic (all but reset_peer, which acts on
/// the connection, not on the bytes: nullptr for it).
std::shared_ptr<Stage> make_stage(Pipe& pipe, const ToxicEntry& entry);

/// A per-stage random source, seeded differently for each stage.
std::minstd_rand make_rng();

}  // namespace wheelrpc::fault::detail
