#include "pipe.h"

#include <algorithm>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

#include "connection_pair.h"

namespace wheelrpc::fault::detail {
namespace asio = boost::asio;
using boost::system::error_code;

Pipe::Pipe(ConnectionPair& pair, Stream direction, asio::ip::tcp::socket& from, asio::ip::tcp::socket& to)
    : pair_(pair),
      direction_(direction),
      from_(from),
      to_(to),
      in_(direction == Stream::upstream ? pair.counters().upstream_in : pair.counters().downstream_in),
      out_counter_(direction == Stream::upstream ? pair.counters().upstream_out : pair.counters().downstream_out),
      read_buf_(std::max<std::size_t>(1, pair.options().read_size)) {}

Counters& Pipe::counters() { return pair_.counters(); }
asio::any_io_executor Pipe::executor() { return pair_.executor(); }
std::shared_ptr<void> Pipe::keep_alive() { return pair_.shared_from_this(); }

void Pipe::start() {
  if (!closed_ && !reading_ && !read_done_) do_read();
}

void Pipe::add_stage(std::shared_ptr<Stage> stage) {
  if (closed_ || !stage) return;
  for (const auto& s : stages_) {
    if (s->name() == stage->name()) return;
  }
  stages_.push_back(std::move(stage));
}

void Pipe::remove_stage(std::string_view name) {
  const auto it = std::find_if(stages_.begin(), stages_.end(), [&](const auto& s) { return s->name() == name; });
  if (it == stages_.end()) return;
  const auto index = static_cast<std::size_t>(it - stages_.begin());
  std::deque<Segment> held = (*it)->detach();
  stages_.erase(it);
  // Everything the stage held is newer than what the next stages hold and
  // older than what earlier stages hold: handing it to the next one in order
  // keeps the byte order.
  for (auto& seg : held) {
    if (closed_) return;
    deliver(index, std::move(seg));
  }
}

void Pipe::close() {
  if (closed_) return;
  closed_ = true;
  // Stages stay in the vector (one may be on the call stack right now); they
  // are only detached, and go away with the pair.
  for (const auto& s : stages_) s->detach();
  out_.clear();
  if (buffered_ > 0) bump(counters().dropped, buffered_);
  buffered_ = 0;
}

void Pipe::forward(const Stage& from, Segment seg) {
  if (closed_) return;
  const auto it = std::find_if(stages_.begin(), stages_.end(), [&](const auto& s) { return s.get() == &from; });
  if (it == stages_.end()) return;  // detached: it emits nothing any more
  deliver(static_cast<std::size_t>(it - stages_.begin()) + 1, std::move(seg));
}

void Pipe::discard(std::size_t bytes) {
  bump(counters().dropped, bytes);
  release(bytes);
}

void Pipe::deliver(std::size_t index, Segment seg) {
  if (closed_) return;
  if (index < stages_.size()) {
    // Keep the stage alive across the call even if it is removed meanwhile.
    const auto stage = stages_[index];
    stage->push(std::move(seg));
    return;
  }
  out_.push_back(std::move(seg));
  do_write();
}

void Pipe::do_read() {
  reading_ = true;
  from_.async_read_some(asio::buffer(read_buf_),
                        [this, keep = keep_alive()](const error_code& ec, std::size_t n) { on_read(ec, n); });
}

void Pipe::on_read(const error_code& ec, std::size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec == asio::error::eof) {
    read_done_ = true;
    deliver(0, Segment{Segment::Kind::eof, {}});
    return;
  }
  if (ec) {
    read_done_ = true;
    pair_.on_pipe_error(direction_, ec);
    return;
  }
  bump(in_, n);
  buffered_ += n;
  deliver(0, Segment{Segment::Kind::data, std::string(read_buf_.data(), n)});
  if (closed_) return;
  if (buffered_ < pair_.options().max_buffered)
    do_read();
  else
    paused_ = true;
}

void Pipe::release(std::size_t bytes) {
  buffered_ -= std::min(bytes, buffered_);
  if (paused_ && !closed_ && buffered_ <= pair_.options().max_buffered / 2) {
    paused_ = false;
    do_read();
  }
}

void Pipe::do_write() {
  while (!writing_ && !closed_ && !out_.empty()) {
    Segment& front = out_.front();
    if (front.kind == Segment::Kind::data) {
      if (front.data.empty()) {
        out_.pop_front();
        continue;
      }
      writing_ = true;
      asio::async_write(to_, asio::buffer(front.data),
                        [this, keep = keep_alive()](const error_code& ec, std::size_t n) { on_write(ec, n); });
      return;
    }
    const Segment::Kind kind = front.kind;
    out_.pop_front();
    if (kind == Segment::Kind::eof) {
      error_code ignored;
      to_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      finished_ = true;
      pair_.on_pipe_finished();
    } else {
      pair_.on_limit_reached();
    }
    return;
  }
}

void Pipe::on_write(const error_code& ec, std::size_t n) {
  writing_ = false;
  if (closed_) return;
  if (ec) {
    pair_.on_pipe_error(direction_, ec);
    return;
  }
  bump(out_counter_, n);
  out_.pop_front();
  release(n);
  do_write();
}

}  // namespace wheelrpc::fault::detail
