// Docs quote this file's lines verbatim: not reformatted.
// clang-format off
// greeter_callback_server: the same service in the callback form; the reply
// goes out later, from another thread.
//
//   greeter_callback_server [--port N]     (as greeter_server)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter.wheelrpc.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;

// [guide:greeter-callback]
class GreeterImpl : public helloworld::Greeter::CallbackService {
 public:
  explicit GreeterImpl(asio::thread_pool& workers) : workers_(workers) {}
  void SayHello(rpc::ServerContext&, const helloworld::HelloRequest& req,
                rpc::TypedResponder<helloworld::HelloReply> responder) override {
    asio::post(workers_, [name = req.name(), responder = std::move(responder)]() mutable {
      helloworld::HelloReply reply;
      reply.set_message("Hello, " + name + " (answered by a worker)");
      responder.reply(reply);  // once, from any thread; a dropped responder answers UNKNOWN
    });
  }

 private:
  asio::thread_pool& workers_;
};
// [guide:greeter-callback-end]

int main(int argc, char** argv) {
  unsigned short port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
  }
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  asio::thread_pool workers(2);
  GreeterImpl greeter(workers);
  rpc::Server server(io.get_executor(), timer);
  server.add_service(greeter);
  if (auto ec = server.listen({asio::ip::make_address("127.0.0.1"), port})) {
    std::fprintf(stderr, "cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(server.local_endpoint().port()));
  std::fflush(stdout);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) { server.stop(); });
  io.run();
  workers.join();
  return 0;
}
// clang-format on
