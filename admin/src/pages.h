#pragma once
/// The admin server's human-readable pages (private to the admin module).
///
/// Each page is one self-contained HTML document (inline CSS, JS and SVG; no
/// external resources, so it works offline) that fetches its JSON from the
/// same origin by a relative URL on load and then every second, and renders
/// it with DOM text nodes only. The sources are `admin/src/pages/*.html`; the
/// build embeds them (admin/src/pages_embed.cmake). Serve them with
/// `Content-Type: text/html; charset=utf-8`.
///
/// @par Thread Safety
/// The views refer to static storage: safe from any thread, valid forever.

#include <string_view>

namespace wheelrpc::admin::detail {

/// GET /status: process, server state, per-method tables for the server and
/// each client, the timer (lateness histogram, pending sparkline).
/// Fetches `status.json`.
std::string_view status_page() noexcept;

/// GET /connections: one row per connection and a count by side and state.
/// Fetches `connections.json`.
std::string_view connections_page() noexcept;

/// GET /timeouts: the recent timeouts, newest first. Fetches `timeouts.json`.
std::string_view timeouts_page() noexcept;

/// GET /config/effective?method=M: each call setting of M, every layer's
/// value and the winner. Fetches `effective.json` with the same query.
std::string_view config_page() noexcept;

/// A Content-Security-Policy header value to send with the pages: it allows
/// exactly what they use (their inline script and style, a data: favicon,
/// fetches from the same origin) and nothing else, so a page that started to
/// load something from elsewhere would break in the browser test, and an
/// injected script could not run. tests/admin/fixture_server.py sends the same.
std::string_view pages_content_security_policy() noexcept;

}  // namespace wheelrpc::admin::detail
