// wheelctl registry: what the registry (etcd) holds, as a table, and with
// --watch every change after. The provider sets come from the registry
// module's own client (EtcdRegistry::subscribe, as servers and clients see
// them); the list of services and each key's lease from a range read.
#include <algorithm>
#include <condition_variable>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "connection_flags.h"
#include "etcd_scan.h"
#include "failure.h"
#include "utc_time.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace asio = boost::asio;
namespace po = boost::program_options;
using registry::ServiceInstance;

namespace {

constexpr const char* kUsage =
    "usage: wheelctl registry etcd://HOST:PORT[,HOST:PORT...] [SERVICE] [--watch] [flags]\n"
    "Prints the providers the registry holds, as a table: SERVICE, ENDPOINT, WEIGHT,\n"
    "VERSION, ZONE, TAGS and LEASE (the etcd lease id, its seconds left / granted):\n"
    "for SERVICE, or for every service under the key root. With --watch, prints the\n"
    "table again, after a line \"<UTC time> SERVICE: N providers\", on every change,\n"
    "until SIGINT or SIGTERM (new services are found within 2 s).\n"
    "Exit status: 0 printed (or watched until interrupted), 2 usage, 3 etcd did not\n"
    "answer within --timeout-ms.\n";

/// What the subscriptions delivered (written on the registry's strand,
/// read by the main thread).
struct Board {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::vector<ServiceInstance>> sets;
  std::vector<std::string> news;  // services whose set changed since the last print
  std::string last_error;
  bool interrupted = false;
};

std::string tags_text(const ServiceInstance& i) {
  std::string out;
  for (const auto& [k, v] : i.tags) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out.empty() ? "-" : out;
}

/// The lease column of each key "<root>/<service>/providers/<endpoint>".
std::map<std::string, std::string> lease_column(EtcdScan& scan, const std::string& root) {
  std::map<std::string, std::string> out;
  std::vector<EtcdKey> keys;
  if (scan.range(root + "/", keys)) return out;
  std::map<std::int64_t, std::string> leases;
  for (const auto& k : keys) {
    if (k.lease == 0) {
      out[k.key] = "none";
      continue;
    }
    auto it = leases.find(k.lease);
    if (it == leases.end()) {
      std::ostringstream text;
      text << std::hex << k.lease << std::dec;
      EtcdLease lease;
      if (!scan.lease(k.lease, lease)) {
        if (lease.ttl_s < 0) {
          text << " (expired)";
        } else {
          text << " (" << lease.ttl_s << "/" << lease.granted_s << " s)";
        }
      }
      it = leases.emplace(k.lease, text.str()).first;
    }
    out[k.key] = it->second;
  }
  return out;
}

void print_table(std::ostream& out, const std::map<std::string, std::vector<ServiceInstance>>& sets,
                 const std::map<std::string, std::string>& leases, const std::string& root) {
  std::vector<std::vector<std::string>> rows{{"SERVICE", "ENDPOINT", "WEIGHT", "VERSION", "ZONE", "TAGS", "LEASE"}};
  for (const auto& [service, set] : sets) {
    for (const auto& i : set) {
      const auto lease = leases.find(root + "/" + service + "/providers/" + i.endpoint);
      rows.push_back({service, i.endpoint, std::to_string(i.weight), i.version.empty() ? "-" : i.version,
                      i.zone.empty() ? "-" : i.zone, tags_text(i), lease == leases.end() ? "?" : lease->second});
    }
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
  if (rows.size() == 1) out << "(no providers)\n";
  out << std::flush;
}

/// The services under `root` ("<root>/<service>/providers/...").
std::optional<std::string> discover(EtcdScan& scan, const std::string& root, std::set<std::string>& out) {
  std::vector<EtcdKey> keys;
  if (auto problem = scan.range(root + "/", keys)) return problem;
  for (const auto& k : keys) {
    const auto rest = k.key.substr(root.size() + 1);
    const auto slash = rest.find('/');
    if (slash != std::string::npos && rest.compare(slash, 11, "/providers/") == 0) out.insert(rest.substr(0, slash));
  }
  return std::nullopt;
}

}  // namespace

int run_registry(const Args& args, Io& io) {
  VerbFlags flags("registry", kUsage);
  flags.options().add_options()("watch", po::bool_switch(), "print the table again on every change")(
      "timeout-ms", po::value<long long>()->value_name("T"), "bound of each etcd request, in ms (default 5000)")(
      "root", po::value<std::string>()->value_name("PREFIX"), "the registry's key root (default /wheelrpc)");
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.empty() || words.size() > 2) return flags.usage_error(io, "expected etcd://HOST:PORT [SERVICE]");
  std::chrono::milliseconds timeout = ConnectionFlags::kDefaultTimeout;
  if (flags.values().count("timeout-ms")) {
    const auto t = flags.values()["timeout-ms"].as<long long>();
    if (t < 1 || t > 3'600'000) return flags.usage_error(io, "--timeout-ms: expected 1..3600000");
    timeout = std::chrono::milliseconds(t);
  }
  registry::EtcdRegistryOptions options;
  options.request_timeout = timeout;
  if (flags.values().count("root")) options.root = flags.values()["root"].as<std::string>();
  const bool watching = flags.values()["watch"].as<bool>();

  std::unique_ptr<EtcdScan> scan;
  try {
    scan = std::make_unique<EtcdScan>(words[0], timeout);
  } catch (const std::invalid_argument& e) {
    return flags.usage_error(io, e.what());
  }
  std::set<std::string> services;
  if (words.size() == 2) {
    services.insert(words[1]);
  } else if (auto problem = discover(*scan, options.root, services)) {
    return report(io, "registry", Failure{kExitUnreachable, *problem});
  }

  timer::HashedWheelTimer timer;  // outlives the registry and the io thread's handlers
  asio::io_context ctx(1);
  auto work = asio::make_work_guard(ctx);
  std::shared_ptr<registry::EtcdRegistry> reg;
  try {
    reg = registry::EtcdRegistry::create(ctx.get_executor(), timer, words[0], options);
  } catch (const std::invalid_argument& e) {
    return flags.usage_error(io, e.what());
  }
  auto board = std::make_shared<Board>();
  asio::signal_set signals(ctx, SIGINT, SIGTERM);
  signals.async_wait([board](boost::system::error_code ec, int) {
    if (ec) return;
    std::lock_guard lock(board->mutex);
    board->interrupted = true;
    board->changed.notify_all();
  });
  std::thread thread([&ctx] { ctx.run(); });

  auto subscribe = [&](const std::string& service) {
    reg->subscribe_with_errors(
        service,
        [board, service](const std::vector<ServiceInstance>& set) {
          std::lock_guard lock(board->mutex);
          board->sets[service] = set;
          board->news.push_back(service);
          board->changed.notify_all();
        },
        [board](boost::system::error_code, const std::string& why) {
          std::lock_guard lock(board->mutex);
          board->last_error = why;
          board->changed.notify_all();
        });
  };
  for (const auto& s : services) subscribe(s);

  int status = kExitOk;
  {
    // The first set of every service, within the timeout.
    std::unique_lock lock(board->mutex);
    const bool all = board->changed.wait_for(
        lock, timeout, [&] { return board->interrupted || board->sets.size() == services.size(); });
    if (!all) {
      std::string missing;
      for (const auto& s : services) {
        if (!board->sets.count(s)) missing += (missing.empty() ? "" : ", ") + s;
      }
      status = report(io, "registry",
                      Failure{kExitUnreachable, "no answer from " + reg->describe() + " within " +
                                                    std::to_string(timeout.count()) + " ms for " + missing +
                                                    (board->last_error.empty() ? "" : ": " + board->last_error)});
    }
  }
  if (status == kExitOk) {
    std::map<std::string, std::vector<ServiceInstance>> sets;
    {
      std::lock_guard lock(board->mutex);
      sets = board->sets;
      board->news.clear();
    }
    print_table(io.out, sets, lease_column(*scan, options.root), options.root);
    auto next_scan = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (watching) {
      std::vector<std::string> news;
      {
        std::unique_lock lock(board->mutex);
        board->changed.wait_until(lock, next_scan, [&] { return board->interrupted || !board->news.empty(); });
        if (board->interrupted) break;
        news.swap(board->news);
        sets = board->sets;
      }
      if (std::chrono::steady_clock::now() >= next_scan) {
        next_scan = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        if (words.size() == 1) {
          std::set<std::string> now;
          if (!discover(*scan, options.root, now)) {
            for (const auto& s : now) {
              if (services.insert(s).second) subscribe(s);
            }
          }
        }
      }
      std::sort(news.begin(), news.end());
      news.erase(std::unique(news.begin(), news.end()), news.end());
      for (const auto& s : news) {
        const auto n = sets.count(s) ? sets[s].size() : 0;
        io.out << "\n" << utc_now() << " " << s << ": " << n << (n == 1 ? " provider" : " providers") << "\n";
      }
      if (!news.empty()) print_table(io.out, sets, lease_column(*scan, options.root), options.root);
    }
  }
  signals.cancel();
  reg->close();
  reg.reset();
  work.reset();
  thread.join();
  return status;
}

}  // namespace wheelrpc::wheelctl
