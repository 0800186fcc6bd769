#pragma once
// One direction of a connection pair: a reader on one socket, the chain of
// toxic stages, and a writer on the other socket. Runs only on the pair's
// strand; owned by the pair, which outlives every handler that touches it.

#include <cstddef>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include "counters.h"
#include "stage.h"

namespace wheelrpc::fault::detail {

class ConnectionPair;

class Pipe {
 public:
  /// `direction` is Stream::upstream (client → server) or Stream::downstream.
  Pipe(ConnectionPair& pair, Stream direction, boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to);
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  Stream direction() const { return direction_; }
  /// Starts reading `from`.
  void start();
  /// Appends a stage to the end of the chain (ignored when one of that name is there).
  void add_stage(std::shared_ptr<Stage> stage);
  /// Takes a stage out; what it held goes on to the next stage at once.
  void remove_stage(std::string_view name);
  /// Stops for good: stages detached, held bytes counted as dropped, no more I/O.
  void close();
  bool closed() const { return closed_; }
  /// True once the end of stream went out to `to` (its send side shut down).
  bool finished() const { return finished_; }

  // For stages.
  void forward(const Stage& from, Segment seg);
  void discard(std::size_t bytes);
  Counters& counters();
  boost::asio::any_io_executor executor();
  std::shared_ptr<void> keep_alive();

 private:
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void deliver(std::size_t index, Segment seg);
  void do_write();
  void on_write(const boost::system::error_code& ec, std::size_t n);
  void release(std::size_t bytes);

  ConnectionPair& pair_;
  const Stream direction_;
  boost::asio::ip::tcp::socket& from_;
  boost::asio::ip::tcp::socket& to_;
  Counter& in_;
  Counter& out_counter_;
  std::vector<std::shared_ptr<Stage>> stages_;
  std::vector<char> read_buf_;
  std::deque<Segment> out_;
  std::size_t buffered_ = 0;  // read, not yet written nor discarded
  bool reading_ = false, paused_ = false, read_done_ = false;
  bool writing_ = false, finished_ = false, closed_ = false;
};

}  // namespace wheelrpc::fault::detail
