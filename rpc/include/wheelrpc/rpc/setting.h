#pragma once
/// Setting<T>: a CallOptions field that remembers whether it was given.

#include <compare>
#include <type_traits>
#include <utility>

namespace wheelrpc::rpc {

/// A value with a built-in default that knows whether it was set, so that
/// the defaults below a call (the IDL's method option, then ClientOptions::
/// call_defaults) fill only the fields the call left alone
/// (docs/timeouts.md, "Precedence"). Reads like the value: it converts to
/// `T`, compares with `T`, and `*s` / `s->` reach the value itself
/// (`options.timeout->count()`). Assigning a value marks it given, even the
/// default's value. Not thread-safe, like the options holding it.
template <class T>
class Setting {
 public:
  /// Not given: the built-in default `value`.
  static constexpr Setting by_default(T value) noexcept {
    Setting s(std::move(value));
    s.given_ = false;
    return s;
  }
  /// Given: `value` (anything that converts to T: `options.timeout = 2s`).
  template <class U>
  requires(!std::is_same_v<std::remove_cvref_t<U>, Setting> &&
           std::is_convertible_v<U, T>) constexpr Setting(U&& value) noexcept
      : value_(std::forward<U>(value)), given_(true) {}
  template <class U>
  requires(!std::is_same_v<std::remove_cvref_t<U>, Setting> && std::is_convertible_v<U, T>) constexpr Setting&
  operator=(U&& value) noexcept {
    value_ = std::forward<U>(value);
    given_ = true;
    return *this;
  }

  constexpr operator T() const noexcept { return value_; }
  constexpr const T& value() const noexcept { return value_; }
  constexpr const T& operator*() const noexcept { return value_; }
  constexpr const T* operator->() const noexcept { return &value_; }
  /// Set by the caller (assigned, or filled from a default that was).
  constexpr bool given() const noexcept { return given_; }
  /// Takes `other` (its value and whether it was given) unless this one was given.
  constexpr void fill_from(const Setting& other) noexcept {
    if (!given_) *this = other;
  }
  /// Sets `value` unless this one was given.
  constexpr void fill_from(const T& value) noexcept {
    if (!given_) *this = value;
  }

  friend constexpr bool operator==(const Setting& a, const T& b) noexcept { return a.value_ == b; }
  friend constexpr auto operator<=>(const Setting& a, const T& b) noexcept { return a.value_ <=> b; }

 private:
  T value_{};
  bool given_ = false;
};

}  // namespace wheelrpc::rpc
