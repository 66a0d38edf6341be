"""A directory as an ObjectStore: each key a file below the root (a local copy of a bucket,
as `aws s3 sync s3://bucket DIR` makes one).

Objects are written to a temporary name and linked into place, so a new key appears whole or
not at all, and put_if_absent is atomic (the link fails on an existing name). Every method
raises objectlog errors only: ObjectExists, ObjectNotFound.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from objectlog.errors import InvalidRequest, ObjectExists, ObjectNotFound
from objectlog.stores.objects import ObjectInfo, ObjectStore

TEMPORARY = ".objectlog-tmp-"


class LocalObjectStore(ObjectStore):
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _create(self, key: str, body: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=TEMPORARY, dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(body)
            os.link(temporary, path)
        except FileExistsError:
            raise ObjectExists(f"{key} already exists") from None
        finally:
            os.unlink(temporary)

    def get(self, key: str) -> bytes:
        with self._opened(key) as source:
            return source.read()

    def get_range(self, key: str, start: int, length: int) -> bytes:
        with self._opened(key) as source:
            source.seek(start)
            return source.read(length)

    def get_tail(self, key: str, length: int) -> bytes:
        with self._opened(key) as source:
            source.seek(max(0, os.fstat(source.fileno()).st_size - length))
            return source.read()

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            with contextlib.suppress(FileNotFoundError):
                self._path(key).unlink()

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        found = []
        for directory, _, names in os.walk(self.root):
            for name in names:
                path = Path(directory, name)
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix) and not name.startswith(TEMPORARY):
                    stat = path.stat()
                    found.append(ObjectInfo(key, stat.st_size, int(stat.st_mtime * 1000)))
        yield from sorted(found, key=lambda info: info.key)

    def _path(self, key: str) -> Path:
        if not key or key.startswith("/") or ".." in key.split("/"):
            raise InvalidRequest(f"not an object key: {key!r}")
        return self.root / key

    @contextlib.contextmanager
    def _opened(self, key: str) -> Iterator[Any]:
        try:
            source = self._path(key).open("rb")
        except FileNotFoundError:
            raise ObjectNotFound(f"{key}: not found") from None
        with source:
            yield source
