"""The release's byte-reproducible archive and its checksums file."""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import tarfile
from pathlib import Path

log = logging.getLogger(__name__)

SUMS = "SHA256SUMS"


def write_tar_gz(source: Path, archive: Path, arcroot: str) -> None:
    """Archive a directory as a byte-reproducible gzipped tar.

    Members are sorted, with mtime 0, root-owned, without owner names (USTAR format); the gzip header has
    no name or time.

    Args:
        source: The directory archived.
        archive: The ``.tar.gz`` file written.
        arcroot: The name of the archive's root directory.
    """
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        paths = sorted(source.rglob("*"), key=lambda p: p.relative_to(source).as_posix())
        for path in [source, *paths]:
            rel = path.relative_to(source).as_posix()
            info = tarfile.TarInfo(arcroot if rel == "." else f"{arcroot}/{rel}")
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    with open(archive, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buf.getvalue())


def sha256sums(root: Path) -> str:
    """List the checksums of every file under a directory, ``sha256sum -c`` format.

    Args:
        root: The directory; its ``SHA256SUMS`` is left out.

    Returns:
        One ``<sha256>  <relative path>`` line per file, sorted by path.
    """
    lines = []
    for path in sorted((p for p in root.rglob("*") if p.is_file() and p.name != SUMS),
                       key=lambda p: p.relative_to(root).as_posix()):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(root).as_posix()}")
    return "".join(line + "\n" for line in lines)
