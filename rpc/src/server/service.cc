#include <wheelrpc/rpc/service.h>

#include <stdexcept>

namespace wheelrpc::rpc {

void Service::set_method_options(std::string_view name, MethodOptions options) {
  for (auto& m : methods_) {
    if (m.name == name) {
      m.options = options;
      return;
    }
  }
  for (const auto& m : stream_methods_) {
    if (m.name == name) {
      throw std::invalid_argument("'" + std::string(name) + "' of service " + full_name_ +
                                  " is a streaming method: its limits are the server's (ServerOptions::streams)");
    }
  }
  throw std::invalid_argument("service " + full_name_ + " has no method '" + std::string(name) + "'");
}

}  // namespace wheelrpc::rpc
