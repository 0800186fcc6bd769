#include <wheelrpc/rpc/service.h>

#include <stdexcept>

namespace wheelrpc::rpc {

void Service::set_method_options(std::string_view name, MethodOptions options) {
  const auto apply = [&](MethodOptions& mine) {
    if (options.timeout.count() == 0) options.timeout = mine.timeout;  // the IDL's stays
    mine = options;
  };
  for (auto& m : methods_) {
    if (m.name == name) return apply(m.options);
  }
  for (auto& m : stream_methods_) {
    if (m.name == name) return apply(m.options);
  }
  throw std::invalid_argument("service " + full_name_ + " has no method '" + std::string(name) + "'");
}

}  // namespace wheelrpc::rpc
