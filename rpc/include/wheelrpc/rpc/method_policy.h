#pragma once
/// MethodPolicy: a typed method's call policy from its IDL option.

#include <chrono>
#include <optional>

#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc {

/// What a method's `option (wheelrpc.method) = {...}` says (wheelrpc/
/// options.proto): the typed stub's defaults for that method. A field left
/// out of the option is std::nullopt. Generated as a constexpr value of
/// the method's traits (`Greeter::Methods::SayHello::policy`).
struct MethodPolicy {
  std::optional<std::chrono::milliseconds> timeout{};                ///< timeout_ms
  std::optional<bool> idempotent{};                                  ///< idempotent
  std::optional<int> retries{};                                      ///< retries
  std::optional<std::chrono::milliseconds> attempt_timeout{};        ///< attempt_timeout_ms
  std::optional<std::chrono::milliseconds> hedge_delay{};            ///< hedge_delay_ms
  std::optional<bool> wait_for_ready{};                              ///< wait_for_ready
  std::optional<std::chrono::milliseconds> stream_timeout{};         ///< stream_timeout_ms
  std::optional<std::chrono::milliseconds> message_timeout{};        ///< message_timeout_ms
  std::optional<std::chrono::milliseconds> stall_timeout{};          ///< stall_timeout_ms
  std::optional<std::chrono::milliseconds> first_message_timeout{};  ///< first_message_timeout_ms
  std::optional<transport::Compression> compression{};               ///< compression
  std::optional<int> compression_level{};                            ///< compression_level
};

/// Fills every policy Setting of `call` that the call did not give from
/// `policy` (marking it set by Layer::idl, so ClientOptions::call_defaults
/// do not override it): the IDL's place in "call > IDL > client default".
inline void fill_policy(CallOptions& call, const MethodPolicy& policy) noexcept {
  if (policy.timeout) call.timeout.fill_from(*policy.timeout, Layer::idl);
  if (policy.idempotent) call.idempotent.fill_from(*policy.idempotent, Layer::idl);
  if (policy.retries) call.retries.fill_from(*policy.retries, Layer::idl);
  if (policy.attempt_timeout) call.attempt_timeout.fill_from(*policy.attempt_timeout, Layer::idl);
  if (policy.hedge_delay) call.hedge_delay.fill_from(*policy.hedge_delay, Layer::idl);
  if (policy.wait_for_ready) call.wait_for_ready.fill_from(*policy.wait_for_ready, Layer::idl);
  if (policy.stream_timeout) call.stream_timeout.fill_from(*policy.stream_timeout, Layer::idl);
  if (policy.message_timeout) call.message_timeout.fill_from(*policy.message_timeout, Layer::idl);
  if (policy.stall_timeout) call.stall_timeout.fill_from(*policy.stall_timeout, Layer::idl);
  if (policy.first_message_timeout) call.first_message_timeout.fill_from(*policy.first_message_timeout, Layer::idl);
  if (policy.compression) call.compression.fill_from(*policy.compression, Layer::idl);
  if (policy.compression_level) call.compression_level.fill_from(*policy.compression_level, Layer::idl);
}

}  // namespace wheelrpc::rpc
