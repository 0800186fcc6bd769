#include "link_proxy.h"

#include <stdexcept>
#include <string>

#include <boost/asio/ip/address.hpp>

namespace wheelrpc::bench {

namespace asio = boost::asio;

LinkProxy::LinkProxy(const asio::ip::tcp::endpoint& upstream, std::uint64_t kb_per_s)
    : work_(asio::make_work_guard(io_)),
      proxy_(io_.get_executor(), {asio::ip::make_address("127.0.0.1"), 0}, upstream) {
  if (const auto ec = proxy_.start()) throw std::runtime_error("the link proxy cannot listen: " + ec.message());
  if (const auto ec = proxy_.add_toxic({"link", fault::Stream::both, fault::Bandwidth{kb_per_s}})) {
    throw std::runtime_error("the link proxy refused its bandwidth toxic: " + ec.message());
  }
  thread_ = std::thread([this] { io_.run(); });
}

LinkProxy::~LinkProxy() {
  proxy_.stop();
  work_.reset();  // the connections close on io_, then run() returns
  thread_.join();
}

}  // namespace wheelrpc::bench
