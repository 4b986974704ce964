"""Where the coordinator is and how to authenticate: resolved as tunectl
resolves them (client/tunectl/connection.h). Each setting is taken from the
argument, else the environment, else the config file (lines of
`key = value`, '#' comments; $XDG_CONFIG_HOME/tunefleet/tunectl.conf or
~/.config/tunefleet/tunectl.conf):

    setting     argument   environment                     config key
    server      server     TUNEFLEET_SERVER                server   (else localhost:7070)
    plaintext   insecure   TUNEFLEET_INSECURE=1            insecure = true
    CA bundle   ca_file    TUNEFLEET_CA_FILE               ca_file
    token       token      TUNEFLEET_TOKEN (the token),    token_file
                           TUNEFLEET_TOKEN_FILE

With no token given, ~/.config/tunefleet/token is read when it exists. A
token is never sent over plaintext.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Mapping, Optional

from .errors import InvalidArgumentError, NotFoundError, PermissionDeniedError

DEFAULT_SERVER = "localhost:7070"
DEFAULT_DEADLINE_SECONDS = 10.0


@dataclass(frozen=True)
class Settings:
    server: str
    insecure: bool
    ca_file: str   # "" = the system's trusted roots
    token: str     # "" = none
    deadline: float  # seconds per call


def resolve(server: Optional[str] = None, *, token: Optional[str] = None,
            ca_file: Optional[str] = None, insecure: Optional[bool] = None,
            deadline: Optional[float] = None, config_file: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings of a Client; arguments given win over everything else.
    InvalidArgumentError for a bad deadline or a token that would travel in
    plaintext; NotFoundError/PermissionDeniedError for an unreadable token
    file."""
    env = os.environ if env is None else env
    config = read_config(config_file if config_file is not None else _default_config_path(env))
    if deadline is None:
        deadline = DEFAULT_DEADLINE_SECONDS
    if not deadline > 0:
        raise InvalidArgumentError(f"deadline must be a positive number of seconds, got {deadline}")
    if insecure is None:
        insecure = _is_true(env.get("TUNEFLEET_INSECURE", "")) or \
            _is_true(config.get("insecure", ""))
    settings = dict(
        server=server or env.get("TUNEFLEET_SERVER") or config.get("server")
        or DEFAULT_SERVER,
        insecure=bool(insecure),
        ca_file=ca_file or env.get("TUNEFLEET_CA_FILE") or config.get("ca_file", ""),
        deadline=float(deadline))
    if insecure:
        if token:
            raise InvalidArgumentError("a token is never sent over plaintext (insecure)")
        return Settings(token="", **settings)
    return Settings(token=token or _resolve_token(env, config), **settings)


def read_config(path: str) -> Dict[str, str]:
    """The `key = value` lines of a config file (the first of a key wins);
    empty when the file is absent or unreadable."""
    values: Dict[str, str] = {}
    if not path:
        return values
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return values
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, _, value = text.partition("=")
        values.setdefault(name.strip(), value.strip())
    return values


def read_token_file(path: str) -> str:
    """The first line of a token file, stripped."""
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline().strip()
    except PermissionError as e:
        raise PermissionDeniedError(f"cannot read token file {path}: {e.strerror}") from None
    except OSError as e:
        raise NotFoundError(f"cannot read token file {path}: {e.strerror}") from None
    if not line:
        raise InvalidArgumentError(f"{path} holds no token")
    return line


def _resolve_token(env: Mapping[str, str], config: Mapping[str, str]) -> str:
    if env.get("TUNEFLEET_TOKEN"):
        return env["TUNEFLEET_TOKEN"]
    path = env.get("TUNEFLEET_TOKEN_FILE") or config.get("token_file", "")
    if not path:
        directory = _config_dir(env)
        path = directory and os.path.join(directory, "token")
        if not path or not os.path.exists(path):
            return ""
    return read_token_file(path)


def _config_dir(env: Mapping[str, str]) -> str:
    if env.get("XDG_CONFIG_HOME"):
        return os.path.join(env["XDG_CONFIG_HOME"], "tunefleet")
    if env.get("HOME"):
        return os.path.join(env["HOME"], ".config", "tunefleet")
    return ""


def _default_config_path(env: Mapping[str, str]) -> str:
    directory = _config_dir(env)
    return os.path.join(directory, "tunectl.conf") if directory else ""


def _is_true(text: str) -> bool:
    return text == "1" or text.lower() in ("true", "yes")
