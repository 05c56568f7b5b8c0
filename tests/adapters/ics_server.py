"""A loopback web server publishing one iCalendar file, as a calendar service's private
``.ics`` address does: ``ETag`` and ``Last-Modified``, a ``304`` to a conditional request,
every request counted (with its conditional headers)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODIFIED = "Fri, 30 Oct 2026 09:00:00 GMT"


@dataclass
class ICSServer:
    """Serves ``text`` at ``/cal.ics``; ``seen`` holds (status, If-None-Match) per request."""

    text: str
    seen: list[tuple[int, str | None]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/cal.ics"

    def start(self) -> ICSServer:
        published = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = published.text.encode("utf-8")
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                asked = self.headers.get("If-None-Match")
                status = 304 if asked == etag else 200
                published.seen.append((status, asked))
                self.send_response(status)
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", MODIFIED)
                if status == 200:
                    self.send_header("Content-Type", "text/calendar; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
