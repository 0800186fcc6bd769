#pragma once
// CallCancelHandler: what a call installs in its completion handler's
// cancellation slot (CallDriver::start): any cancellation type cancels the
// call with operation_aborted, on the thread that emits it.

#include <memory>
#include <utility>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>

#include "call.h"
#include "client_core.h"

namespace wheelrpc::rpc::detail {

struct CallCancelHandler {
  explicit CallCancelHandler(CallPtr c) noexcept : call(std::move(c)) {}
  void operator()(boost::asio::cancellation_type) {
    std::shared_ptr<ClientCore> core;
    {
      CallPin pin(*call);
      if (!pin.alive()) return;
      core = call->core->shared_from_this();
    }
    core->driver().cancel(call, boost::asio::error::operation_aborted, "call to '" + call->method + "' cancelled",
                          Origin::cancel_slot);
  }
  CallPtr call;
};

}  // namespace wheelrpc::rpc::detail
