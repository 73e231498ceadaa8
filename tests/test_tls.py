"""HTTPS servers, and the one TLS client context a process shares (mcp_sync._os.tls): certificates
verified as httpx verifies them, SSL_CERT_FILE honoured, the context built once for every connection."""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcp_sync import MCPHub
from mcp_sync._os import tls
from tests.support import HttpServer, http_config

LOOPBACK = ipaddress.ip_address("127.0.0.1")


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1, signed by its own key, and that key (PEM files in `folder`)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-sync test server")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(LOOPBACK)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "server.pem", folder / "server.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def https_url(certificate: tuple[Path, Path]) -> Iterator[str]:
    cert_file, key_file = certificate
    with HttpServer("--tls", str(cert_file), str(key_file)) as server:
        yield f"https://127.0.0.1:{server.port}/mcp"


@pytest.fixture
def trusted(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test server's certificate is the one SSL_CERT_FILE names."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return certificate[0]


def test_a_server_whose_certificate_ssl_cert_file_names_is_reached_over_https(
    https_url: str, trusted: Path
) -> None:
    with MCPHub([http_config("s", https_url)]) as hub:
        assert hub.servers["s"].state == "ready", hub.servers["s"].error
        assert hub.call_tool("mcp__s__add", {"a": 20, "b": 22}).text == "42"


def test_a_certificate_nobody_trusts_is_refused(https_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with MCPHub([http_config("s", https_url)]) as hub:
        assert hub.servers["s"].state == "failed"
        assert "CERTIFICATE_VERIFY_FAILED" in str(hub.servers["s"].error)


def test_every_connection_of_a_process_shares_one_context_until_the_certificate_setting_changes(
    https_url: str, trusted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    real_create = httpx2.create_ssl_context

    def counting(*args: object, **kwargs: object) -> object:
        context = real_create(*args, **kwargs)  # type: ignore[arg-type]
        built.append(context)
        return context

    monkeypatch.setattr(httpx2, "create_ssl_context", counting)
    monkeypatch.setattr(tls, "_built", None)
    entries = [http_config(name, https_url) for name in ("a", "b", "c")]
    for _ in range(2):
        with MCPHub(entries) as hub:
            assert [hub.servers[name].state for name in "abc"] == ["ready"] * 3
            assert hub.call_tool("mcp__c__add", {"a": 1, "b": 2}).text == "3"
    assert len(built) == 1, "three servers in two hubs, one context"

    copy = trusted.with_name("copy.pem")
    copy.write_bytes(trusted.read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(copy))
    with MCPHub(entries[:1]) as hub:
        assert hub.servers["a"].state == "ready", hub.servers["a"].error
    assert len(built) == 2, "built again for the new setting"
    monkeypatch.setenv("SSL_CERT_FILE", str(trusted.with_name("nobody.pem")))
    with MCPHub(entries[:1]) as hub:
        assert hub.servers["a"].state == "failed", "a file that is not there is read, not a context kept"


_FORK_WHILE_BUILDING = """
import os, sys, threading
from mcp_sync._os import tls

held, release = threading.Event(), threading.Event()

def building():
    with tls._building:  # another thread is building the context when the process forks
        held.set()
        release.wait(30)

threading.Thread(target=building, daemon=True).start()
held.wait(30)
pid = os.fork()
if pid == 0:
    tls.shared_ssl_context()
    os._exit(0)
release.set()
deadline = 30
import time
started = time.monotonic()
while time.monotonic() - started < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
sys.exit("the child hung on the lock it inherited")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_while_another_thread_builds_the_context_builds_its_own() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", _FORK_WHILE_BUILDING],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
