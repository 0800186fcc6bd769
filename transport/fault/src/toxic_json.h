#pragma once
// Toxics and counters as the control API's JSON (Toxiproxy's field names).

#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/fault/toxic.h>

namespace wheelrpc::fault::detail {

/// Parses a POST /toxics body into `out`. Returns "" on success, otherwise
/// what is wrong (unknown field, type or attribute; wrong JSON type; a value
/// out of range; malformed JSON). Never throws for bad input.
std::string parse_toxic(std::string_view body, Toxic& out);

/// {"name":..,"type":..,"stream":..,"toxicity":1,"attributes":{..},"applied":N}
boost::json::object to_json(const ToxicInfo& info);

/// The counters plus "up", "listen" and "upstream".
boost::json::object to_json(const ProxyStats& stats, const boost::asio::ip::tcp::endpoint& listen,
                            const boost::asio::ip::tcp::endpoint& upstream);

}  // namespace wheelrpc::fault::detail
