#pragma once
// Builds a FaultProxy toxic in one expression: toxic("name", Stream::both, Blackhole{}).

#include <string>
#include <utility>

#include <wheelrpc/fault/toxic.h>

namespace wheelrpc::test {

inline fault::Toxic toxic(std::string name, fault::Stream stream, fault::ToxicAttributes attributes) {
  fault::Toxic t;
  t.name = std::move(name);
  t.stream = stream;
  t.attributes = std::move(attributes);
  return t;
}

}  // namespace wheelrpc::test
