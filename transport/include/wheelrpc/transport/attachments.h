#pragma once
/// A call's metadata as every wire carries it: key/value pairs in order
/// (trace ids, auth tokens, gRPC's headers and trailers). Its own header so
/// that code which never sees a frame need not include the frame format.

#include <string>
#include <utility>
#include <vector>

namespace wheelrpc::transport {

/// Key/value pairs carried with a call (trace ids, auth tokens...), in order.
using Attachments = std::vector<std::pair<std::string, std::string>>;

}  // namespace wheelrpc::transport
