#include "reflection_session.h"

#include <cstdint>
#include <deque>
#include <utility>

#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::services::detail {
namespace {

namespace pb = google::protobuf;
namespace v1 = ::grpc::reflection::v1;

void fail(v1::ServerReflectionResponse& response, rpc::StatusCode code, std::string message) {
  response.mutable_error_response()->set_error_code(static_cast<std::int32_t>(code));
  response.mutable_error_response()->set_error_message(std::move(message));
}

}  // namespace

ReflectionSession::ReflectionSession(DescriptorIndex& index, std::function<std::vector<std::string>()> list_services)
    : index_(index), list_services_(std::move(list_services)) {}

v1::ServerReflectionResponse ReflectionSession::answer(const v1::ServerReflectionRequest& request) {
  v1::ServerReflectionResponse response;
  const pb::DescriptorPool& pool = index_.pool();
  switch (request.message_request_case()) {
    case v1::ServerReflectionRequest::kFileByFilename: {
      const pb::FileDescriptor* file = pool.FindFileByName(request.file_by_filename());
      if (file == nullptr) {
        fail(response, rpc::StatusCode::not_found, "File not found.");
      } else {
        add_file(file, response);
      }
      break;
    }
    case v1::ServerReflectionRequest::kFileContainingSymbol: {
      const pb::FileDescriptor* file = pool.FindFileContainingSymbol(request.file_containing_symbol());
      if (file == nullptr) {
        fail(response, rpc::StatusCode::not_found, "Symbol not found.");
      } else {
        add_file(file, response);
      }
      break;
    }
    case v1::ServerReflectionRequest::kFileContainingExtension: {
      const v1::ExtensionRequest& extension = request.file_containing_extension();
      const pb::Descriptor* type = pool.FindMessageTypeByName(extension.containing_type());
      const pb::FieldDescriptor* field =
          type == nullptr ? nullptr : pool.FindExtensionByNumber(type, extension.extension_number());
      if (type == nullptr) {
        fail(response, rpc::StatusCode::not_found, "Type not found.");
      } else if (field == nullptr) {
        fail(response, rpc::StatusCode::not_found, "Extension not found.");
      } else {
        add_file(field->file(), response);
      }
      break;
    }
    case v1::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const pb::Descriptor* type = pool.FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        fail(response, rpc::StatusCode::not_found, "Type not found.");
        break;
      }
      std::vector<const pb::FieldDescriptor*> extensions;
      pool.FindAllExtensions(type, &extensions);
      v1::ExtensionNumberResponse* numbers = response.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(request.all_extension_numbers_of_type());
      for (const pb::FieldDescriptor* field : extensions) numbers->add_extension_number(field->number());
      break;
    }
    case v1::ServerReflectionRequest::kListServices: {
      v1::ListServiceResponse* list = response.mutable_list_services_response();
      for (std::string& name : list_services_()) list->add_service()->set_name(std::move(name));
      break;
    }
    case v1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      fail(response, rpc::StatusCode::unimplemented, "");
      break;
  }
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  return response;
}

void ReflectionSession::add_file(const pb::FileDescriptor* file, v1::ServerReflectionResponse& response) {
  v1::FileDescriptorResponse* files = response.mutable_file_descriptor_response();
  std::deque<const pb::FileDescriptor*> queue{file};
  bool first = true;
  while (!queue.empty()) {
    const pb::FileDescriptor* f = queue.front();
    queue.pop_front();
    // The file asked for goes every time; an import once per stream.
    if (sent_.insert(f->name()).second || first) {
      if (const std::string* bytes = index_.file_bytes(f->name())) files->add_file_descriptor_proto(*bytes);
    }
    first = false;
    for (int i = 0; i < f->dependency_count(); ++i) queue.push_back(f->dependency(i));
  }
}

}  // namespace wheelrpc::services::detail
