#include "server/memory_return.h"

#include <chrono>
#include <system_error>

#include <boost/asio/post.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace wheelrpc::rpc::detail {

void MemoryReturn::note_close() {
  if (scheduled_.exchange(true, std::memory_order_acq_rel)) return;  // one is coming: it covers this close
  std::error_code ec;
  timer_.new_timeout(
      [weak = weak_from_this()] {
        auto self = weak.lock();
        if (!self) return;
        common::WorkGate::Scope in(self->gate_);
        if (!in) return;  // the owner stopped
        boost::asio::post(self->ex_, [self] { self->trim(); });
      },
      std::chrono::seconds(1), ec);
  if (ec) scheduled_.store(false, std::memory_order_release);  // the timer stopped: no trim
}

void MemoryReturn::trim() {
  // Cleared first: a close during the trim schedules the next one.
  scheduled_.store(false, std::memory_order_release);
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
  returns_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace wheelrpc::rpc::detail
