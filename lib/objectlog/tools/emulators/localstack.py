"""LocalStack (community edition) as a second, independent AWS emulator for the suite, run as a
plain Python process: these machines have no Docker engine (docs/deploy.md, section 6).

Why each step is here:

- **A virtualenv of its own** (default ``.venv-localstack`` in the checkout): localstack-core
  pins its own boto3/botocore versions, which would constrain the project's. Every one of its
  116 distributions is pinned in ``localstack-requirements.txt`` because newer releases of its
  loosely bounded dependencies break it (cbor2 6, psutil 7.2). A stamp file in the virtualenv
  holds the interpreter and that list's hash: a second run with the same ones installs nothing.
- **Python 3.11**: localstack-core 4.9.2 runs on it (4.10 to 4.13 were found to crash in
  DynamoDB on 3.11); it is also the interpreter the project itself needs.
- **A pre-filled FILESYSTEM_ROOT**: at its first DynamoDB request LocalStack installs Java 21
  (from api.adoptium.net), DynamoDB Local (from CloudFront) and a Java agent (from GitHub), none
  of which is reachable here. Its installers look in ``<root>/var/lib/localstack/lib/<name>/
  <version>`` for a marker file and install nothing when it is there
  (``localstack.packages.api.PackageInstaller.get_installed_dir``), so we put there:
  ``java/21`` -> the installed JDK (17; DynamoDB Local 3.x needs 17+), ``dynamodb-local/2/`` ->
  the npm package's DynamoDB Local (objectlog.tools.emulators.dynamodb_local), and its
  ``ddb-local-loader-0.1.jar`` -> an agent that does nothing (LocalStack's patches the
  20-GSI limit, which objectlog does not approach). Before starting, LocalStack's installers
  are asked whether they see them (check_prefill), so a version that looks elsewhere fails here
  with the path instead of at the first request with a download error.
- **A certificate made with openssl** (``CUSTOM_SSL_CERT_PATH``): LocalStack makes its own with
  ``X509.add_extensions``, which pyOpenSSL 26 removed.
- **Readiness**: the log's ``Ready.`` line and ``/_localstack/health``; the services load
  eagerly, so DynamoDB Local's JVM is up before the first test asks for a table.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from objectlog.tools.emulators.dynamodb_local import cache_dir
from objectlog.tools.emulators.dynamodb_local import install as install_dynamodb_local
from objectlog.tools.emulators.processes import (
    Emulator,
    EmulatorError,
    ManagedProcess,
    answers_http,
    free_port,
)

LOCALSTACK_VERSION = "4.9.2"
PYTHON = "python3.11"
REQUIREMENTS = Path(__file__).with_name("localstack-requirements.txt")
DEFAULT_VENV = Path(".venv-localstack")  # in the checkout; OBJECTLOG_LOCALSTACK_VENV elsewhere
ENV_VENV = "OBJECTLOG_LOCALSTACK_VENV"
STAMP = ".objectlog-installed"
SERVICES = "s3,dynamodb,sts,iam,lambda,apigateway,events,logs,cloudwatch,kms"
START_TIMEOUT_S = 120.0
HEALTH_PATH = "/_localstack/health"
# Where LocalStack's own installers look (paths below FILESYSTEM_ROOT, see the docstring).
LIBS = Path("var/lib/localstack/lib")
JAVA_DIR = LIBS / "java" / "21"
DYNAMODB_DIR = LIBS / "dynamodb-local" / "2"
AGENT_JAR = "ddb-local-loader-0.1.jar"
AGENT_SOURCE = """\
public class ObjectlogNoopAgent {
    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
"""


def require(tool: str, what: str) -> str:
    """The tool's path on PATH, or an EmulatorError saying what to install."""
    found = shutil.which(tool)
    if found is None:
        raise EmulatorError(f"LocalStack needs {tool} on PATH: install {what}")
    return found


def _stamp_text(python: str) -> str:
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True
    ).stdout.strip()
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    return f"localstack-core {LOCALSTACK_VERSION}\npython {version}\nrequirements {digest}\n"


def install(venv: Path = DEFAULT_VENV) -> Path:
    """The virtualenv's python with LocalStack installed, installing it unless the stamp says
    this interpreter and requirements list are already there."""
    python = require(PYTHON, "Python 3.11 (Debian: apt-get install python3.11; or pyenv)")
    stamp = venv / STAMP
    wanted = _stamp_text(python)
    if stamp.is_file() and stamp.read_text() == wanted:
        return venv / "bin" / "python"
    print(f"objectlog: installing LocalStack {LOCALSTACK_VERSION} into {venv}", file=sys.stderr)
    started = time.monotonic()
    _run([python, "-m", "venv", "--clear", str(venv)], "creating the virtualenv")
    (venv / ".gitignore").write_text("*\n")  # the virtualenv ignores itself
    _run([*_installer(venv), "--no-deps", "-r", str(REQUIREMENTS)], f"install {REQUIREMENTS.name}")
    stamp.write_text(wanted)
    took = time.monotonic() - started
    print(f"objectlog: LocalStack installed in {took:.0f} s", file=sys.stderr)
    return venv / "bin" / "python"


def _installer(venv: Path) -> list[str]:
    """uv beside this interpreter when there is one (the dev extra has it: measured, 7 s for
    LocalStack's 116 pinned wheels against 47 s with pip), else the new virtualenv's pip."""
    uv = Path(sys.executable).with_name("uv")
    if uv.is_file():
        return [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
    return [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise EmulatorError(f"{what} failed ({done.returncode}):\n{done.stderr[-4000:]}")


def java_home() -> Path:
    """The JDK the java on PATH belongs to (LocalStack runs DynamoDB Local with its bin/java)."""
    java = Path(require("java", "a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)"))
    home = java.resolve().parents[1]
    if not (home / "bin" / "java").is_file():
        raise EmulatorError(f"cannot tell the JDK home of {java} (looked at {home})")
    return home


def loader_agent(cache: Path | None = None) -> Path:
    """A Java agent with an empty premain, standing in for LocalStack's GSI patch; built once
    with javac and jar into the cache directory."""
    home = (cache or cache_dir()) / "localstack"
    agent = home / AGENT_JAR
    if agent.is_file():
        return agent
    javac = require("javac", "a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)")
    jar = require("jar", "a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)")
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="objectlog-agent-") as scratch:
        work = Path(scratch)
        (work / "ObjectlogNoopAgent.java").write_text(AGENT_SOURCE)
        (work / "MANIFEST.MF").write_text("Premain-Class: ObjectlogNoopAgent\n")
        _run([javac, "-d", str(work), str(work / "ObjectlogNoopAgent.java")], "javac (agent)")
        built = work / AGENT_JAR
        _run(
            [jar, "cfm", str(built), str(work / "MANIFEST.MF"), "-C", str(work), "."],
            "jar (agent)",
        )
        shutil.move(built, agent)
    return agent


def certificate(directory: Path) -> Path:
    """A self-signed localhost key and certificate in one PEM file."""
    openssl = require("openssl", "OpenSSL (Debian: apt-get install openssl)")
    key, cert, pem = (directory / n for n in ("server.key", "server.crt", "server.pem"))
    _run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
         "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        "openssl req (certificate)",
    )  # fmt: skip
    pem.write_text(key.read_text() + cert.read_text())
    return pem


def _link(link: Path, target: Path) -> None:
    """link -> target, replacing a link to anything else (a root reused with another JDK)."""
    if link.is_symlink() and link.readlink() == target:
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(target)


def prepare_root(root: Path, cache: Path | None = None) -> Path:
    """Fill LocalStack's FILESYSTEM_ROOT so that it downloads nothing; the certificate's path."""
    _link(root / JAVA_DIR, java_home())
    for entry in install_dynamodb_local(cache).iterdir():
        _link(root / DYNAMODB_DIR / entry.name, entry)
    _link(root / DYNAMODB_DIR / AGENT_JAR, loader_agent(cache))
    return certificate(root)


# Asks LocalStack's own installers where they find Java, DynamoDB Local and the agent.
INSTALLED_PROBE = """\
import json
from localstack.packages.java import java_package
from localstack.services.dynamodb.packages import dynamodblocal_package as ddb
print(json.dumps({
    "java": java_package.get_installer(ddb.get_installer().java_version).get_installed_dir(),
    "dynamodb-local": ddb.get_installed_dir(),
}))
"""


def check_prefill(python: Path, root: Path, env: dict[str, str]) -> None:
    """LocalStack sees the pre-filled Java and DynamoDB Local as installed (so it will not try
    to download them), or an EmulatorError says which it would fetch."""
    probe = subprocess.run(
        [str(python), "-c", INSTALLED_PROBE], capture_output=True, text=True, env=env, cwd=root
    )
    if probe.returncode != 0:
        raise EmulatorError(f"asking LocalStack for its installed packages failed:\n{probe.stderr}")
    found = json.loads(probe.stdout)
    wanted = {"java": root / JAVA_DIR, "dynamodb-local": root / DYNAMODB_DIR}
    for name, path in wanted.items():
        if found[name] != str(path):
            raise EmulatorError(
                f"LocalStack {LOCALSTACK_VERSION} does not see {name} at {path} (it finds "
                f"{found[name]}): it would download it, which fails offline; see this module's "
                "docstring"
            )


class LocalStack(Emulator):
    """LocalStack on a loopback port, its state in memory, its files under work."""

    def __init__(
        self,
        work: Path,
        *,
        port: int = 0,
        venv: Path | None = None,
        cache: Path | None = None,
    ) -> None:
        self.work = work
        self.port = port or free_port()
        self.venv = venv or Path(os.environ.get(ENV_VENV) or DEFAULT_VENV)
        self.cache = cache
        self._process: ManagedProcess | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.work / "localstack.log"

    def environment(self, root: Path, certificate: Path) -> dict[str, str]:
        """The parent's environment without its AWS and Python settings, plus LocalStack's."""
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AWS_", "PYTHON", "VIRTUAL_ENV"))
        }
        return {
            **inherited,
            "FILESYSTEM_ROOT": str(root),
            "GATEWAY_LISTEN": f"127.0.0.1:{self.port}",
            "SERVICES": SERVICES,
            "EAGER_SERVICE_LOADING": "1",
            "DYNAMODB_IN_MEMORY": "1",  # the 9,999-partition fuzz case needs it to stay < 30 s
            "CUSTOM_SSL_CERT_PATH": str(certificate),
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "OVERRIDE_IN_DOCKER": "0",
            "DNS_ADDRESS": "0",  # no DNS server of its own (it would want port 53)
            "DISABLE_EVENTS": "1",  # no analytics calls out
        }

    def ready(self) -> bool:
        try:
            logged = "Ready." in self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return logged and answers_http(self.endpoint_url + HEALTH_PATH)

    def start(self) -> LocalStack:
        python = install(self.venv)
        root = (self.work / "filesystem").resolve()
        env = self.environment(root, prepare_root(root, self.cache))
        check_prefill(python.absolute(), root, env)
        process = ManagedProcess(
            "LocalStack",
            [str(python.absolute()), "-m", "localstack.runtime.main"],
            log_path=self.log_path,
            env=env,
            cwd=self.work,
        )
        self._process = process.start()
        process.wait_until(self.ready, START_TIMEOUT_S)
        return self
