// Built against an installed wheelrpc: a Server shown by an AdminServer on
// a free loopback port, stopped again. Exits 0 when it listened and
// everything stops, so io.run() returns. Linking proves that wheelrpc::admin
// is installed and exported with everything it needs (Beast stays inside it).
#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <cstdio>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  boost::asio::io_context io;
  wheelrpc::rpc::Server server(io.get_executor(), timer);
  server.handle("echo",
                [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) { r.reply(std::move(req.payload)); });
  if (auto ec = server.listen({boost::asio::ip::make_address("127.0.0.1"), 0})) {
    std::fprintf(stderr, "listen: %s\n", ec.message().c_str());
    return 1;
  }
  wheelrpc::admin::AdminServer admin(io.get_executor(), timer);
  admin.add_server(server);
  if (auto ec = admin.listen(0)) {
    std::fprintf(stderr, "admin listen: %s\n", ec.message().c_str());
    return 1;
  }
  boost::asio::post(io, [&] {
    admin.stop();
    server.stop();
  });
  io.run();
  std::printf("admin consumer: ok (it listened on port %u)\n", static_cast<unsigned>(admin.local_endpoint().port()));
  return 0;
}
