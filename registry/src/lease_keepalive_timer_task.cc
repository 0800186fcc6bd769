#include "lease_keepalive_timer_task.h"

#include <boost/asio/post.hpp>

#include "etcd_registry.h"

namespace wheelrpc::registry::detail {

void LeaseKeepAliveTimerTask::run(timer::Timeout&) {
  // On the timer's worker: only post; the request starts on the strand.
  auto registry = registry_.lock();
  if (!registry || registry->closed()) return;
  boost::asio::post(registry->strand(), [registry, lease = lease_id_] { registry->send_keepalive(lease); });
}

}  // namespace wheelrpc::registry::detail
