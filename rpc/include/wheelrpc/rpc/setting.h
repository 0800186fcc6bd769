#pragma once
/// Setting<T>: a CallOptions field that remembers whether it was given.

#include <compare>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace wheelrpc::rpc {

/// Who set a Setting, lowest to highest precedence (docs/timeouts.md,
/// "Precedence"): a layer fills only what every layer above it left alone,
/// except a forced runtime override, which beats the call's own option too.
enum class Layer : std::uint8_t {
  built_in,          ///< the library's default
  client_default,    ///< ClientOptions::call_defaults
  idl,               ///< the method's `option (wheelrpc.method)` (a typed stub)
  runtime_override,  ///< a rule the client follows (ClientOptions::rules)
  call,              ///< the caller's own CallOptions
  forced_override,   ///< a rule marked "force" (for incidents)
};

/// "built-in default", "client default", "IDL", "runtime override", "call", "forced override".
constexpr const char* to_string(Layer layer) noexcept {
  switch (layer) {
    case Layer::built_in: return "built-in default";
    case Layer::client_default: return "client default";
    case Layer::idl: return "IDL";
    case Layer::runtime_override: return "runtime override";
    case Layer::call: return "call";
    case Layer::forced_override: return "forced override";
  }
  return "built-in default";
}

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
    s.layer_ = Layer::built_in;
    return s;
  }
  /// Given: `value` (anything that converts to T: `options.timeout = 2s`).
  template <class U>
  requires(!std::is_same_v<std::remove_cvref_t<U>, Setting> &&
           std::is_convertible_v<U, T>) constexpr Setting(U&& value) noexcept
      : value_(std::forward<U>(value)), layer_(Layer::call) {}
  template <class U>
  requires(!std::is_same_v<std::remove_cvref_t<U>, Setting> && std::is_convertible_v<U, T>) constexpr Setting&
  operator=(U&& value) noexcept {
    value_ = std::forward<U>(value);
    layer_ = Layer::call;
    return *this;
  }

  constexpr operator T() const noexcept { return value_; }
  constexpr const T& value() const noexcept { return value_; }
  constexpr const T& operator*() const noexcept { return value_; }
  constexpr const T* operator->() const noexcept { return &value_; }
  /// Set by some layer above the built-in default.
  constexpr bool given() const noexcept { return layer_ != Layer::built_in; }
  /// Who set it.
  constexpr Layer layer() const noexcept { return layer_; }
  /// Sets `value` as set by `layer`.
  constexpr void set(const T& value, Layer layer) noexcept {
    value_ = value;
    layer_ = layer;
  }
  /// Takes `other` (its value and its layer) unless this one was given.
  constexpr void fill_from(const Setting& other) noexcept {
    if (!given()) *this = other;
  }
  /// Sets `value` as set by `layer` (by default the caller's) unless this one was given.
  constexpr void fill_from(const T& value, Layer layer = Layer::call) noexcept {
    if (!given()) set(value, layer);
  }
  /// Sets `value` as set by `layer` when `layer` beats the layer that set it now.
  constexpr void override_with(const T& value, Layer layer) noexcept {
    if (layer >= layer_) set(value, layer);
  }

  friend constexpr bool operator==(const Setting& a, const T& b) noexcept { return a.value_ == b; }
  friend constexpr auto operator<=>(const Setting& a, const T& b) noexcept { return a.value_ <=> b; }

 private:
  T value_{};
  Layer layer_ = Layer::built_in;
};

}  // namespace wheelrpc::rpc
