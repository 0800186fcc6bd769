#include "support/h2_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>

#include <nghttp2/nghttp2.h>

namespace wheelrpc::test {

namespace {

/// One connection's session: requests in, echoes out.
class Connection {
 public:
  Connection(int fd, std::mutex& mu, std::vector<std::vector<H2Field>>& requests, std::size_t& table_bytes)
      : fd_(fd), mu_(mu), requests_(requests), table_bytes_(table_bytes) {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Connection::begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, &Connection::header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Connection::chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Connection::frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Connection::stream_close);
    nghttp2_session_server_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~Connection() { nghttp2_session_del(session_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Reads what came and writes what the session has; false once the connection is over.
  bool on_readable() {
    char buf[16384];
    const auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    if (nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(buf), static_cast<std::size_t>(n)) <
        0) {
      return false;
    }
    return flush();
  }
  bool flush() {
    for (;;) {
      const std::uint8_t* data = nullptr;
      const auto n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) break;
      std::size_t off = 0;
      while (off < static_cast<std::size_t>(n)) {
        const auto w = ::send(fd_, data + off, static_cast<std::size_t>(n) - off, MSG_NOSIGNAL);
        if (w <= 0) return false;
        off += static_cast<std::size_t>(w);
      }
    }
    return nghttp2_session_want_read(session_) || nghttp2_session_want_write(session_);
  }

 private:
  struct Stream {
    std::vector<H2Field> fields;
    std::string body;
    std::size_t sent = 0;
  };

  static Connection& self(void* p) { return *static_cast<Connection*>(p); }
  static int begin_headers(nghttp2_session*, const nghttp2_frame* f, void* p) {
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) self(p).streams_[f->hd.stream_id];
    return 0;
  }
  static int header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                    const std::uint8_t* value, std::size_t valuelen, std::uint8_t flags, void* p) {
    auto it = self(p).streams_.find(f->hd.stream_id);
    if (it == self(p).streams_.end() || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    it->second.fields.push_back(H2Field{std::string(reinterpret_cast<const char*>(name), namelen),
                                        std::string(reinterpret_cast<const char*>(value), valuelen),
                                        (flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0});
    return 0;
  }
  static int chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data, std::size_t len,
                   void* p) {
    auto it = self(p).streams_.find(stream_id);
    if (it != self(p).streams_.end()) it->second.body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int frame_recv(nghttp2_session* session, const nghttp2_frame* f, void* p) {
    if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      return 0;
    }
    Connection& c = self(p);
    auto it = c.streams_.find(f->hd.stream_id);
    if (it == c.streams_.end()) return 0;
    {
      std::lock_guard lock(c.mu_);
      c.requests_.push_back(it->second.fields);
      c.table_bytes_ = nghttp2_session_get_hd_inflate_dynamic_table_size(session);
    }
    const nghttp2_nv nv[] = {
        {const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(":status")),
         const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>("200")), 7, 3, NGHTTP2_NV_FLAG_NONE},
        {const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>("content-type")),
         const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>("application/grpc")), 12, 16,
         NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider prd{};
    prd.source.ptr = &it->second;
    prd.read_callback = &Connection::read;
    nghttp2_submit_response(session, f->hd.stream_id, nv, 2, &prd);
    return 0;
  }
  static ssize_t read(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                      std::uint32_t* flags, nghttp2_data_source* source, void*) {
    auto& s = *static_cast<Stream*>(source->ptr);
    const std::size_t n = std::min(length, s.body.size() - s.sent);
    std::memcpy(buf, s.body.data() + s.sent, n);
    s.sent += n;
    if (s.sent == s.body.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const nghttp2_nv trailer{const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>("grpc-status")),
                               const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>("0")), 11, 1,
                               NGHTTP2_NV_FLAG_NONE};
      nghttp2_submit_trailer(session, stream_id, &trailer, 1);
    }
    return static_cast<ssize_t>(n);
  }
  static int stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t, void* p) {
    self(p).streams_.erase(stream_id);
    return 0;
  }

  int fd_;
  std::mutex& mu_;
  std::vector<std::vector<H2Field>>& requests_;
  std::size_t& table_bytes_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Stream> streams_;
};

}  // namespace

H2Server::H2Server() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0) {
    return;  // port() stays 0: the test's connect fails
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { run(); });
}

H2Server::~H2Server() {
  if (wake_[1] >= 0) (void)::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

std::vector<std::vector<H2Field>> H2Server::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::size_t H2Server::inflate_table_bytes() const {
  std::lock_guard lock(mu_);
  return table_bytes_;
}

void H2Server::run() {
  for (;;) {
    pollfd l[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(l, 2, -1) < 0) continue;
    if (l[1].revents) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      Connection c(fd, mu_, requests_, table_bytes_);
      bool open = c.flush();
      while (open) {
        pollfd p[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) continue;
        if (p[1].revents) {
          ::close(fd);
          return;
        }
        open = c.on_readable();
      }
    }
    ::close(fd);
  }
}

}  // namespace wheelrpc::test
