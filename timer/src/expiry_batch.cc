#include <wheelrpc/timer/expiry_batch.h>

namespace wheelrpc::timer {
namespace {

// The batch the calling thread runs: how deep its scopes nest, and the
// ExpiryBatch objects registered so far (a LIFO list through next_).
thread_local int t_depth = 0;
thread_local ExpiryBatch* t_head = nullptr;

}  // namespace

bool ExpiryBatch::defer() noexcept {
  if (t_depth == 0) return false;
  if (!registered_) {
    registered_ = true;
    next_ = t_head;
    t_head = this;
  }
  return true;
}

bool ExpiryBatch::in_batch() noexcept { return t_depth > 0; }

ExpiryBatchScope::ExpiryBatchScope() noexcept : outer_(t_depth == 0) { ++t_depth; }

ExpiryBatchScope::~ExpiryBatchScope() {
  if (outer_) flush_now();
  --t_depth;
}

void ExpiryBatchScope::flush_now() noexcept {
  // A flush may register again (say, by running a task inline): take the
  // list until it stays empty.
  while (ExpiryBatch* b = t_head) {
    t_head = nullptr;
    while (b) {
      ExpiryBatch* next = b->next_;
      b->next_ = nullptr;
      b->registered_ = false;
      b->flush();
      b = next;
    }
  }
}

}  // namespace wheelrpc::timer
