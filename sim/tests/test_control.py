"""Unit tests of the fakepod CLI's control client (fakepod/commands.py,
_post_unix and control): one HTTP/1.1 POST over the pod's Unix socket to a
server that speaks as the pod's own does (http.server, HTTP/1.1,
Content-Length), and a clear error for a socket that is gone or answers
something else."""
import http.server
import json
import os
import socketserver
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fakepod import commands, config  # noqa: E402


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def address_string(self):
        return "unix"

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/fakepod/bad":
            status, out = 400, {"error": {"message": "no such thing: %s" % req.get("what")}}
        else:
            status, out = 200, {"path": self.path, "echo": req, "big": "x" * 200000}
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class ControlTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.env = config.Env(self.dir, self.dir + "/nfs", "127.9", "accel")
        self.server = _Server(self.env.path("control.sock"), _Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_a_post_and_its_json_answer(self):
        out = commands.control(self.env, "capacity", {"what": "show", "zone": "z"}, timeout=30)
        self.assertEqual(out["path"], "/fakepod/capacity")
        self.assertEqual(out["echo"], {"what": "show", "zone": "z"})
        self.assertEqual(len(out["big"]), 200000)  # read whole, past one recv

    def test_an_error_answer_is_the_servers_message(self):
        with self.assertRaises(SystemExit):
            commands.control(self.env, "bad", {"what": "w"}, timeout=30)

    def test_a_socket_that_answers_no_http(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.env.path("control.sock"))
        raw = _Server(self.env.path("control.sock"), _Junk)
        threading.Thread(target=raw.serve_forever, daemon=True).start()
        self.server = raw
        with self.assertRaises(ValueError):
            commands._post_unix(self.env.path("control.sock"), "/fakepod/x", b"{}", 30)

    def test_no_server(self):
        with self.assertRaises(OSError):
            commands._post_unix(self.dir + "/missing.sock", "/fakepod/x", b"{}", 30)


class _Junk(socketserver.StreamRequestHandler):
    def handle(self):
        self.rfile.readline()
        self.wfile.write(b"hello\n")


if __name__ == "__main__":
    unittest.main()
