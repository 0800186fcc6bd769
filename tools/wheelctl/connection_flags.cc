#include "connection_flags.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/connector.h>

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;

namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool is_host_port(const std::string& text) {
  boost::asio::ip::tcp::endpoint ep;
  if (transport::parse_endpoint(text, ep)) return ep.port() != 0;
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() || text.size() - colon > 6) return false;
  const std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  if (!std::all_of(host.begin(), host.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.'; })) {
    return false;
  }
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  const long n = std::stol(port);
  return n >= 1 && n <= 65535;
}

}  // namespace

std::optional<std::string> parse_header(const std::string& text, transport::Attachments& out) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return "expected 'key: value', got '" + text + "'";
  std::string key = trim(text.substr(0, colon));
  if (key.empty()) return "empty key in '" + text + "'";
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  out.emplace_back(std::move(key), trim(text.substr(colon + 1)));
  return std::nullopt;
}

void ConnectionFlags::declare(VerbFlags& flags, bool with_metadata) {
  auto add = flags.options().add_options();
  add("protocol", po::value<std::string>()->value_name("grpc|native"),
      "the wire: grpc (default; any gRPC server, and wheelrpc servers) or native (wheelrpc's own)");
  add("timeout-ms", po::value<long long>()->value_name("T"), "deadline of the call, in ms (default 5000)");
  add("tls-ca", po::value<std::string>()->value_name("F"),
      "TLS: verify the server against this CA (PEM); turns TLS on");
  add("tls-cert", po::value<std::string>()->value_name("F"), "TLS: client certificate (PEM), with --tls-key (mTLS)");
  add("tls-key", po::value<std::string>()->value_name("F"), "TLS: the client certificate's key (PEM)");
  add("tls-server-name", po::value<std::string>()->value_name("N"),
      "TLS: the name to verify and send as SNI (default: HOST)");
  if (with_metadata) {
    add("header,H", po::value<std::vector<std::string>>()->composing()->value_name("'K: V'"),
        "request metadata, repeatable (keys lower-cased)");
  }
}

std::optional<std::string> ConnectionFlags::read(const VerbFlags& flags, std::string target_word) {
  const auto& vm = flags.values();
  if (!is_host_port(target_word)) {
    return "expected HOST:PORT (a host name or IP literal and a port 1..65535), got '" + target_word + "'";
  }
  target = std::move(target_word);
  if (vm.count("protocol")) {
    const auto& p = vm["protocol"].as<std::string>();
    if (p == "grpc") {
      protocol = rpc::WireProtocol::grpc;
    } else if (p == "native") {
      protocol = rpc::WireProtocol::native;
    } else {
      return "--protocol: expected grpc or native, got '" + p + "'";
    }
  }
  if (vm.count("timeout-ms")) {
    const long long t = vm["timeout-ms"].as<long long>();
    if (t < 0 || t > 86'400'000) return "--timeout-ms: expected 0..86400000, got " + std::to_string(t);
    timeout = std::chrono::milliseconds(t);
  }
  if (vm.count("header")) {
    for (const auto& h : vm["header"].as<std::vector<std::string>>()) {
      if (auto problem = parse_header(h, metadata)) return "-H: " + *problem;
    }
  }
  auto file = [&vm](const char* name, std::string& into) {
    if (vm.count(name)) into = vm[name].as<std::string>();
  };
  file("tls-ca", tls.ca_file);
  file("tls-cert", tls.cert_file);
  file("tls-key", tls.key_file);
  file("tls-server-name", tls.server_name);
  tls.enabled = !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty() || !tls.server_name.empty();
  if (!tls.enabled) return std::nullopt;
  if (tls.cert_file.empty() != tls.key_file.empty()) return "--tls-cert and --tls-key go together";
  if (tls.ca_file.empty())
    return std::string(!tls.server_name.empty() ? "--tls-server-name" : "--tls-cert") + " needs --tls-ca";
  if (tls.server_name.empty()) {
    // A host name given as HOST is what the certificate names; the client
    // connects to the addresses it resolves to, so say it explicitly.
    boost::asio::ip::tcp::endpoint ep;
    if (!transport::parse_endpoint(target, ep)) tls.server_name = target.substr(0, target.rfind(':'));
  }
  try {
    (void)transport::TlsContext::make(tls, transport::TlsRole::client);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
