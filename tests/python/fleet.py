"""A fleet on loopback for the Python tests: a coordinator process and CPU
worker processes started from the build's binaries, with their files under
one directory (the Python twin of bench/local_fleet.{h,cc})."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from typing import List, Optional

SOURCE_DIR = os.environ.get(
    "TUNEFLEET_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("TUNEFLEET_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
BIN_DIR = os.path.join(BUILD_DIR, "bin")
MATMUL_DIR = os.path.join(SOURCE_DIR, "kernels", "cpu", "matmul")


# Ports bound and never listened on, held to the end of the session: a
# connection is refused, and no other test can take the port meanwhile.
_HELD_PORTS: List[socket.socket] = []


def closed_port() -> int:
    """A loopback port nothing answers on (connections are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD_PORTS.append(s)
    return s.getsockname()[1]


class Fleet:
    """Processes are killed by stop(). Not thread-safe."""

    def __init__(self, data_dir: str, *, secure: bool = False):
        self.data_dir = data_dir
        self.secure = secure
        self.address = ""
        self._coordinator: Optional[subprocess.Popen] = None
        self._workers: List[subprocess.Popen] = []
        self._log = open(os.path.join(data_dir, "fleet.log"), "ab")

    @property
    def ca_file(self) -> str:
        return os.path.join(self.data_dir, "ca", "ca.crt")

    @property
    def admin_token_file(self) -> str:
        return os.path.join(self.data_dir, "admin.token")

    def start_coordinator(self) -> None:
        """Starts the coordinator and waits until it wrote its address."""
        address_file = os.path.join(self.data_dir, "address")
        argv = [os.path.join(BIN_DIR, "tunefleet-coordinator"),
                "--listen", "127.0.0.1:0", "--data-dir", self.data_dir,
                "--address-file", address_file, "--lease-ttl-ms", "3000",
                "--heartbeat-ms", "300", "--batch-size", "2",
                "--metrics-listen", "127.0.0.1:0"]
        argv += self._security_flags()
        env = dict(os.environ, TUNEFLEET_DATABASE="")
        self._coordinator = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                             stderr=self._log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(address_file):
                with open(address_file) as f:
                    self.address = f.read().strip()
                if self.address:
                    return
            if self._coordinator.poll() is not None:
                raise RuntimeError(f"coordinator ended: {self._coordinator.returncode}; "
                                   f"see {self._log.name}")
            time.sleep(0.05)
        raise RuntimeError("the coordinator did not start in 30 s")

    def start_worker(self) -> None:
        """REQUIRES: not secure (these tests' workers speak plaintext)."""
        index = len(self._workers)
        argv = [os.path.join(BIN_DIR, "tunefleet-worker"),
                "--coordinator", self.address,
                "--cache-dir", os.path.join(self.data_dir, f"worker-cache-{index}"),
                "--name", f"test-worker-{index}", "--measure-budget", "0.02",
                "--compile-threads", "1", "--backend", "cpu", "--metrics-port", "0",
                "--metrics-host", "127.0.0.1", "--insecure"]
        self._workers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                              stderr=self._log))

    def stop(self) -> None:
        for process in self._workers + ([self._coordinator] if self._coordinator else []):
            if process.poll() is None:
                process.terminate()
        for process in self._workers + ([self._coordinator] if self._coordinator else []):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._log.close()

    def _security_flags(self) -> List[str]:
        if not self.secure:
            return ["--insecure"]
        ca_dir = os.path.join(self.data_dir, "ca")
        subprocess.run([os.path.join(SOURCE_DIR, "scripts", "dev-ca.sh"), ca_dir, "coordinator"],
                       check=True, stdout=subprocess.DEVNULL, timeout=60)
        return ["--tls-cert", os.path.join(ca_dir, "coordinator.crt"),
                "--tls-key", os.path.join(ca_dir, "coordinator.key"),
                "--tls-client-ca", self.ca_file, "--admin-token-file", self.admin_token_file]


def tunectl(fleet: Fleet, *args: str) -> str:
    """Runs tunectl against `fleet` (plaintext) and returns its stdout."""
    argv = [os.path.join(BIN_DIR, "tunectl"), "--server", fleet.address, "--insecure", *args]
    done = subprocess.run(argv, check=True, stdout=subprocess.PIPE, timeout=120)
    return done.stdout.decode()
