"""A Dask cluster that takes orders from the grader only: mutual TLS.

A Dask scheduler runs whatever its clients submit on every worker, outside the sandbox.
Over plain TCP it takes any client: whoever can reach its address (a hub account on the
grading machine, any host of its network) could rewrite the grading code on the workers
before the instructor grades, and forge every grade (round 4 of the attacks). So
`course grade` talks to a scheduler only over TLS, where the scheduler, every worker and
the grader each show a certificate signed by the cluster's own authority, made by
`course cluster-certs DIR`:

- `ca.pem`: the authority's certificate (its private key is thrown away once it has
  signed: nobody can sign another member);
- `cluster.pem` and `cluster-key.pem` (mode 0600): the members' certificate and key, for
  `dask scheduler`, `dask worker` and `course grade --tls DIR` alike. Keep the folder where
  only the instructor and the cluster's machines can read it.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

CA, CERT, KEY = "ca.pem", "cluster.pem", "cluster-key.pem"
VALID_DAYS = 400  # a school year and its resits


class ClusterError(ValueError):
    """`course grade` will not use this scheduler: the reason, in words."""


@dataclass(frozen=True)
class Scheduler:
    """Where `course grade --scheduler` sends its tasks, and the cluster's certificates."""

    address: str
    tls: Path | None = None

    def flags(self) -> list[str]:
        """The options of `course grade` that name this scheduler."""
        if self.tls is None:
            return ["--scheduler", self.address, "--insecure-scheduler"]
        return ["--scheduler", self.address, "--tls", str(self.tls)]

    def client(self, timeout: str = "20s"):
        from distributed import Client

        return Client(
            self.address,
            timeout=timeout,
            security=security(self.tls) if self.tls is not None else None,
        )


def make_certificates(folder: Path) -> list[Path]:
    """Write the cluster's authority and member certificates into folder (which must not
    hold them already: refusing is better than replacing a running cluster's keys)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    paths = [folder / CA, folder / CERT, folder / KEY]
    existing = [p.name for p in paths if p.exists()]
    if existing:
        raise ClusterError(
            f"{folder} holds {', '.join(existing)} already: not replaced (give a new folder)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    def builder(subject: str, issuer: str, public_key) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(name(subject))
            .issuer_name(name(issuer))
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        )

    usage = dict.fromkeys(
        ["content_commitment", "key_encipherment", "data_encipherment", "key_agreement"]
        + ["encipher_only", "decipher_only"],
        False,
    )
    authority = "Everything Leaks grading cluster authority"
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        builder(authority, authority, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, **usage),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    member = (
        builder("Everything Leaks grading cluster member", authority, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False, **usage),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    _write(folder / CA, ca.public_bytes(pem), 0o644)
    _write(folder / CERT, member.public_bytes(pem), 0o644)
    private = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(folder / KEY, private, 0o600)
    return paths


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def tls_files(folder: Path) -> dict[str, str]:
    """{ca, cert, key}: the paths of the certificates in folder (ClusterError if missing)."""
    folder = Path(folder)
    missing = [n for n in (CA, CERT, KEY) if not (folder / n).is_file()]
    if missing:
        raise ClusterError(
            f"{folder} has no {', '.join(missing)}: make them with `course cluster-certs {folder}`"
        )
    return {"ca": str(folder / CA), "cert": str(folder / CERT), "key": str(folder / KEY)}


def dask_options(folder: Path) -> list[str]:
    """The options of `dask scheduler` and `dask worker` for this cluster's TLS."""
    files = tls_files(folder)
    return ["--tls-ca-file", files["ca"], "--tls-cert", files["cert"], "--tls-key", files["key"]]


def security(folder: Path):
    """distributed's Security for a member of the cluster (the grader's client)."""
    from distributed.security import Security

    files = tls_files(folder)
    return Security(
        tls_ca_file=files["ca"],
        tls_client_cert=files["cert"],
        tls_client_key=files["key"],
        tls_scheduler_cert=files["cert"],
        tls_scheduler_key=files["key"],
        tls_worker_cert=files["cert"],
        tls_worker_key=files["key"],
        require_encryption=True,
    )


def checked(address: str, tls: Path | None = None, insecure: bool = False) -> Scheduler:
    """The scheduler `course grade` may use; ClusterError (saying why) otherwise."""
    scheme = urlparse(address).scheme if "://" in address else "tcp"
    if scheme == "tls":
        if tls is None:
            raise ClusterError(
                "a TLS scheduler needs the cluster's certificates: --tls DIR (made by "
                "`course cluster-certs DIR`)"
            )
        tls_files(tls)
        return Scheduler(address, Path(tls))
    if insecure:
        return Scheduler(address, None)
    raise ClusterError(
        f"{address} is not a TLS address: a Dask scheduler over {scheme} takes any client, "
        "and a client runs code on every worker, outside the sandbox (it could forge every "
        "grade). Start the cluster with TLS (`course cluster-certs DIR` says how) and pass "
        "tls://HOST:PORT --tls DIR, or --insecure-scheduler for a scheduler nobody else "
        "can reach"
    )
