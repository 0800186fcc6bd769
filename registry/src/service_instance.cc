// ServiceInstance: its JSON form (Boost.JSON) and its validation.

#include <charconv>

#include <boost/json.hpp>

#include <wheelrpc/registry/registry.h>

namespace wheelrpc::registry {
namespace json = boost::json;

namespace {

bool service_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// "host:port" or "[v6]:port" with a port 1..65535 and no character that would
// break the key it is part of (a slash, a space, a control byte).
std::string endpoint_problem(const std::string& ep) {
  if (ep.empty()) return "endpoint is empty";
  for (char c : ep) {
    if (c == '/' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return "endpoint '" + ep + "' has a slash, space or control character";
    }
  }
  std::string_view host;
  std::string_view port;
  if (ep.front() == '[') {
    const auto close = ep.find(']');
    if (close == std::string::npos || close + 1 >= ep.size() || ep[close + 1] != ':') {
      return "endpoint '" + ep + "' is not \"[v6]:port\"";
    }
    host = std::string_view(ep).substr(1, close - 1);
    port = std::string_view(ep).substr(close + 2);
  } else {
    const auto colon = ep.rfind(':');
    if (colon == std::string::npos) return "endpoint '" + ep + "' has no port (\"ip:port\")";
    host = std::string_view(ep).substr(0, colon);
    port = std::string_view(ep).substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return "endpoint '" + ep + "': an IPv6 address needs brackets";
  }
  if (host.empty()) return "endpoint '" + ep + "' has no host";
  unsigned value = 0;
  const auto [p, err] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || err != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
    return "endpoint '" + ep + "' has no valid port (1..65535)";
  }
  return {};
}

}  // namespace

std::string ServiceInstance::to_json() const {
  json::object tags_obj;
  for (const auto& [k, v] : tags) tags_obj[k] = v;
  json::object o;
  o["service"] = service;
  o["endpoint"] = endpoint;
  o["weight"] = weight;
  o["version"] = version;
  o["zone"] = zone;
  o["tags"] = std::move(tags_obj);
  return json::serialize(o);
}

std::optional<ServiceInstance> ServiceInstance::from_json(std::string_view text, std::string& why) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) {
    why = "not JSON (" + ec.message() + ")";
    return std::nullopt;
  }
  const json::object* o = v.if_object();
  if (o == nullptr) {
    why = "not a JSON object";
    return std::nullopt;
  }
  ServiceInstance out;
  auto text_field = [&](const char* name, std::string& into, bool required) {
    const json::value* f = o->if_contains(name);
    if (f == nullptr) {
      if (required) why = std::string("no \"") + name + "\"";
      return !required;
    }
    const json::string* s = f->if_string();
    if (s == nullptr) {
      why = std::string("\"") + name + "\" is not a string";
      return false;
    }
    into.assign(s->data(), s->size());
    return true;
  };
  if (!text_field("service", out.service, true) || !text_field("endpoint", out.endpoint, true) ||
      !text_field("version", out.version, false) || !text_field("zone", out.zone, false)) {
    return std::nullopt;
  }
  if (const json::value* w = o->if_contains("weight")) {
    if (w->is_int64()) {
      const auto n = w->get_int64();
      if (n < 0 || n > 10000) {
        why = "weight " + std::to_string(n) + " is outside 0..10000";
        return std::nullopt;
      }
      out.weight = static_cast<int>(n);
    } else if (w->is_uint64() && w->get_uint64() <= 10000) {
      out.weight = static_cast<int>(w->get_uint64());
    } else {
      why = "\"weight\" is not an integer in 0..10000";
      return std::nullopt;
    }
  }
  if (const json::value* t = o->if_contains("tags")) {
    const json::object* to = t->if_object();
    if (to == nullptr) {
      why = "\"tags\" is not an object";
      return std::nullopt;
    }
    for (const auto& kv : *to) {
      const json::string* s = kv.value().if_string();
      if (s == nullptr) {
        why = "tag \"" + std::string(kv.key()) + "\" is not a string";
        return std::nullopt;
      }
      out.tags.emplace(std::string(kv.key()), std::string(s->data(), s->size()));
    }
  }
  if (auto reason = out.invalid_reason(); !reason.empty()) {
    why = std::move(reason);
    return std::nullopt;
  }
  return out;
}

std::string ServiceInstance::invalid_reason() const {
  if (service.empty()) return "service name is empty";
  if (service.size() > 128) return "service name is longer than 128 bytes";
  for (char c : service) {
    if (!service_char(c)) {
      if (c == ' ') return "service name '" + service + "' has a space";
      return "service name '" + service + "' has a character outside [A-Za-z0-9._-]";
    }
  }
  if (auto p = endpoint_problem(endpoint); !p.empty()) return p;
  if (weight < 0 || weight > 10000) return "weight " + std::to_string(weight) + " is outside 0..10000";
  return {};
}

}  // namespace wheelrpc::registry
