#pragma once
/// ReflectionService: the typed ServerReflection service of one version of
/// gRPC's reflection.proto (v1 or v1alpha), answering through a
/// ReflectionSession per stream.

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "descriptor_index.h"
#include "reflection_session.h"

namespace wheelrpc::services::detail {

/// `message` as the message type `To`: itself, or, for v1alpha's messages
/// (the same fields and numbers as v1's), through their bytes.
template <class To, class From>
To as(const From& message) {
  if constexpr (std::is_same_v<To, From>) {
    return message;
  } else {
    To to;
    to.ParsePartialFromString(message.SerializePartialAsString());
    return to;
  }
}

/// `Generated` is the generated class of the service:
/// ::grpc::reflection::v1::ServerReflection or v1alpha's. Its coroutine base
/// serves ServerReflectionInfo: a session per stream, a response per request,
/// in order, until the client half-closes.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (streams run at once, each
/// with its own session; the index is thread-safe).
template <class Generated>
class ReflectionService final : public Generated::Service {
 public:
  using Method = typename Generated::Methods::ServerReflectionInfo;
  using Stream = rpc::TypedServerStream<typename Method::Request, typename Method::Reply>;

  /// `index` outlives the service.
  ReflectionService(DescriptorIndex& index, std::function<std::vector<std::string>()> list_services)
      : index_(index), list_services_(std::move(list_services)) {}

  boost::asio::awaitable<void> ServerReflectionInfo(Stream& stream) override {
    ReflectionSession session(index_, list_services_);
    while (std::optional<typename Method::Request> request = co_await stream.async_read(boost::asio::use_awaitable)) {
      const auto answer = session.answer(as<::grpc::reflection::v1::ServerReflectionRequest>(*request));
      co_await stream.async_write(as<typename Method::Reply>(answer), boost::asio::use_awaitable);
    }
  }

 private:
  DescriptorIndex& index_;
  std::function<std::vector<std::string>()> list_services_;
};

}  // namespace wheelrpc::services::detail
