#include "message_codec.h"

#include <memory>

#include <google/protobuf/util/json_util.h>

namespace wheelrpc::wheelctl {

namespace gpb = google::protobuf;

MessageCodec::MessageCodec(const gpb::MethodDescriptor& method) : method_(method), factory_(method.file()->pool()) {}

std::optional<Failure> MessageCodec::request_bytes(const std::string& json, int n, std::string& out) {
  std::unique_ptr<gpb::Message> message(factory_.GetPrototype(method_.input_type())->New());
  gpb::util::JsonParseOptions options;
  const auto status = gpb::util::JsonStringToMessage(json, message.get(), options);
  if (!status.ok()) {
    return Failure{kExitUsage, "request #" + std::to_string(n) + " is not a valid " +
                                   method_.input_type()->full_name() + ": " + status.message().ToString()};
  }
  if (!message->SerializeToString(&out)) {
    return Failure{kExitUsage, "request #" + std::to_string(n) + " cannot be serialized"};
  }
  return std::nullopt;
}

std::optional<Failure> MessageCodec::reply_json(const std::string& bytes, int n, std::string& out) {
  std::unique_ptr<gpb::Message> message(factory_.GetPrototype(method_.output_type())->New());
  if (!message->ParseFromString(bytes)) {
    return Failure{kExitFailed,
                   "reply #" + std::to_string(n) + " is not a valid " + method_.output_type()->full_name()};
  }
  out.clear();
  gpb::util::JsonPrintOptions options;
  const auto status = gpb::util::MessageToJsonString(*message, &out, options);
  if (!status.ok()) return Failure{kExitFailed, "reply #" + std::to_string(n) + ": " + status.message().ToString()};
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
