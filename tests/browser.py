"""Run a page in headless Chromium (Debian's chromium) and collect what it posts back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
]


# WebRTC between two RTCPeerConnections of one page, over the loopback interface only.
WEBRTC_FLAGS = ["--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns"]


class DevTools:
    """The browser's DevTools protocol over ``--remote-debugging-pipe`` (no WebSocket needed).

    Messages are JSON, each ended by a NUL byte: the browser reads them on its fd 3 and
    writes on its fd 4. :meth:`send` waits for the command's reply.
    """

    def __init__(self) -> None:
        self.to_browser_r, self.to_browser_w = os.pipe()
        self.from_browser_r, self.from_browser_w = os.pipe()
        self.replies: dict[int, dict] = {}
        self.arrived = threading.Condition()
        self.next_id = 0

    def command(self, browser: list[str]) -> tuple[list[str], tuple[int, int]]:
        """The command line that starts ``browser`` with the pipe on its fds 3 and 4, and the fds to pass.

        A small Python launcher moves the two ends onto 3 and 4 (by way of free descriptors above
        4, so that neither move overwrites the other) and execs the browser.
        """
        fds = (self.to_browser_r, self.from_browser_w)
        launch = (
            "import fcntl, os, sys; "
            "a, b = (fcntl.fcntl(int(v), fcntl.F_DUPFD, 5) for v in sys.argv[1:3]); "
            "os.dup2(a, 3); os.dup2(b, 4); os.execv(sys.argv[3], sys.argv[3:])"
        )
        return [sys.executable, "-c", launch, str(fds[0]), str(fds[1]), *browser, "--remote-debugging-pipe"], fds

    def started(self) -> None:
        os.close(self.to_browser_r)
        os.close(self.from_browser_w)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self.from_browser_r, 65536):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self.arrived:
                        self.replies[message["id"]] = message
                        self.arrived.notify_all()

    def send(self, method: str, params: dict | None = None, *, session: str | None = None) -> dict:
        self.next_id += 1
        key = self.next_id
        message = {"id": key, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self.to_browser_w, json.dumps(message).encode() + b"\0")
        with self.arrived:
            if not self.arrived.wait_for(lambda: key in self.replies, timeout=30):
                raise AssertionError(f"DevTools: no reply to {method}")
            reply = self.replies.pop(key)
        if "error" in reply:
            raise AssertionError(f"DevTools: {method}: {reply['error']}")
        return reply.get("result", {})

    def close(self) -> None:
        for fd in (self.to_browser_w, self.from_browser_r):
            try:
                os.close(fd)
            except OSError:
                pass


def run_page(
    html: str,
    *,
    timeout_s: float = 300.0,
    flags: tuple[str, ...] = (),
    files: dict[str, bytes] | None = None,
    devtools: dict[str, Callable[[DevTools, bytes], object]] | None = None,
) -> dict[str, bytes]:
    """Serve ``html`` at ``/`` on localhost, open it, and return the bodies it POSTs, by path.

    ``files`` are served too, by path (e.g. ``{"/audio/0": samples}``), for
    data too big to inline in the page (a path ending in ``.html`` as a page).
    ``devtools`` maps a path to what to do over the DevTools protocol, given
    the POST's body, when the page POSTs there (the POST's reply waits for
    it), e.g. open another page in front of it.

    The page ends by POSTing to ``/done``; a POST to ``/error`` fails the run
    with its body as the message. ``timeout_s`` guards against a hung browser; it is no time the page
    must beat (a busy machine starts Chromium slowly), so it is minutes.
    """
    posted: dict[str, bytes] = {}
    finished = threading.Event()
    tools = DevTools() if devtools else None
    failed: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            extra = (files or {}).get(self.path)
            body = html.encode("utf-8") if extra is None else extra
            self.send_response(200)
            scripts = self.path.endswith((".js", ".mjs"))
            kind = (
                "text/html; charset=utf-8"
                if extra is None or self.path.endswith(".html")
                else "text/javascript; charset=utf-8"
                if scripts
                else "application/octet-stream"
            )
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            size = int(self.headers.get("Content-Length", 0))
            posted[self.path] = self.rfile.read(size)
            action = (devtools or {}).get(self.path)
            if action is not None and tools is not None:
                try:
                    action(tools, posted[self.path])
                except AssertionError as err:
                    failed.append(str(err))
                    finished.set()
            self.send_response(204)
            self.end_headers()
            if self.path in ("/done", "/error"):
                finished.set()

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a browser that hangs up early must not print a traceback into a test's captured stderr

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as profile:
        command = [CHROMIUM, *FLAGS, *flags, f"--user-data-dir={profile}", f"http://127.0.0.1:{server.server_port}/"]
        fds: tuple[int, ...] = ()
        if tools is not None:
            command, fds = tools.command(command)  # type: ignore[arg-type]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=fds)
        if tools is not None:
            tools.started()
        try:
            ok = finished.wait(timeout_s)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            server.shutdown()
            server.server_close()
            if tools is not None:
                tools.close()
    if failed:
        raise AssertionError(failed[0])
    if "/error" in posted:
        raise AssertionError("page failed: " + posted["/error"].decode("utf-8", "replace"))
    if not ok:
        raise AssertionError(f"page did not finish within {timeout_s} s (posted: {sorted(posted)})")
    return posted


# JavaScript helpers every test page can use.
POST_JS = """
const post = (path, body) => fetch(path, {method: 'POST', body});
window.onerror = (msg, src, line) => { post('/error', `${msg} at ${line}`); };
window.onunhandledrejection = (e) => { post('/error', String(e.reason && e.reason.stack || e.reason)); };
"""

# Two RTCPeerConnections of one page over the loopback interface (needs WEBRTC_FLAGS): send a
# MediaStream's audio through one, and get the other's remote stream (Opus, WebRTC's default).
LOOPBACK_JS = """
async function loopback(stream) {
  const pc1 = new RTCPeerConnection(), pc2 = new RTCPeerConnection();
  pc1.onicecandidate = (e) => e.candidate && pc2.addIceCandidate(e.candidate);
  pc2.onicecandidate = (e) => e.candidate && pc1.addIceCandidate(e.candidate);
  pc1.addTrack(stream.getAudioTracks()[0], stream);
  const arrived = new Promise((resolve) => { pc2.ontrack = (e) => resolve(e.streams[0]); });
  await pc1.setLocalDescription(await pc1.createOffer());
  await pc2.setRemoteDescription(pc1.localDescription);
  await pc2.setLocalDescription(await pc2.createAnswer());
  await pc1.setRemoteDescription(pc2.localDescription);
  return arrived;
}
"""
