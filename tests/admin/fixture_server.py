#!/usr/bin/env python3
"""A stand-in for the admin HTTP server, for developing and testing the pages.

    fixture_server.py PORT_FILE [--pages DIR] [--fixtures DIR] [--max-seconds N]

Binds 127.0.0.1 on a free port, writes the port number to PORT_FILE (written
to a temporary name first, then renamed, so a reader never sees half of it)
and serves:

    /status, /connections, /timeouts   admin/src/pages/<name>.html
    /status.json, ...                  tests/admin/fixtures/<name>.json
    /metrics                           a few lines of Prometheus text
    /fail/status, ...                  the same pages, whose JSON (fetched
                                       relative to the page) answers HTTP 503:
                                       for looking at the error banner
    /flaky/status, ...                 the same pages, whose JSON answers 503
                                       the first time and the fixture after:
                                       the page must retry and recover
    /fixture/requests.json             how many times each path was asked for,
                                       e.g. {"/status.json": 4, ...}
    /layout-check?page=connections     a test-only harness: loads /layout/<page>
      [&cells=td.in-flight]            (the page, allowed in a same-origin frame)
      [&width=1280&height=900]         in a frame of that size, waits until the
                                       page has rendered its JSON, measures it
                                       and writes "LAYOUT OK: ..." or
                                       "LAYOUT FAIL: <details>" into its
                                       <pre id="layout-result">: fails when the
                                       page or its .scroll container scrolls
                                       sideways, or a `cells` element is not
                                       wholly in view

Each answer is read from disk, so edits to a page or a fixture show on the next
refresh. Pages go out with the Content-Security-Policy the C++ side offers.
Exits by itself after --max-seconds (default 600), so that a test which is
killed hard leaves nothing running. Python standard library only.
"""
import argparse
import collections
import http.server
import json
import os
import pathlib
import sys
import threading

HERE = pathlib.Path(__file__).resolve().parent
PAGES = ("status", "connections", "timeouts")
# Sent with every page, so the browser test fails if a page needs anything
# beyond itself and same-origin fetches. Kept equal to kContentSecurityPolicy
# in admin/src/pages.cc.in (admin_pages_browser compares them).
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                           "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                           "frame-ancestors 'none'")
# The same pages under /layout/, for the layout check's frame: only
# frame-ancestors differs.
FRAMED_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace("frame-ancestors 'none'",
                                                                 "frame-ancestors 'self'")
assert FRAMED_CONTENT_SECURITY_POLICY != CONTENT_SECURITY_POLICY
LAYOUT_CHECK_CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'unsafe-inline'; "
                                        "style-src 'unsafe-inline'; frame-src 'self'; base-uri 'none'; "
                                        "form-action 'none'; frame-ancestors 'none'")

# /layout-check: Chromium's --dump-dom runs scripts but shows no layout, so
# this page measures one in a frame and writes the verdict into its own DOM.
LAYOUT_CHECK_PAGE = b"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>layout check</title>
<style>
  body { margin: 0; }
  iframe { display: block; border: 0; }
</style>
</head>
<body>
<pre id="layout-result">LAYOUT PENDING</pre>
<iframe id="frame"></iframe>
<script>
'use strict';
const params = new URLSearchParams(location.search);
const page = params.get('page') || 'status';
const cells = params.get('cells') || '';
const width = Number(params.get('width') || 1280), height = Number(params.get('height') || 900);
const frame = document.getElementById('frame');
frame.style.width = `${width}px`;
frame.style.height = `${height}px`;
const report = text => { document.getElementById('layout-result').textContent = text; };

let tries = 0;
function measure() {
  const win = frame.contentWindow, doc = frame.contentDocument;
  const updated = doc && doc.getElementById('updated');
  if (!updated || !/^\\d{2}:\\d{2}:\\d{2}$/.test(updated.textContent)) {
    if (++tries > 250) report(`LAYOUT FAIL: /${page} never rendered its JSON`);
    else setTimeout(measure, 20);
    return;
  }
  const facts = [], problems = [];
  if (win.innerWidth !== width) problems.push(`the frame is ${win.innerWidth} px wide, not ${width} px`);
  const root = doc.documentElement;
  facts.push(`page ${root.scrollWidth}/${win.innerWidth} px`);
  if (root.scrollWidth > win.innerWidth) {
    problems.push(`the page is ${root.scrollWidth} px wide in a ${win.innerWidth} px window`);
  }
  doc.querySelectorAll('.scroll').forEach((box, i) => {
    facts.push(`.scroll[${i}] ${box.scrollWidth}/${box.clientWidth} px`);
    if (box.scrollWidth > box.clientWidth) {
      problems.push(`.scroll[${i}] scrolls sideways: ${box.scrollWidth} px of content in ${box.clientWidth} px`);
    }
  });
  if (cells) {
    // In view: inside the window and not clipped by a scrolling container.
    const found = [...doc.querySelectorAll(cells)];
    const hidden = found.map(cell => {
      const r = cell.getBoundingClientRect();
      const box = cell.closest('.scroll');
      const right = Math.min(win.innerWidth, box ? box.getBoundingClientRect().right : Infinity);
      return r.width > 0 && r.left >= 0 && r.right <= right + 0.5 ? null
        : `x ${Math.round(r.left)}..${Math.round(r.right)} px, visible up to ${Math.round(right)} px`;
    }).filter(Boolean);
    if (!found.length) problems.push(`no ${cells} on the page`);
    if (hidden.length) problems.push(`${hidden.length} of ${found.length} ${cells} out of view (first at ${hidden[0]})`);
    facts.push(`${found.length - hidden.length}/${found.length} ${cells} in view`);
  }
  report(`LAYOUT ${problems.length ? 'FAIL' : 'OK'}: /${page} at ${width}x${height}: ` +
         (problems.length ? problems : facts).join('; '));
}
frame.addEventListener('load', measure);
frame.src = `layout/${encodeURIComponent(page)}`;
</script>
</body>
</html>
"""


def make_handler(pages_dir, fixtures_dir):
    requests = collections.Counter()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "wheelrpc-fixture/1"

        def _send(self, code, content_type, body, csp=CONTENT_SECURITY_POLICY):
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            if content_type.startswith("text/html"):
                self.send_header("Content-Security-Policy", csp)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            with lock:
                requests[path] += 1
                times_asked = requests[path]
            name = path.strip("/")
            prefix, _, rest = name.partition("/")
            csp = CONTENT_SECURITY_POLICY
            if prefix in ("fail", "flaky", "layout") and rest in PAGES:
                name = rest  # the page itself; its JSON below
                if prefix == "layout":
                    csp = FRAMED_CONTENT_SECURITY_POLICY
            elif prefix == "layout" and rest.endswith(".json"):
                name = rest
            elif prefix == "flaky" and rest.endswith(".json"):
                name = rest if times_asked > 1 else "fail/" + rest
            if name in ("", "index.html"):
                self.send_response(302)
                self.send_header("Location", "/status")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif name in PAGES:
                # As admin/src/pages_embed.cmake does: the shared script in place.
                body = (pages_dir / f"{name}.html").read_bytes().replace(
                    b"// @include common.js\n", (pages_dir / "common.js").read_bytes(), 1).replace(
                    b"  /* @include common.css */\n", (pages_dir / "common.css").read_bytes(), 1)
                self._send(200, "text/html; charset=utf-8", body, csp)
            elif name == "layout-check":
                self._send(200, "text/html; charset=utf-8", LAYOUT_CHECK_PAGE,
                           LAYOUT_CHECK_CONTENT_SECURITY_POLICY)
            elif name.endswith(".json") and name[:-5] in PAGES:
                body = (fixtures_dir / name).read_bytes()
                self._send(200, "application/json", body)
            elif name == "fixture/requests.json":
                with lock:
                    body = json.dumps(dict(requests), sort_keys=True).encode()
                self._send(200, "application/json", body)
            elif name.startswith("fail/") and name.endswith(".json"):
                self._send(503, "text/plain; charset=utf-8", b"fixture: failing on purpose\n")
            elif name == "metrics":
                body = (b"# HELP wheelrpc_fixture_up The fixture server is up.\n"
                        b"# TYPE wheelrpc_fixture_up gauge\nwheelrpc_fixture_up 1\n")
                self._send(200, "text/plain; version=0.0.4; charset=utf-8", body)
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")

        do_HEAD = do_GET

        def log_message(self, fmt, *args):  # quiet unless asked
            if os.environ.get("FIXTURE_SERVER_VERBOSE"):
                sys.stderr.write("fixture_server: " + (fmt % args) + "\n")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port_file")
    parser.add_argument("--pages", type=pathlib.Path,
                        default=HERE.parent.parent / "admin" / "src" / "pages")
    parser.add_argument("--fixtures", type=pathlib.Path, default=HERE / "fixtures")
    parser.add_argument("--max-seconds", type=float, default=600)
    args = parser.parse_args()

    handler = make_handler(args.pages, args.fixtures)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    port = server.server_address[1]
    tmp = f"{args.port_file}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, args.port_file)

    # serve_forever in a thread; the main thread bounds the lifetime.
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    thread.join(args.max_seconds)
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
