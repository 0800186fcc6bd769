#pragma once
/// H2Server: a minimal gRPC server on nghttp2's server session, for tests
/// that look at what a gRPC client puts on the wire (each header field with
/// its HPACK flags, the decoder's dynamic table). It serves one connection
/// at a time on a thread of its own, on 127.0.0.1 and a free port, and
/// answers every request with HTTP 200, the request's bytes as they came
/// (a gRPC message echoed) and `grpc-status: 0`.

#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wheelrpc::test {

/// One header field as the server's HPACK decoder gave it.
struct H2Field {
  std::string name;
  std::string value;
  bool never_indexed = false;  ///< sent as "literal never indexed" (NGHTTP2_NV_FLAG_NO_INDEX)
};

class H2Server {
 public:
  H2Server();
  ~H2Server();  ///< stops the thread and closes the connection
  H2Server(const H2Server&) = delete;
  H2Server& operator=(const H2Server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  /// The request HEADERS of every stream answered so far, in order of arrival.
  std::vector<std::vector<H2Field>> requests() const;
  /// The HPACK decoder's dynamic table size (bytes, RFC 7541 4.1), after the last request.
  std::size_t inflate_table_bytes() const;

 private:
  void run();

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: the destructor's write ends run()
  std::uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::vector<std::vector<H2Field>> requests_;
  std::size_t table_bytes_ = 0;
  std::thread thread_;
};

}  // namespace wheelrpc::test
