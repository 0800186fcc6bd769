#include <wheelrpc/fault/errc.h>

#include <string>

namespace wheelrpc::fault {
namespace {

// boost::system::error_category has a protected non-virtual destructor on
// purpose (categories are never deleted through a base pointer), which
// -Wnon-virtual-dtor flags in every derived class.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#endif

class FaultCategory final : public boost::system::error_category {
 public:
  // A fixed id so that copies of the category in several shared objects compare equal.
  constexpr FaultCategory() noexcept : boost::system::error_category(0x5f1a'93c4'27de'b0a8ULL) {}

  const char* name() const noexcept override { return "wheelrpc.fault"; }

  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::toxic_exists: return "a toxic of that name already exists";
      case errc::no_such_toxic: return "no toxic of that name";
      case errc::invalid_toxic: return "invalid toxic";
      case errc::stopped: return "the proxy was stopped";
      case errc::not_started: return "the proxy was never started";
    }
    return "unknown wheelrpc.fault error " + std::to_string(ev);
  }
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

}  // namespace

const boost::system::error_category& fault_category() noexcept {
  static const FaultCategory category;
  return category;
}

}  // namespace wheelrpc::fault
