#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc {

const char* to_string(LoadBalance lb) noexcept {
  switch (lb) {
    case LoadBalance::round_robin: return "round_robin";
    case LoadBalance::least_active: return "least_active";
    case LoadBalance::power_of_two: return "p2c";
  }
  return "round_robin";
}

std::optional<LoadBalance> parse_load_balance(std::string_view text) noexcept {
  if (text == "round_robin") return LoadBalance::round_robin;
  if (text == "least_active") return LoadBalance::least_active;
  if (text == "p2c" || text == "power_of_two") return LoadBalance::power_of_two;
  return std::nullopt;
}

}  // namespace wheelrpc::rpc
