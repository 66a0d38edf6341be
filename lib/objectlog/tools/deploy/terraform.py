"""The Terraform runner: one deployment's workspace (data dir, variables, state) over the
project's infra/terraform, the terraform binary, and the provider mirror it installs from."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from objectlog.tools.deploy import DeployError
from objectlog.tools.project import Project, find_project

ENV_PLUGIN_DIR = "OBJECTLOG_TF_PLUGIN_DIR"
ENV_TERRAFORM = "OBJECTLOG_TERRAFORM"  # another binary, e.g. tflocal for LocalStack
ENV_TF_REGISTRY = "OBJECTLOG_TF_REGISTRY"  # "1": no mirror, install from the public registry
DEFAULT_MIRROR = Path("/opt/tf-plugins")
MIRROR_SEARCH = (
    Path.home() / ".terraform.d" / "plugins",
    Path("/usr/local/share/terraform/plugins"),
    Path("/usr/share/terraform/plugins"),
    Path("/opt"),
)
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


def find_terraform() -> str:
    name = os.environ.get(ENV_TERRAFORM, "terraform")
    found = shutil.which(name)
    if not found:
        raise DeployError(
            f"{name!r} is not on PATH: install Terraform >= 1.5 "
            "(https://developer.hashicorp.com/terraform/install), or set "
            f"{ENV_TERRAFORM} to the binary to use (e.g. tflocal)"
        )
    return found


def find_provider_mirror() -> Path | None:
    """The directory holding ``registry.terraform.io/hashicorp/aws/...`` (a filesystem mirror),
    or None when OBJECTLOG_TF_REGISTRY=1 allows installing from the public registry."""
    configured = os.environ.get(ENV_PLUGIN_DIR)
    if configured:
        path = Path(configured)
        if not any(path.glob("registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*")):
            raise DeployError(
                f"{ENV_PLUGIN_DIR}={configured} holds no "
                "registry.terraform.io/hashicorp/aws/<version>/<os_arch>/terraform-provider-aws_*"
            )
        return path
    candidates = [DEFAULT_MIRROR, *MIRROR_SEARCH]
    for depth in range(3):  # the mirror itself, or up to two directories below a candidate
        for base in candidates:
            pattern = (
                "*/" * depth + "registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*"
            )
            for binary in base.glob(pattern):
                # <mirror>/registry.terraform.io/hashicorp/aws/<version>/<os_arch>/<binary>
                return binary.parents[5]
    if os.environ.get(ENV_TF_REGISTRY) == "1":
        return None
    raise DeployError(
        "no Terraform provider mirror with hashicorp/aws was found (looked at "
        f"${ENV_PLUGIN_DIR}, {', '.join(str(c) for c in candidates)}): set {ENV_PLUGIN_DIR} to "
        "the directory holding registry.terraform.io/, or set "
        f"{ENV_TF_REGISTRY}=1 to install the provider from the public registry"
    )


def cli_config(mirror: Path | None) -> str:
    if mirror is None:
        return "# providers from the public registry\n"
    return (
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
        '    include = ["registry.terraform.io/*/*"]\n  }\n'
        '  direct {\n    exclude = ["registry.terraform.io/*/*"]\n  }\n}\n'
    )


@dataclass
class Workspace:
    """One deployment's Terraform data dir, variables and state (under build/terraform/<name>
    of the project): the source tree (infra/terraform) stays free of state. config_dir and
    state_dir default to the project's; the project defaults to the checkout holding the
    current directory."""

    name: str
    variables: dict[str, Any]
    state_dir: Path | None = None
    config_dir: Path | None = None
    terraform: str = field(default_factory=find_terraform)
    mirror: Path | None = field(default_factory=find_provider_mirror)
    timings: dict[str, float] = field(default_factory=dict)
    last_output: str = ""
    project: Project | None = None
    # Terraform's environment beside its own settings: this process's at each run, unless given
    # (a workspace driven from a thread while others change os.environ takes a copy).
    environ: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if self.config_dir is None or self.state_dir is None:
            project = self.project or find_project()
            self.config_dir = self.config_dir or project.terraform
            self.state_dir = self.state_dir or project.build / "terraform" / self.name
        if not any(self.config_dir.glob("*.tf")):
            raise DeployError(f"{self.config_dir} holds no Terraform configuration (*.tf)")
        self.state_dir.mkdir(parents=True, exist_ok=True)

    @property
    def state_file(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "terraform.tfstate"

    def env(self) -> dict[str, str]:
        assert self.state_dir is not None
        rc = self.state_dir / "terraform.rc"
        rc.write_text(cli_config(self.mirror))
        env = dict(os.environ if self.environ is None else self.environ)
        env.update(
            TF_CLI_CONFIG_FILE=str(rc),
            TF_DATA_DIR=str(self.state_dir / ".terraform"),
            TF_IN_AUTOMATION="1",
            TF_INPUT="0",
            CHECKPOINT_DISABLE="1",
        )
        if self.variables.get("local_endpoint"):
            for key, value in LOCAL_CREDENTIALS.items():
                env.setdefault(key, value)
        return env

    def run(self, *args: str, step: str | None = None) -> str:
        command = [self.terraform, f"-chdir={self.config_dir}", *args]
        started = time.monotonic()
        result = subprocess.run(
            command, env=self.env(), capture_output=True, text=True, check=False, timeout=900
        )
        if step:
            self.timings[step] = time.monotonic() - started
            self.last_output = result.stdout
        if result.returncode != 0:
            raise DeployError(
                f"{' '.join(command[:3])} failed ({result.returncode}):\n"
                f"{result.stderr[-6000:] or result.stdout[-6000:]}"
            )
        return result.stdout

    def _var_file(self) -> str:
        assert self.state_dir is not None
        path = self.state_dir / "terraform.tfvars.json"
        path.write_text(json.dumps(self.variables, indent=2, sort_keys=True) + "\n")
        return f"-var-file={path}"

    def init(self) -> None:
        self.run("init", "-no-color", "-upgrade=false", step="init")

    def apply(self) -> dict[str, Any]:
        self.init()
        self.run(
            "apply",
            "-no-color",
            "-auto-approve",
            f"-state={self.state_file}",
            self._var_file(),
            step="apply",
        )
        return self.outputs()

    def outputs(self) -> dict[str, Any]:
        if not self.state_file.exists():
            raise DeployError(f"no state at {self.state_file}: apply first")
        raw = json.loads(self.run("output", "-no-color", "-json", f"-state={self.state_file}"))
        return {name: value["value"] for name, value in raw.items()}

    def destroy(self) -> None:
        if not self.state_file.exists():
            return
        self.init()
        self.run(
            "destroy",
            "-no-color",
            "-auto-approve",
            f"-state={self.state_file}",
            self._var_file(),
            step="destroy",
        )

    def validate(self) -> str:
        self.init()
        return self.run("validate", "-no-color")


def require_endpoint(url: str) -> None:
    """Fail at once, saying what to start, when nothing listens at the AWS endpoint."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2):
            return
    except OSError as e:
        raise DeployError(
            f"nothing answers at {url} ({e}): start the embedded stack with `make run` in "
            "another terminal (or LocalStack: docker compose -f localstack/docker-compose.yml "
            "up), or pass --endpoint"
        ) from None


def local_variables(
    endpoint: str, name: str, package_dir: Path, **overrides: Any
) -> dict[str, Any]:
    """Variables for a throw-away deployment on moto server or LocalStack."""
    return {
        "local_endpoint": endpoint,
        "name": name,
        "package_dir": str(package_dir.resolve()),
        "force_destroy": True,
        "deletion_protection": False,
        # moto applies a bucket policy's conditioned Deny to every request (it never evaluates
        # aws:SecureTransport), which would lock everyone out of the bucket
        "deny_insecure_transport": False,
        # the provider waits for a lifecycle configuration to read back the same three times,
        # 10 s apart: about 55 s of every apply on moto, for a rule no emulator enforces
        "abort_incomplete_multipart_days": 0,
        **overrides,
    }
