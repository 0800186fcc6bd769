#include "retry_tasks.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "etcd_registry.h"
#include "log.h"

namespace wheelrpc::registry::detail {

void AbstractRetryTask::run(timer::Timeout&) {
  // On the timer's worker: decide and post, nothing more.
  auto registry = registry_.lock();
  if (!registry || registry->closed()) return;
  boost::asio::post(registry->strand(), [registry, self = shared_from_this()] {
    if (!registry->take_retry(self->id())) return;  // cancelled or superseded meanwhile
    SPDLOG_LOGGER_DEBUG(logger(), "{} {}: retrying", self->name(), self->id());
    self->retry(*registry);
  });
}

void FailedRegisteredTask::retry(EtcdRegistryImpl& registry) { registry.retry_register(key_); }
void FailedUnregisteredTask::retry(EtcdRegistryImpl& registry) { registry.retry_unregister(key_); }
void FailedSubscribedTask::retry(EtcdRegistryImpl& registry) { registry.retry_subscribe(sub_); }
void FailedUnsubscribedTask::retry(EtcdRegistryImpl& registry) { registry.finish_unsubscribe(sub_); }

}  // namespace wheelrpc::registry::detail
