"""A submission's files, read as the grader must: regular files only, never through a
link, never past a size (a student chooses what is in the folder)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_SUBMISSION_BYTES = 64 * 2**20  # what a submission's files may weigh, in all


def regular_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The regular files under folder, found without following any link; and, in words,
    what else is there (links, devices, pipes): never read, never copied."""
    files, others = [], []
    for dirpath, dirnames, filenames in os.walk(folder):  # os.walk does not enter links
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            st = path.lstat()
            rel = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(st.st_mode):
                others.append(f"{rel!r} is a symbolic link: not followed")
            elif not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                others.append(f"{rel!r} is not a regular file: ignored")
            elif stat.S_ISREG(st.st_mode):
                files.append(path)
    return sorted(files), others


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a link, at most `limit` of them."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path.name} is larger than {limit // 2**20} MB")
    return data


def folder_files(folder: Path, limit: int = MAX_SUBMISSION_BYTES) -> dict[str, bytes]:
    """{path relative to folder: bytes} of the regular files under folder, at most `limit`
    bytes in all (OSError beyond)."""
    files, left = {}, limit
    for path in regular_files(folder)[0]:
        data = read_regular(path, left)
        left -= len(data)
        files[path.relative_to(folder).as_posix()] = data
    return files
