"""Run a page in headless Chromium (Debian's chromium) and collect what it posts back."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
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


def run_page(
    html: str, *, timeout_s: float = 300.0, flags: tuple[str, ...] = (), files: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """Serve ``html`` at ``/`` on localhost, open it, and return the bodies it POSTs, by path.

    ``files`` are served too, by path (e.g. ``{"/audio/0": samples}``), for
    data too big to inline in the page.

    The page ends by POSTing to ``/done``; a POST to ``/error`` fails the run
    with its body as the message. ``timeout_s`` guards against a hung browser; it is no time the page
    must beat (a busy machine starts Chromium slowly), so it is minutes.
    """
    posted: dict[str, bytes] = {}
    finished = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            extra = (files or {}).get(self.path)
            body = html.encode("utf-8") if extra is None else extra
            self.send_response(200)
            kind = "text/html; charset=utf-8" if extra is None else "application/octet-stream"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            size = int(self.headers.get("Content-Length", 0))
            posted[self.path] = self.rfile.read(size)
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
        proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, *flags, f"--user-data-dir={profile}", f"http://127.0.0.1:{server.server_port}/"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
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
