#pragma once
// Type-erased storage for a timer task in 16 bytes: an operations pointer and
// one word. Callables that fit in a word and are trivially copyable live in
// the word itself (no allocation), and so do word-sized callables that declare
// themselves trivially relocatable (a member type `wheelrpc_relocatable`: a
// task owning one intrusive reference, say): those are destroyed in place when
// the timeout completes, is cancelled or is dropped. Anything else is moved to
// the heap when the timeout is created, off the timer's locks.

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <wheelrpc/timer/timer_task.h>

namespace wheelrpc::timer {
class Timeout;
}

namespace wheelrpc::timer::detail {

struct TaskBox;

/// What a stored task can do. `destroy` and `get_task` are null when there is
/// nothing to do (trivial inline callables), so releasing one costs no call.
struct TaskOps {
  void (*run)(TaskBox& box, Timeout& timeout);
  void (*destroy)(TaskBox& box) noexcept;
  void (*get_task)(TaskBox& box, std::shared_ptr<TimerTask>& out);
};

struct TaskBox {
  const TaskOps* ops;
  alignas(std::uintptr_t) unsigned char word[sizeof(std::uintptr_t)];
};
static_assert(sizeof(TaskBox) == 16);

template <class F>
inline constexpr bool kStoredInline =
    sizeof(F) <= sizeof(std::uintptr_t) &&
    alignof(F) <= alignof(std::uintptr_t) && std::is_trivially_copyable_v<F>&& std::is_trivially_destructible_v<F>;

/// A callable that may be moved by copying its bytes (and then not destroyed
/// at the old place): a smart pointer, or a struct holding only one.
template <class F>
inline constexpr bool kRelocatableInline =
    !kStoredInline<F> && sizeof(F) <= sizeof(std::uintptr_t) && alignof(F) <= alignof(std::uintptr_t) &&
    std::is_nothrow_destructible_v<F> && requires {
  typename F::wheelrpc_relocatable;
};

template <class F>
void invoke_task(F& f, Timeout& timeout) {
  if constexpr (std::is_invocable_v<F&, Timeout&>) {
    std::invoke(f, timeout);
  } else {
    static_assert(std::is_invocable_v<F&>,
                  "a timer task is callable as f(Timeout&) or f(), or is a "
                  "std::shared_ptr<TimerTask>");
    std::invoke(f);
  }
}

template <class F>
struct InlineOps {
  static void run(TaskBox& box, Timeout& timeout) {
    invoke_task(*std::launder(reinterpret_cast<F*>(box.word)), timeout);
  }
  static constexpr TaskOps kOps{&run, nullptr, nullptr};
};

template <class F>
struct RelocatableOps {
  static void run(TaskBox& box, Timeout& timeout) {
    invoke_task(*std::launder(reinterpret_cast<F*>(box.word)), timeout);
  }
  static void destroy(TaskBox& box) noexcept { std::launder(reinterpret_cast<F*>(box.word))->~F(); }
  static constexpr TaskOps kOps{&run, &destroy, nullptr};
};

template <class F>
F* heap_ptr(TaskBox& box) noexcept {
  F* p;
  std::memcpy(&p, box.word, sizeof p);
  return p;
}

template <class F>
struct HeapOps {
  static constexpr bool kIsTimerTask = std::is_same_v<F, std::shared_ptr<TimerTask>>;
  static void run(TaskBox& box, Timeout& timeout) {
    if constexpr (kIsTimerTask) {
      (*heap_ptr<F>(box))->run(timeout);
    } else {
      invoke_task(*heap_ptr<F>(box), timeout);
    }
  }
  static void destroy(TaskBox& box) noexcept {
    std::unique_ptr<F>{heap_ptr<F>(box)};  // the box owned it since make_task_box
  }
  static void get_task(TaskBox& box, std::shared_ptr<TimerTask>& out) {
    if constexpr (kIsTimerTask) out = *heap_ptr<F>(box);
  }
  static constexpr TaskOps kOps{&run, &destroy, kIsTimerTask ? &get_task : nullptr};
};

/// Wraps `f`. May allocate (and throw std::bad_alloc) for large callables.
template <class F>
TaskBox make_task_box(F&& f) {
  using D = std::decay_t<F>;
  TaskBox box;
  if constexpr (kStoredInline<D>) {
    box.ops = &InlineOps<D>::kOps;
    ::new (static_cast<void*>(box.word)) D(std::forward<F>(f));
  } else if constexpr (kRelocatableInline<D>) {
    box.ops = &RelocatableOps<D>::kOps;
    ::new (static_cast<void*>(box.word)) D(std::forward<F>(f));
  } else {
    box.ops = &HeapOps<D>::kOps;
    D* p = std::make_unique<D>(std::forward<F>(f)).release();  // owned by the box
    std::memcpy(box.word, &p, sizeof p);
  }
  return box;
}

/// Releases what the box owns. Trivial tasks need no call.
inline void destroy_task_box(TaskBox& box) noexcept {
  if (box.ops && box.ops->destroy) box.ops->destroy(box);
  box.ops = nullptr;
}

}  // namespace wheelrpc::timer::detail
