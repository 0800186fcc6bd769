#include "interop_payloads.h"

#include <algorithm>

namespace wheelrpc::interop {

grpc::testing::Payload zero_payload(int size) {
  grpc::testing::Payload p;
  p.set_type(grpc::testing::COMPRESSABLE);
  p.set_body(std::string(static_cast<std::size_t>(std::max(size, 0)), '\0'));
  return p;
}

bool is_zeros(const std::string& body, std::size_t size) {
  return body.size() == size && std::all_of(body.begin(), body.end(), [](char c) { return c == '\0'; });
}

}  // namespace wheelrpc::interop
