// Built against an installed wheelrpc: schedules a timeout and checks it ran,
// then makes a transport connect (a token-generic operation whose work sits in
// the installed library) to a port that refuses it, and compresses and
// decompresses a payload with every algorithm. Linking proves that the
// modules' private dependencies (wheelrpc::common, zstd, lz4, zlib) are exported.
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/connector.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace asio = boost::asio;

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  std::atomic<bool> ran{false};
  timer.new_timeout([&] { ran = true; }, std::chrono::milliseconds(1));
  for (int i = 0; i < 10000 && !ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::puts(ran ? "consumer: timeout ran" : "consumer: timeout did not run");
  if (!ran) return 1;

  namespace transport = wheelrpc::transport;
  const std::string payload(10000, 'w');
  for (int v = 0; v < transport::kCompressionCount; ++v) {
    const auto c = static_cast<transport::Compression>(v);
    std::string wire;
    std::string back;
    transport::compress(c, payload, 0, wire);
    if (transport::decompress(c, wire, {}, back) || back != payload) {
      std::printf("consumer: %s did not round-trip\n", std::string(transport::to_string(c)).c_str());
      return 1;
    }
  }
  std::printf("consumer: %s round-trip\n", transport::CompressionSet::all().to_string().c_str());

  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  asio::ip::tcp::socket bound(io);  // bound, not listening: connects are refused
  bound.open(asio::ip::tcp::v4());
  bound.bind({asio::ip::make_address("127.0.0.1"), 0});
  auto f = wheelrpc::transport::async_connect(io.get_executor(), timer, bound.local_endpoint(), std::chrono::seconds(2),
                                              asio::use_future);
  bool refused = false;
  if (f.wait_for(std::chrono::seconds(10)) == std::future_status::ready) {
    try {
      f.get();
    } catch (const boost::system::system_error& e) {
      refused = e.code() == asio::error::connection_refused;
    }
  }
  guard.reset();
  io.stop();
  runner.join();
  std::puts(refused ? "consumer: connect refused, as expected" : "consumer: connect not refused");
  return refused ? 0 : 1;
}
