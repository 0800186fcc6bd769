#pragma once
// Type-erased storage for a timer task in 16 bytes: an operations pointer and
// one word. Callables that fit in a word and are trivially copyable live in
// the word itself (no allocation); anything else is moved to the heap when the
// timeout is created, off the timer's locks.

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

enum class TaskOp : std::uint8_t { run, destroy, get_task };

struct TaskBox {
  // run: invokes the task with *timeout. destroy: releases it. get_task: copies
  // the TimerTask into *out when the task is one, else leaves *out empty.
  using Ops = void (*)(TaskOp op, TaskBox& box, Timeout* timeout,
                       std::shared_ptr<TimerTask>* out);
  Ops ops;
  alignas(std::uintptr_t) unsigned char word[sizeof(std::uintptr_t)];
};
static_assert(sizeof(TaskBox) == 16);

template <class F>
inline constexpr bool kStoredInline =
    sizeof(F) <= sizeof(std::uintptr_t) && alignof(F) <= alignof(std::uintptr_t) &&
    std::is_trivially_copyable_v<F> && std::is_trivially_destructible_v<F>;

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
void inline_ops(TaskOp op, TaskBox& box, Timeout* timeout, std::shared_ptr<TimerTask>*) {
  if (op == TaskOp::run) {
    F* f = std::launder(reinterpret_cast<F*>(box.word));
    invoke_task(*f, *timeout);
  }
}

template <class F>
F* heap_ptr(TaskBox& box) noexcept {
  F* p;
  std::memcpy(&p, box.word, sizeof p);
  return p;
}

template <class F>
void heap_ops(TaskOp op, TaskBox& box, Timeout* timeout, std::shared_ptr<TimerTask>* out) {
  F* f = heap_ptr<F>(box);
  switch (op) {
    case TaskOp::run:
      if constexpr (std::is_same_v<F, std::shared_ptr<TimerTask>>) {
        (*f)->run(*timeout);
      } else {
        invoke_task(*f, *timeout);
      }
      break;
    case TaskOp::destroy:
      std::unique_ptr<F>{f};  // the box owned it since make_task_box
      break;
    case TaskOp::get_task:
      if constexpr (std::is_same_v<F, std::shared_ptr<TimerTask>>) *out = *f;
      break;
  }
}

/// Wraps `f`. May allocate (and throw std::bad_alloc) for large callables.
template <class F>
TaskBox make_task_box(F&& f) {
  using D = std::decay_t<F>;
  TaskBox box;
  if constexpr (kStoredInline<D>) {
    box.ops = &inline_ops<D>;
    ::new (static_cast<void*>(box.word)) D(std::forward<F>(f));
  } else {
    box.ops = &heap_ops<D>;
    D* p = std::make_unique<D>(std::forward<F>(f)).release();  // owned by the box
    std::memcpy(box.word, &p, sizeof p);
  }
  return box;
}

/// Releases what the box owns. Trivial tasks need no call.
inline void destroy_task_box(TaskBox& box) noexcept {
  if (box.ops) box.ops(TaskOp::destroy, box, nullptr, nullptr);
  box.ops = nullptr;
}

}  // namespace wheelrpc::timer::detail
