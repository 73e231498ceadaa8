"""HTTPS servers: a certificate is verified as httpx verifies it, against what SSL_CERT_FILE names."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcp_sync import MCPHub
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
