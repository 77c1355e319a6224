"""JupyterLab for the Lab check: :class:`LabServer`, started from this Python's environment on loopback with a random
token on a free port, isolated from the user's Jupyter configuration, settings, workspaces and kernels.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["TIMEOUT", "LabServer"]

#: seconds for Lab to start (and, in the check, for a notebook to open and its rendering to settle)
TIMEOUT = 60.0
_NO_LAB = "the Lab check needs JupyterLab in this environment (pip install jupyterlab; the book extra has it)"
#: Lab's settings for the check: every cell in the page (no virtual scrolling, which would leave cells out of the
#: page and of the screenshot), no empty page's height below the last cell (it made the last part of a tall
#: notebook's screenshot blank), no news or update notifications over the notebook
_LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "scrollPastEnd": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LabServer:
    """JupyterLab from this Python's environment, on 127.0.0.1 with a random token, serving ``root``; isolated from
    the user's Jupyter configuration, settings, workspaces and kernels (temporary folders), stopped on exit."""

    def __init__(self, root: Path, timeout: float = TIMEOUT, kernels: Sequence[Path] = ()) -> None:
        self.root = root
        self.timeout = timeout
        self.kernels = list(kernels)
        self.token = secrets.token_hex(24)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._home = Path(tempfile.mkdtemp(prefix="recjudge-lab-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self.log = self._home / "lab.log"

    def __enter__(self) -> LabServer:
        if importlib.util.find_spec("jupyterlab") is None:
            raise RuntimeError(_NO_LAB)
        for kernel in self.kernels:  # kernelspec folders (kernel.json) Lab offers besides the environment's own
            shutil.copytree(kernel, self._home / "data" / "kernels" / kernel.name)
        settings = self._home / "settings"
        for name, values in _LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(self._home / "config"),
            JUPYTER_DATA_DIR=str(self._home / "data"),
            JUPYTER_RUNTIME_DIR=str(self._home / "runtime"),
        )
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={self._home / 'workspaces'}",
        ]
        with self.log.open("wb") as log:
            self._proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError(f"JupyterLab exited with {self._proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("status")
                return self
            time.sleep(0.3)
        self.__exit__(None, None, None)
        raise RuntimeError(f"JupyterLab did not answer within {self.timeout:.0f} s:\n{self.log_tail()}")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._home, ignore_errors=True)

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of Lab's own log."""
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def api(self, path: str) -> Any:
        """GET ``/api/<path>`` with the token; the decoded JSON."""
        request = urllib.request.Request(f"{self.url}/api/{path}", headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def notebook_url(self, name: str) -> str:
        """The URL that opens ``name`` (relative to the root) in Lab, in a fresh workspace."""
        return f"{self.url}/lab/tree/{quote(name)}?reset&token={self.token}"

    def kernel_state(self, name: str) -> str | None:
        """The execution state of the kernel of ``name``'s session (None: no session or no kernel)."""
        for session in self.api("sessions"):
            if session.get("path") == name and session.get("kernel"):
                return str(session["kernel"].get("execution_state"))
        return None
