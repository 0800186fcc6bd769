#include <wheelrpc/registry/errc.h>

#include <string>

namespace wheelrpc::registry {
namespace {

// boost::system::error_category's destructor is protected and non-virtual by
// design, which -Wnon-virtual-dtor flags in every derived class.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class RegistryCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "wheelrpc.registry"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::bad_endpoint: return "bad etcd endpoint list";
      case errc::timeout: return "etcd request timed out";
      case errc::unavailable: return "no etcd endpoint reachable";
      case errc::bad_response: return "bad answer from etcd: not the JSON expected";
      case errc::http_error: return "etcd answered with an HTTP error status";
      case errc::etcd_error: return "etcd refused the request";
      case errc::truncated: return "etcd answer truncated: the connection ended mid-message";
      case errc::compacted: return "watch start revision compacted: re-read and watch again";
      case errc::watch_canceled: return "etcd cancelled the watch";
      case errc::watch_closed: return "etcd ended the watch stream";
    }
    return "unknown wheelrpc.registry error " + std::to_string(ev);
  }
};
#pragma GCC diagnostic pop

}  // namespace

const boost::system::error_category& registry_category() noexcept {
  static const RegistryCategory category;
  return category;
}

}  // namespace wheelrpc::registry
