// Every header protoc-gen-wheelrpc wrote for the golden inputs, compiled
// against the runtime: the stubs and both service bases instantiate, a
// method's policy is a constant, and keyword and clashing names are usable
// under their trailing-`_` C++ names.
#include "app/route.wheelrpc.h"
#include "echo.wheelrpc.h"
#include "helloworld.wheelrpc.h"
#include "keywords.wheelrpc.h"
#include "policies.wheelrpc.h"
#include "presence.wheelrpc.h"
#include "store.wheelrpc.h"
#include "two.wheelrpc.h"

namespace {

static_assert(policies::Tuned::Methods::All::policy.retries == 16);
static_assert(policies::Tuned::Methods::Some::policy.wait_for_ready == true);
static_assert(helloworld::Greeter::Methods::SayHello::path == "/helloworld.Greeter/SayHello");
static_assert(kw::Keywords::Methods::delete_::path == "/kw.Keywords/delete");
static_assert(kw::union_::Methods::new_::path == "/kw.union/new");
static_assert(::Echo::Methods::Say::path == "/Echo/Say");
static_assert(a::b::c::Store::Methods::Get::path == "/a.b.c.Store/Get");

// A coroutine service overriding one method, a callback service another.
class Greeter final : public helloworld::Greeter::Service {
 public:
  boost::asio::awaitable<helloworld::HelloReply> SayHello(wheelrpc::rpc::ServerContext&,
                                                          const helloworld::HelloRequest& request) override {
    helloworld::HelloReply reply;
    reply.set_message("hello " + request.name());
    co_return reply;
  }
};

class Keywords final : public kw::Keywords::CallbackService {
 public:
  void delete_(wheelrpc::rpc::ServerContext&, const kw::Item&,
               wheelrpc::rpc::TypedResponder<kw::Done> responder) override {
    kw::Done done;
    done.set_ok(true);
    responder.reply(std::move(done));
  }
};

}  // namespace

/// Instantiates the service bases of every generated service and a stub call
/// with each completion form the stubs take; never called.
void wheelrpc_generated_compile(wheelrpc::rpc::Client& client) {
  Greeter greeter;
  Keywords keywords;
  kw::union_::Service keyword_service;
  app::Router::Service router;
  ::Echo::CallbackService echo;
  two::First::Service first;
  two::Second::CallbackService second;
  presence::Profiles::Service profiles;
  a::b::c::Store::CallbackService store;
  policies::Tuned::Service tuned;
  (void)greeter, (void)keywords, (void)keyword_service, (void)router, (void)echo, (void)first, (void)second;
  (void)profiles, (void)store, (void)tuned;

  helloworld::Greeter::Stub stub(client);
  stub.async_SayHello(helloworld::HelloRequest{}, [](boost::system::error_code, helloworld::HelloReply) {});
  kw::Keywords::Stub(client).async_delete(kw::Item{}, wheelrpc::rpc::CallOptions{},
                                          [](boost::system::error_code, kw::Done) {});
}
