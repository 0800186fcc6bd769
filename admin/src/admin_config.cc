// GET /config/effective?method=M: which value of each call setting a call to
// M gets now from each client, and which layer set it (Client::explain;
// docs/governance.md, "Which timeout wins").
#include <boost/json/value.hpp>

#include <wheelrpc/rpc/client.h>

#include "admin_core.h"

namespace wheelrpc::admin {
namespace json = boost::json;

namespace {

json::object candidate_json(const rpc::EffectiveSetting::Candidate& c) {
  json::object o;
  o["layer"] = rpc::to_string(c.layer);
  o["value"] = c.value;
  o["origin"] = c.origin.empty() ? json::value(nullptr) : json::value(c.origin);
  return o;
}

json::object setting_json(const rpc::EffectiveSetting& s) {
  json::object o = candidate_json(s.winner);
  o["name"] = s.name;
  json::array layers;
  for (const auto& c : s.layers) layers.push_back(candidate_json(c));
  o["layers"] = std::move(layers);
  return o;
}

}  // namespace

json::object AdminCore::effective_config_json(const std::string& method) const {
  json::object out;
  out["method"] = method;
  out["precedence"] =
      json::array{"forced override", "call", "runtime override", "IDL", "client default", "built-in default"};
  json::array clients;
  for (const auto& nc : clients_) {
    const auto e = nc.client->explain(method);
    json::object c;
    c["client"] = nc.name;
    c["rules_source"] = e.rules_source.empty() ? json::value(nullptr) : json::value(e.rules_source);
    c["rules_revision"] = e.rules_revision;
    c["rules_error"] = e.rules_error.empty() ? json::value(nullptr) : json::value(e.rules_error);
    c["idl_known"] = e.idl_known;
    json::array settings;
    for (const auto& s : e.settings) settings.push_back(setting_json(s));
    settings.push_back(setting_json(e.load_balance));
    c["settings"] = std::move(settings);
    clients.push_back(std::move(c));
  }
  out["clients"] = std::move(clients);
  return out;
}

}  // namespace wheelrpc::admin
