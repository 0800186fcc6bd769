#pragma once
// Internal (not an API): per-thread recycling of the blocks of one hot,
// fixed-size type (a client's Call, a server's ReplySlot, a typed call's
// ServerContext and coroutine call block: public only for the typed
// services' header templates). A burst of C calls in flight allocates and
// frees C blocks of one size at a time; glibc's per-thread cache keeps only
// seven blocks per size, so past that every allocation and free went through
// the arena's bins (about a tenth of a call's CPU at C = 128). Each thread
// keeps up to `Cap` freed blocks of the type on an intrusive list and hands
// them out again; beyond that, and after the thread's cache is gone (thread
// exit), blocks go back to the global allocator.
//
// Sanitizer builds allocate every block afresh, so that AddressSanitizer
// still sees a use after free.
//
// @par Thread Safety
// A block may be freed on another thread than the one that allocated it (it
// joins that thread's cache). Everything here is per thread.

#include <cstddef>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WHEELRPC_RECYCLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WHEELRPC_RECYCLE 0
#endif
#endif
#ifndef WHEELRPC_RECYCLE
#define WHEELRPC_RECYCLE 1
#endif

namespace wheelrpc::rpc::detail {

/// Derive `T` from `Recycled<T>` to recycle its blocks (`new T` / `delete`).
template <class T, std::size_t Cap = 1024>
class Recycled {
 public:
  static void* operator new(std::size_t size) {
    static_assert(sizeof(T) >= sizeof(Node));
#if WHEELRPC_RECYCLE
    Cache& c = cache();
    if (size == sizeof(T) && c.head) [[likely]] {
      Node* n = c.head;
      c.head = n->next;
      --c.count;
      return n;
    }
#endif
    return ::operator new(size);
  }

  static void operator delete(void* p, [[maybe_unused]] std::size_t size) noexcept {
#if WHEELRPC_RECYCLE
    Cache& c = cache();
    if (size == sizeof(T) && c.alive && c.count < Cap) [[likely]] {
      Node* n = static_cast<Node*>(p);
      n->next = c.head;
      c.head = n;
      ++c.count;
      return;
    }
#endif
    ::operator delete(p);
  }

 private:
  struct Node {
    Node* next;
  };
  struct Cache {
    Node* head = nullptr;
    std::size_t count = 0;
    bool alive = true;
    ~Cache() {
      alive = false;  // a block freed later on this thread goes to the allocator
      while (head) {
        Node* n = head;
        head = n->next;
        ::operator delete(n);
      }
      count = 0;
    }
  };

  static Cache& cache() noexcept {
    thread_local Cache c;
    return c;
  }
};

}  // namespace wheelrpc::rpc::detail
