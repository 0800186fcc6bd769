#include "support/h2_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nghttp2/nghttp2.h>

namespace wheelrpc::test {

namespace {

std::optional<std::string> find_in(const H2Headers& h, std::string_view name) {
  for (const auto& [k, v] : h) {
    if (k == name) return v;
  }
  return std::nullopt;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> H2Stream::header(std::string_view name) const {
  if (auto v = find_in(headers, name)) return v;
  return find_in(trailers, name);
}

std::optional<std::string> H2Stream::trailer(std::string_view name) const { return find_in(trailers, name); }

int H2Stream::grpc_status() const {
  const auto v = header("grpc-status");
  return v ? std::stoi(*v) : -1;
}

std::string H2Stream::grpc_message() const {
  const std::string v = header("grpc-message").value_or("");
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

std::vector<std::string> H2Stream::messages() const {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos + 5 <= data.size()) {
    const auto b = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(data[pos + k])); };
    const std::uint32_t n = b(1) << 24 | b(2) << 16 | b(3) << 8 | b(4);
    if (pos + 5 + n > data.size()) break;
    out.push_back(data.substr(pos + 5, n));
    pos += 5 + n;
  }
  return out;
}

std::string grpc_frame(std::string_view message, bool compressed) {
  const auto n = static_cast<std::uint32_t>(message.size());
  std::string out;
  out.push_back(compressed ? '\1' : '\0');
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16 & 0xff));
  out.push_back(static_cast<char>(n >> 8 & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(message);
  return out;
}

H2Headers grpc_request_headers(std::string_view path, const H2Headers& extra) {
  H2Headers h{{":method", "POST"},
              {":scheme", "http"},
              {":authority", "127.0.0.1"},
              {":path", std::string(path)},
              {"content-type", "application/grpc"},
              {"te", "trailers"}};
  h.insert(h.end(), extra.begin(), extra.end());
  return h;
}

struct H2Client::Callbacks {
  static H2Client& self(void* p) { return *static_cast<H2Client*>(p); }
  static int header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                    const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* p) {
    if (f->hd.type != NGHTTP2_HEADERS) return 0;
    auto& s = self(p).streams_[f->hd.stream_id];
    auto& into = f->headers.cat == NGHTTP2_HCAT_HEADERS ? s.trailers : s.headers;
    into.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                      std::string(reinterpret_cast<const char*>(value), valuelen));
    return 0;
  }
  static int chunk(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
                   void* p) {
    self(p).streams_[id].data.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int frame_recv(nghttp2_session*, const nghttp2_frame* f, void* p) {
    auto& c = self(p);
    switch (f->hd.type) {
      case NGHTTP2_GOAWAY:
        c.goaways_.push_back(
            H2Goaway{f->goaway.last_stream_id, f->goaway.error_code,
                     std::string(reinterpret_cast<const char*>(f->goaway.opaque_data), f->goaway.opaque_data_len)});
        break;
      case NGHTTP2_RST_STREAM:
        c.streams_[f->hd.stream_id].reset = true;
        c.streams_[f->hd.stream_id].reset_code = f->rst_stream.error_code;
        break;
      case NGHTTP2_PING:
        if ((f->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
          ++c.ping_acks_;
        } else {
          c.server_pings_.emplace_back(reinterpret_cast<const char*>(f->ping.opaque_data), 8);
        }
        break;
      default: break;
    }
    return 0;
  }
  static int stream_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* p) {
    auto& s = self(p).streams_[id];
    s.closed = true;
    s.close_code = code;
    return 0;
  }
  static ssize_t read(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                      nghttp2_data_source*, void* p) {
    auto& o = self(p).out_[id];
    const std::size_t n = std::min(length, o.bytes.size() - o.pos);
    std::memcpy(buf, o.bytes.data() + o.pos, n);
    o.pos += n;
    if (o.pos == o.bytes.size() && o.end) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    }
    return n == 0 ? ssize_t{NGHTTP2_ERR_DEFERRED} : static_cast<ssize_t>(n);
  }
};

H2Client::H2Client(std::uint16_t port, H2ClientOptions options) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return;
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{5, 0};  // a server that stopped reading cannot block the test for good
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Callbacks::header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Callbacks::chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Callbacks::stream_close);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  if (!options.auto_window_update) nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options.stream_window},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  if (options.connection_window > 65535) {
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<std::int32_t>(options.connection_window));
  }
  flush();
}

H2Client::~H2Client() {
  if (session_) nghttp2_session_del(session_);
  if (fd_ >= 0) ::close(fd_);
}

std::int32_t H2Client::request(const H2Headers& headers, std::string body, bool end_stream) {
  std::vector<nghttp2_nv> nv;
  for (const auto& [k, v] : headers) {
    nv.push_back(nghttp2_nv{const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(k.data())),
                            const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(v.data())), k.size(),
                            v.size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider prd{};
  prd.read_callback = &Callbacks::read;
  const std::int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), &prd, nullptr);
  if (id > 0) {
    auto& o = out_[id];
    o.bytes = std::move(body);
    o.end = end_stream;
    streams_[id];
  }
  flush();
  return id;
}

std::int32_t H2Client::grpc_call(std::string_view path, std::string_view message, const H2Headers& extra) {
  return request(grpc_request_headers(path, extra), grpc_frame(message), true);
}

void H2Client::send(std::int32_t stream_id, std::string_view bytes, bool end_stream) {
  auto& o = out_[stream_id];
  o.bytes.append(bytes);
  o.end = o.end || end_stream;
  nghttp2_session_resume_data(session_, stream_id);
  flush();
}

void H2Client::reset(std::int32_t stream_id, std::uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
  flush();
}

void H2Client::ping() {
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
  flush();
}

void H2Client::consume(std::int32_t stream_id, std::size_t bytes) {
  nghttp2_session_consume(session_, stream_id, bytes);
  flush();
}

void H2Client::write_raw(std::string_view bytes) {
  flush();
  std::size_t off = 0;
  while (fd_ >= 0 && off < bytes.size()) {
    const auto n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      eof_ = true;
      return;
    }
    off += static_cast<std::size_t>(n);
  }
}

void H2Client::flush() {
  if (fd_ < 0 || eof_ || session_error_ != 0) return;
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      session_error_ = static_cast<int>(n);
      return;
    }
    if (n == 0) return;
    std::size_t off = 0;
    while (off < static_cast<std::size_t>(n)) {
      const auto w = ::send(fd_, data + off, static_cast<std::size_t>(n) - off, MSG_NOSIGNAL);
      if (w <= 0) {
        eof_ = true;
        return;
      }
      off += static_cast<std::size_t>(w);
    }
  }
}

void H2Client::read_some(std::chrono::milliseconds limit) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return;
  char buf[16384];
  const auto n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    eof_ = true;
    return;
  }
  if (n < 0 || session_error_ != 0) return;
  const auto rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(buf), static_cast<std::size_t>(n));
  if (rv < 0) session_error_ = static_cast<int>(rv);
}

bool H2Client::wait(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    flush();
    if (done()) return true;
    if (fd_ < 0 || eof_) return done();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return done();
    read_some(std::min(left, std::chrono::milliseconds(50)));
  }
}

bool H2Client::wait_closed(std::int32_t stream_id, std::chrono::milliseconds limit) {
  return wait([&] { return streams_[stream_id].closed; }, limit);
}

bool H2Client::wait_eof(std::chrono::milliseconds limit) {
  return wait([&] { return eof_; }, limit);
}

}  // namespace wheelrpc::test
