#include <wheelrpc/fault/fault_proxy.h>

#include <utility>

#include "proxy_state.h"

namespace wheelrpc::fault {

FaultProxy::FaultProxy(boost::asio::any_io_executor ex, boost::asio::ip::tcp::endpoint listen,
                       boost::asio::ip::tcp::endpoint upstream, FaultProxyOptions options)
    : state_(std::make_shared<detail::ProxyState>(std::move(ex), std::move(listen), std::move(upstream), options)) {}

FaultProxy::~FaultProxy() { stop(); }

boost::system::error_code FaultProxy::start() { return state_->start(); }
void FaultProxy::stop() { state_->stop(); }
boost::asio::ip::tcp::endpoint FaultProxy::local_endpoint() const { return state_->local_endpoint(); }
boost::asio::ip::tcp::endpoint FaultProxy::upstream_endpoint() const { return state_->upstream(); }
boost::system::error_code FaultProxy::add_toxic(Toxic toxic) { return state_->add_toxic(std::move(toxic)); }
boost::system::error_code FaultProxy::remove_toxic(std::string_view name) { return state_->remove_toxic(name); }
std::vector<ToxicInfo> FaultProxy::toxics() const { return state_->toxics(); }
void FaultProxy::down() { state_->down(); }
boost::system::error_code FaultProxy::up() { return state_->up(); }
bool FaultProxy::is_up() const { return state_->is_up(); }
ProxyStats FaultProxy::stats() const { return state_->stats(); }

}  // namespace wheelrpc::fault
