"""TLS for the admission webhook: a mounted certificate, or one Phalanx makes and shares.

Mounted (`--cert-dir`, e.g. cert-manager's Secret): tls.crt/tls.key are read and re-read
when they change on disk, so rotation needs no restart.

Self-managed (no cert dir): one CA and serving certificate live in a Secret that every
replica shares (the first replica creates it; later ones read it), and the CA bundle is
patched into the webhook configurations so the API server trusts the serving cert. The
pair is renewed when less than a third of its lifetime is left.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from phalanx.api.base import ObjectMeta
from phalanx.cluster.client import AlreadyExists, Client, Conflict, NotFound
from phalanx.cluster.retry import update_with_retry

from .kinds import MutatingWebhookConfiguration, Secret, ValidatingWebhookConfiguration

log = logging.getLogger("phalanx.certs")

CERT_FILE, KEY_FILE, CA_FILE = "tls.crt", "tls.key", "ca.crt"
VALIDITY = dt.timedelta(days=365)


@dataclass(frozen=True, slots=True)
class CertBundle:
    """PEM-encoded CA certificate, serving certificate and its private key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def not_after(self) -> dt.datetime:
        return x509.load_pem_x509_certificate(self.cert_pem).not_valid_after_utc

    def dns_names(self) -> list[str]:
        cert = x509.load_pem_x509_certificate(self.cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        return san.value.get_values_for_type(x509.DNSName)

    def needs_renewal(self, now: dt.datetime, dns_names: list[str]) -> bool:
        cert = x509.load_pem_x509_certificate(self.cert_pem)
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        left = cert.not_valid_after_utc - now
        return left < lifetime / 3 or sorted(self.dns_names()) != sorted(dns_names)

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in ((CA_FILE, self.ca_pem), (CERT_FILE, self.cert_pem),
                           (KEY_FILE, self.key_pem)):
            path = directory / name
            path.write_bytes(data)
            if name == KEY_FILE:
                path.chmod(0o600)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def generate_bundle(dns_names: list[str], now: dt.datetime,
                    validity: dt.timedelta = VALIDITY) -> CertBundle:
    """A fresh self-signed CA and a serving certificate for `dns_names` (ECDSA P-256)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "phalanx-webhook-ca")])
    start = now - dt.timedelta(minutes=5)  # tolerate small clock skew
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(now + validity)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return CertBundle(ca.public_bytes(pem), cert.public_bytes(pem), _key_pem(key))


def service_dns_names(service: str, namespace: str) -> list[str]:
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local",
            f"{service}.{namespace}", service]


class ReloadingContext:
    """A server SSLContext that picks up new files in `directory` (checked on demand)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._stamp: tuple[float, float] | None = None
        self.reload_if_changed()

    def _files(self) -> tuple[Path, Path]:
        return self.directory / CERT_FILE, self.directory / KEY_FILE

    def reload_if_changed(self) -> bool:
        cert, key = self._files()
        if not cert.is_file() or not key.is_file():
            raise FileNotFoundError(f"webhook certificate: {cert} and {key} are required")
        stamp = (cert.stat().st_mtime, key.stat().st_mtime)
        if stamp == self._stamp:
            return False
        # New handshakes use the new pair; open connections keep theirs.
        self.context.load_cert_chain(cert, key)
        self._stamp = stamp
        log.info("loaded webhook certificate from %s", self.directory)
        return True


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bundle_from_secret(secret: Secret) -> CertBundle | None:
    try:
        return CertBundle(base64.b64decode(secret.data[CA_FILE]),
                          base64.b64decode(secret.data[CERT_FILE]),
                          base64.b64decode(secret.data[KEY_FILE]))
    except (KeyError, ValueError):
        return None


async def ensure_shared_bundle(
    client: Client, *, secret_name: str, namespace: str, dns_names: list[str]
) -> CertBundle:
    """The replicas' common CA + serving cert, created or renewed in a Secret."""
    now = client.clock.now_dt()
    for _ in range(5):
        try:
            secret = await client.get(Secret, secret_name, namespace)
        except NotFound:
            bundle = generate_bundle(dns_names, now)
            fresh = Secret(metadata=ObjectMeta(name=secret_name, namespace=namespace),
                           type="kubernetes.io/tls",
                           data={CA_FILE: _b64(bundle.ca_pem), CERT_FILE: _b64(bundle.cert_pem),
                                 KEY_FILE: _b64(bundle.key_pem)})
            try:
                await client.create(fresh)
                log.info("created webhook certificate secret %s/%s", namespace, secret_name)
                return bundle
            except AlreadyExists:
                continue  # another replica won the race: use its bundle
        bundle = _bundle_from_secret(secret)
        if bundle is not None and not bundle.needs_renewal(now, dns_names):
            return bundle
        bundle = generate_bundle(dns_names, now)
        secret.data = {CA_FILE: _b64(bundle.ca_pem), CERT_FILE: _b64(bundle.cert_pem),
                       KEY_FILE: _b64(bundle.key_pem)}
        try:
            await client.update(secret, returning=False)
            log.info("renewed webhook certificate secret %s/%s", namespace, secret_name)
            return bundle
        except Conflict:
            continue
    raise Conflict(f"could not settle webhook certificate secret {namespace}/{secret_name}")


async def patch_ca_bundle(client: Client, ca_pem: bytes, *, mutating: str | None,
                          validating: str | None) -> int:
    """Set clientConfig.caBundle on every webhook of the named configurations.

    Returns how many configurations changed. Missing configurations are skipped (the
    operator may run before they are installed; the next resync patches them)."""
    wanted = _b64(ca_pem)
    changed = 0
    targets: list[tuple[type[MutatingWebhookConfiguration | ValidatingWebhookConfiguration],
                        str | None]] = [(MutatingWebhookConfiguration, mutating),
                                        (ValidatingWebhookConfiguration, validating)]
    for kind, name in targets:
        if not name:
            continue

        def set_bundle(obj: MutatingWebhookConfiguration | ValidatingWebhookConfiguration
                       ) -> bool:
            dirty = False
            for hook in obj.webhooks:
                cfg = hook.setdefault("clientConfig", {})
                if cfg.get("caBundle") != wanted:
                    cfg["caBundle"] = wanted
                    dirty = True
            return dirty

        try:
            before = await client.get(kind, name)
            if not set_bundle(before.copy_deep()):
                continue
            await update_with_retry(client, kind, name, None, set_bundle)  # type: ignore[arg-type]
            changed += 1
            log.info("patched CA bundle into %s %s", kind.KIND, name)
        except NotFound:
            log.warning("%s %s not found; CA bundle not patched yet", kind.KIND, name)
    return changed


def scratch_dir() -> Path:
    """A private directory for self-managed certificate files."""
    return Path(tempfile.mkdtemp(prefix="phalanx-webhook-", dir=os.environ.get("TMPDIR")))
