"""A model server at a plain ``http://`` base URL (a local one: Ollama, llama.cpp, the
tests' loopback) is reached by a client that reads no CA certificates; an ``https://``
one keeps full verification; and a redirect from the plain server to ``https://`` meets a
TLS context that trusts no certificate at all (`heinzel.engine.models._checked_client`)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from heinzel.engine.models import resolve_model

from .conftest import DRAFT, User, outcome_after_report
from .test_cli_models import _created


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _tls(server: ThreadingHTTPServer, folder: Path) -> Path:
    """``server`` made a TLS server with a self-signed certificate; the certificate."""
    cert, key = _certificate(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return cert


def test_a_plain_http_provider_reads_no_ca_bundle(user: User) -> None:
    """``SSL_CERT_FILE`` names a file that is not there, which a client loading the CA
    bundle would fail to read: a wake over the loopback ``http://`` provider still drafts."""
    _created(user)
    user.serve(outcome_after_report(DRAFT))
    woke = user.hz(
        "heinzel", "wake", "notes-digest", "--json", SSL_CERT_FILE=str(user.tmp / "gone.pem")
    )
    assert woke.returncode == 0, woke.stderr
    assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout


def test_an_https_provider_verifies_its_certificate(user: User) -> None:
    """An ``https://`` provider whose certificate the trusted bundle does not hold is a TLS
    fault (HZE014); with its certificate as the bundle (``SSL_CERT_FILE``) the same wake
    drafts: the https client loads the bundle and checks the server against it."""
    _created(user)
    provider = user.serve(outcome_after_report(DRAFT))
    cert = _tls(provider.server, user.tmp)
    user.env["HZ_BASE_URL"] = provider.base_url.replace("http://", "https://")
    (user.tmp / "other").mkdir()
    other, _ = _certificate(user.tmp / "other")
    refused = user.hz("heinzel", "wake", "notes-digest", SSL_CERT_FILE=str(other))
    assert refused.returncode == 1 and "HZE014" in refused.stderr, refused.stderr
    assert provider.seen == []
    woke = user.hz("heinzel", "wake", "notes-digest", "--json", SSL_CERT_FILE=str(cert))
    assert woke.returncode == 0, woke.stderr
    assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout


class _Redirect(BaseHTTPRequestHandler):
    target: ClassVar[str] = ""

    def do_GET(self) -> None:
        self.send_response(307)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class _Seen(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("model", ["openai-chat:gpt-4o-mini", "anthropic:claude-sonnet-4-5"])
def test_a_redirect_to_https_reaches_no_tls_connection(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain-http client, made to follow a redirect to an ``https://`` server whose
    certificate is the very one ``SSL_CERT_FILE`` names, fails the handshake: its TLS
    context trusts no certificate, so no request reaches the https server."""
    secure = ThreadingHTTPServer(("127.0.0.1", 0), _Seen)
    cert = _tls(secure, tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    plain = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    _Redirect.target = f"https://127.0.0.1:{secure.server_port}/v1/models"
    servers = [secure, plain]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        base = f"http://127.0.0.1:{plain.server_port}/v1"
        chosen = resolve_model(model, base_url=base, api_key="sk-test")
        client = chosen.client._client  # type: ignore[attr-defined]  # the SDK's HTTP client

        async def follow() -> Any:
            return await client.get(f"{base}/models", follow_redirects=True)

        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
            asyncio.run(follow())
        assert _Seen.seen == []
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_an_unreadable_ca_bundle_is_a_coded_error(user: User) -> None:
    """``SSL_CERT_FILE`` names a file that is not there and the provider is ``https://``:
    the wake exits 1 with HZE023, its message and a hint (no traceback), the provider is
    never asked, and the same wake with the bundle readable drafts: nothing was lost."""
    _created(user)
    provider = user.serve(outcome_after_report(DRAFT))
    cert = _tls(provider.server, user.tmp)
    user.env["HZ_BASE_URL"] = provider.base_url.replace("http://", "https://")
    gone = user.tmp / "gone.pem"
    (spine,) = (user.home / "heinzel").glob("hz-*/session.jsonl")
    before = spine.read_bytes()
    refused = user.hz("heinzel", "wake", "notes-digest", SSL_CERT_FILE=str(gone))
    assert spine.read_bytes() == before  # no turn opened, nothing to resume
    assert refused.returncode == 1, refused.stderr
    assert "HZE023" in refused.stderr and str(gone) in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr
    assert provider.seen == []
    woke = user.hz("heinzel", "wake", "notes-digest", "--json", SSL_CERT_FILE=str(cert))
    assert woke.returncode == 0, woke.stderr
    assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
