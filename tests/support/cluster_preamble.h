#pragma once
// The names the cluster tests share (tests/rpc/*_test.cc with
// support/cluster.h): one preamble instead of a copy at the top of each.
// Test-only, so the using-declarations live at namespace scope.

#include <chrono>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client.h>

#include "support/cluster.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::errc;
using wheelrpc::test::Cluster;
using wheelrpc::test::ManualTime;
using wheelrpc::test::Mode;
using wheelrpc::test::Outcome;
using wheelrpc::test::client_options;
using wheelrpc::test::contains;
using wheelrpc::test::done;
using wheelrpc::test::opts;
using wheelrpc::test::start;
using wheelrpc::test::wait;
using wheelrpc::test::wait_until;
