#pragma once
// Typed etcd requests that also hand over `why` (the detail of a failure,
// naming endpoint, phase and elapsed time), for the registry's state reports.
// Handlers run on the client's strand, exactly once.

#include <functional>
#include <string>
#include <utility>

#include <boost/system/error_code.hpp>

#include "etcd_client.h"
#include "etcd_json.h"

namespace wheelrpc::registry::detail {

template <class Result>
using OpHandler = std::function<void(boost::system::error_code, const std::string& why, Result)>;

/// POSTs `body` to `path` and decodes a 2xx answer with `decode`
/// (`void(std::string_view, Result&, error_code&, std::string&)`).
template <class Result, class Decoder>
void etcd_op(EtcdClient& client, std::string path, std::string body, Decoder decode, OpHandler<Result> handler) {
  client.request(std::move(path), std::move(body),
                 [decode, handler = std::move(handler)](boost::system::error_code ec, const std::string& why,
                                                        const std::string& answer) {
                   Result out{};
                   std::string detail = why;
                   if (!ec) decode(answer, out, ec, detail);
                   handler(ec, detail, std::move(out));
                 });
}

inline void op_put(EtcdClient& c, const std::string& key, const std::string& value, std::int64_t lease,
                   OpHandler<PutResult> h) {
  etcd_op<PutResult>(c, "/v3/kv/put", encode_put(key, value, lease), decode_put, std::move(h));
}
inline void op_range(EtcdClient& c, const std::string& prefix, OpHandler<RangeResult> h) {
  etcd_op<RangeResult>(c, "/v3/kv/range", encode_range_prefix(prefix), decode_range, std::move(h));
}
inline void op_delete(EtcdClient& c, const std::string& key, OpHandler<DeleteResult> h) {
  etcd_op<DeleteResult>(c, "/v3/kv/deleterange", encode_delete(key), decode_delete, std::move(h));
}
inline void op_grant(EtcdClient& c, std::chrono::seconds ttl, OpHandler<LeaseGrantResult> h) {
  etcd_op<LeaseGrantResult>(c, "/v3/lease/grant", encode_lease_grant(ttl), decode_lease_grant, std::move(h));
}
inline void op_keepalive(EtcdClient& c, std::int64_t id, OpHandler<KeepAliveResult> h) {
  etcd_op<KeepAliveResult>(c, "/v3/lease/keepalive", encode_lease_id(id), decode_keepalive, std::move(h));
}

}  // namespace wheelrpc::registry::detail
