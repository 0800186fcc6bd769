// wheelctl explain: which value of each call setting a method gets in a
// running process, and which layer set it (a forced or plain runtime
// override with its etcd key and revision, the call, the IDL, the client's
// defaults, the built-in default), from the process's admin port
// (GET /config/effective.json; docs/governance.md, "Which timeout wins").
#include <algorithm>
#include <cstring>
#include <iomanip>
#include <sstream>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: wheelctl explain HOST:PORT METHOD [--json] [--timeout-ms T]\n"
    "Asks the admin server at HOST:PORT (a process's AdminServer, http) which value of\n"
    "each call setting of METHOD (\"echo\", \"/pkg.Service/Method\") its clients use now,\n"
    "and who set it: forced override > call > runtime override > IDL > client default >\n"
    "built-in default. An override names its etcd key and revision. --json prints the\n"
    "admin's answer (GET /config/effective.json?method=METHOD) as it is.\n"
    "Exit status: 0 answered, 2 usage, 3 cannot connect or no answer in time, 1 any\n"
    "other failure (an HTTP error status: printed).\n";

std::string url_encode(const std::string& s) {
  std::ostringstream out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || std::strchr("-._~/", c)) {
      out << c;
    } else {
      out << '%' << std::uppercase << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(c);
      out << std::dec;
    }
  }
  return out.str();
}

/// GET http://host:port/target; the body, or the failure.
std::optional<Failure> get(const std::string& host, const std::string& port, const std::string& target,
                           std::chrono::milliseconds timeout, std::string& body) {
  asio::io_context io;
  std::optional<Failure> failure;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto tuple = asio::as_tuple(asio::use_awaitable);
        asio::ip::tcp::resolver resolver(io);
        beast::tcp_stream stream(io);
        stream.expires_after(timeout);
        auto [rec, results] = co_await resolver.async_resolve(host, port, tuple);
        if (rec) {
          failure = Failure{kExitUnreachable, "cannot resolve " + host + ": " + rec.message()};
          co_return;
        }
        auto [cec, ep] = co_await stream.async_connect(results, tuple);
        if (cec) {
          failure = Failure{kExitUnreachable, "cannot connect to " + host + ":" + port + ": " +
                                                  (cec == beast::error::timeout ? "no answer in time" : cec.message())};
          co_return;
        }
        http::request<http::empty_body> req(http::verb::get, target, 11);
        req.set(http::field::host, host + ":" + port);
        req.set(http::field::accept, "application/json");
        req.set(http::field::connection, "close");
        auto [wec, wn] = co_await http::async_write(stream, req, tuple);
        beast::flat_buffer buffer;
        http::response<http::string_body> res;
        http::response_parser<http::string_body> parser;
        parser.body_limit(16 * 1024 * 1024);
        auto [rdec, rn] =
            wec ? std::tuple{wec, std::size_t{0}} : co_await http::async_read(stream, buffer, parser, tuple);
        if (rdec) {
          failure =
              Failure{kExitUnreachable, host + ":" + port + ": " +
                                            (rdec == beast::error::timeout ? "no answer in time" : rdec.message())};
          co_return;
        }
        res = parser.release();
        if (res.result_int() != 200) {
          failure = Failure{kExitFailed, "HTTP " + std::to_string(res.result_int()) + ": " + res.body()};
          co_return;
        }
        body = std::move(res.body());
      },
      asio::detached);
  io.run();
  return failure;
}

std::string text_of(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_null()) return "-";
  return json::serialize(v);
}

void print_table(const json::object& doc, Io& io) {
  const auto* clients = doc.if_contains("clients");
  if (!clients || !clients->is_array() || clients->as_array().empty()) {
    io.out << "no client is registered with this admin server\n";
    return;
  }
  for (const auto& cv : clients->as_array()) {
    const auto& c = cv.as_object();
    io.out << "client " << text_of(c.at("client")) << ": ";
    if (c.at("rules_source").is_null()) {
      io.out << "no runtime rules";
    } else {
      io.out << "rules from " << text_of(c.at("rules_source")) << ", revision " << text_of(c.at("rules_revision"));
      if (!c.at("rules_error").is_null()) io.out << " (last report failed: " << text_of(c.at("rules_error")) << ")";
    }
    io.out << "\n";
    std::vector<std::array<std::string, 4>> rows{{"SETTING", "VALUE", "SET BY", "ORIGIN / LOWER LAYERS"}};
    for (const auto& sv : c.at("settings").as_array()) {
      const auto& s = sv.as_object();
      std::string rest = s.at("origin").is_null() ? "" : text_of(s.at("origin"));
      const auto& layers = s.at("layers").as_array();
      for (std::size_t i = 1; i < layers.size(); ++i) {
        if (!rest.empty()) rest += "; ";
        rest += "beats " + text_of(layers[i].at("layer")) + " " + text_of(layers[i].at("value"));
      }
      rows.push_back({text_of(s.at("name")), text_of(s.at("value")), text_of(s.at("layer")), rest});
    }
    std::array<std::size_t, 3> width{};
    for (const auto& r : rows)
      for (std::size_t i = 0; i < 3; ++i) width[i] = std::max(width[i], r[i].size());
    for (const auto& r : rows) {
      io.out << "  ";
      for (std::size_t i = 0; i < 2; ++i) io.out << std::left << std::setw(static_cast<int>(width[i] + 2)) << r[i];
      if (r[3].empty()) {
        io.out << r[2] << "\n";
      } else {
        io.out << std::left << std::setw(static_cast<int>(width[2] + 2)) << r[2] << r[3] << "\n";
      }
    }
  }
}

}  // namespace

int run_explain(const Args& args, Io& io) {
  VerbFlags flags("explain", kUsage);
  flags.options().add_options()("json", "print the admin's JSON answer as it is")(
      "timeout-ms", po::value<long long>()->default_value(5000), "bound on the whole exchange, in ms");
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.size() != 2) return flags.usage_error(io, "expected HOST:PORT METHOD");
  std::string where = words[0];
  if (where.rfind("http://", 0) == 0) where.erase(0, 7);
  if (!where.empty() && where.back() == '/') where.pop_back();
  const auto colon = where.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == where.size()) {
    return flags.usage_error(io, "expected HOST:PORT of an admin server, got '" + words[0] + "'");
  }
  std::string host = where.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const long long timeout = flags.values()["timeout-ms"].as<long long>();
  if (timeout <= 0) return flags.usage_error(io, "--timeout-ms must be positive");
  std::string body;
  if (auto failure = get(host, where.substr(colon + 1), "/config/effective.json?method=" + url_encode(words[1]),
                         std::chrono::milliseconds(timeout), body)) {
    return report(io, "explain", *failure);
  }
  if (flags.values().count("json")) {
    io.out << body << (body.empty() || body.back() != '\n' ? "\n" : "");
    return kExitOk;
  }
  boost::system::error_code ec;
  auto doc = json::parse(body, ec);
  if (ec || !doc.is_object()) return report(io, "explain", Failure{kExitFailed, "the answer is not JSON: " + body});
  io.out << "method " << text_of(doc.as_object().at("method")) << "\n";
  try {
    print_table(doc.as_object(), io);
  } catch (const std::exception& e) {
    return report(io, "explain", Failure{kExitFailed, std::string("unexpected answer: ") + e.what()});
  }
  return kExitOk;
}

}  // namespace wheelrpc::wheelctl
