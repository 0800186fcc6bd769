#include "client/new_call.h"

#include <algorithm>

#include <fmt/format.h>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/rpc/errc.h>

#include "client/client_context.h"
#include "wire/request_size.h"

namespace wheelrpc::rpc::detail {
namespace {

NewCall refused(boost::system::error_code ec, std::string error) { return NewCall{{}, ec, std::move(error)}; }

}  // namespace

NewCall make_call(ClientContext& ctx, MethodCells* cells, std::string& method, std::string& payload,
                  CallOptions& options) {
  if (cells && !cells->policy_seen.load(std::memory_order_relaxed)) [[unlikely]] {
    cells->policy_seen.store(true, std::memory_order_relaxed);
    ctx.remember_idl(method, options);
  }
  std::shared_ptr<const CallRules> rules;
  if (ctx.has_rules.load(std::memory_order_acquire)) [[unlikely]] {
    rules = ctx.rules.load();
    if (rules) rules->apply(method, options);
  }
  fill_defaults(options, ctx.options.call_defaults);
  if (auto problem = validate(options))
    return refused(errc::bad_request, *problem + ": call to '" + method + "' not sent");
  bool has_deadline = options.timeout != CallOptions::kNoDeadline;
  if (options.timeout->count() <= 0) {
    return refused(errc::timeout, fmt::format("timeout: the deadline of the call to '{}' had already passed ({} ms), "
                                              "not sent",
                                              method, options.timeout->count()));
  }
  const auto start = ctx.now();
  auto deadline = has_deadline ? start + *options.timeout : kNever;
  std::chrono::milliseconds budget = options.timeout;
  bool inherited = false;
  const auto context = current_deadline();
  if (options.inherit_deadline && context) {
    if (*context <= start) {
      return refused(errc::timeout, fmt::format("timeout: the deadline inherited from the request being served "
                                                "passed {} ms ago: call to '{}' not sent",
                                                ms_between(*context, start).count(), method));
    }
    if (*context < deadline) {
      deadline = *context;
      budget = std::chrono::ceil<std::chrono::milliseconds>(*context - start);
      has_deadline = true;
      inherited = true;
    }
  }
  // Checked without a lock: close() checks again (under the call's lock),
  // and the limit may be overshot by calls racing in at one instant.
  if (ctx.closed.load(std::memory_order_acquire)) {
    return refused(errc::cancelled, "client closed: call to '" + method + "' not sent");
  }
  auto& pending = ctx.metrics.pending;
  if (pending.fetch_add(1, std::memory_order_relaxed) >= ctx.options.max_pending_calls) {
    pending.fetch_sub(1, std::memory_order_relaxed);
    return refused(errc::too_many_pending, fmt::format("{} calls already pending (max_pending_calls): call to '{}' "
                                                       "not sent",
                                                       ctx.options.max_pending_calls, method));
  }

  // The routing tag: the caller's own baggage, else the tag of the request
  // being served (or a RoutingTagScope's), else the client's.
  const RoutingTag& tag_context = current_routing_tag();
  const RoutingTag* tag = tag_context.empty() ? &ctx.tag : &tag_context;
  RoutingTag own_tag;
  if (!options.attachments.empty()) [[unlikely]] {
    for (const auto& [key, value] : options.attachments) {
      if (key == kBaggageKey) {
        own_tag = RoutingTag::from_baggage(value);
        tag = &own_tag;
        break;
      }
    }
  }
  if (tag != &own_tag && !tag->empty()) [[unlikely]] {
    options.attachments.emplace_back(kBaggageKey, fmt::format("{}={}", kTagBaggageName, tag->view()));
  }

  // The trace: the caller's own traceparent, else the trace of the request
  // being served continued, else a new one.
  auto trace_context = current_trace();
  std::optional<TraceContext> trace;
  for (const auto& [key, value] : options.attachments) {
    if (key == kTraceparentKey) {
      trace = TraceContext::parse(value);
      if (!trace) trace = TraceContext::make_root();  // theirs is kept on the wire; ours names it locally
      break;
    }
  }
  bool send_trace = false;
  if (!trace) {
    trace = trace_context ? trace_context->child() : TraceContext::make_root();
    // Sent unless it alone would push the body over the limit (a payload
    // right at the limit still goes, without a traceparent on the wire).
    send_trace = fits_with_traceparent(ctx.options.channel.max_body, method, payload, options.attachments);
  }

  NewCall out;
  out.call = share_unpublished(*new Call);  // the count's first reference, without a locked add
  Call& c = *out.call;
  c.cells = cells;
  c.compression = options.compression;
  c.compression_level = static_cast<std::int8_t>(std::clamp(*options.compression_level, -128, 127));
  c.trace = *trace;
  c.send_trace = send_trace;
  if (send_trace) c.trace.write_traceparent(c.traceparent.data());
  c.trace_context = trace_context;
  if (!tag_context.empty()) [[unlikely]]
    c.tag_context = tag_context;
  if (!tag->empty()) [[unlikely]]
    c.tag = *tag;
  c.method = std::move(method);
  c.start = start;
  c.inherited = inherited;
  c.timeout_layer = options.timeout.layer();
  if (rules && c.timeout_layer >= Layer::runtime_override && c.timeout_layer != Layer::call) {
    c.timeout_origin = rules->timeout_origin(c.method);
  }
  c.context = context;
  c.wait_for_ready = options.wait_for_ready;
  c.plan.has_deadline = has_deadline;
  c.plan.idempotent = options.idempotent;
  c.plan.max_attempts = options.retries + 1;
  c.plan.attempt_timeout = options.attempt_timeout;
  c.plan.hedge_delay = options.hedge_delay;
  c.plan.budget = budget;
  c.plan.deadline = deadline;
  return out;
}

}  // namespace wheelrpc::rpc::detail
