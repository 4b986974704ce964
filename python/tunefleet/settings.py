"""Where the coordinator is and how to authenticate: resolved as the C++
library's ClientOptions::FromEnvironment and tunectl resolve them
(client/client_settings.h; the shared cases are
tests/data/client_settings_cases.json). Each setting is taken from the
argument, else the environment, else the chosen context of the config file,
else its top level, else the default:

    setting     argument   environment                     config key
    server      server     TUNEFLEET_SERVER                server   (else localhost:7070)
    plaintext   insecure   TUNEFLEET_INSECURE=1            insecure = true
    CA bundle   ca_file    TUNEFLEET_CA_FILE               ca_file
    token       token      TUNEFLEET_TOKEN (the token),    token_file
                           TUNEFLEET_TOKEN_FILE
    deadline    deadline   -                               timeout  (else 10 s)

The config file is tunectl's: $TUNEFLEET_CONFIG, else <config dir>/config
(or the older <config dir>/tunectl.conf where only it exists), <config dir>
being $XDG_CONFIG_HOME/tunefleet or ~/.config/tunefleet; its context is
$TUNEFLEET_CONTEXT, else its `current-context`, else none. With no token
named, <config dir>/token is read when it exists. A token is never sent
over plaintext.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional

from .errors import InvalidArgumentError, NotFoundError, PermissionDeniedError

DEFAULT_SERVER = "localhost:7070"
DEFAULT_DEADLINE_SECONDS = 10.0
# A year: longer timeouts in the config file are typos.
_MAX_TIMEOUT_SECONDS = 365 * 24 * 3600


@dataclass(frozen=True)
class Settings:
    server: str
    insecure: bool
    ca_file: str   # "" = the system's trusted roots
    token: str     # "" = none
    deadline: float  # seconds per call


@dataclass
class ConfigFile:
    """A config file's keys ('_' read as '-'): the top level and each section's."""
    top: Dict[str, str] = field(default_factory=dict)
    sections: Dict[str, Dict[str, str]] = field(default_factory=dict)


def resolve(server: Optional[str] = None, *, token: Optional[str] = None,
            ca_file: Optional[str] = None, insecure: Optional[bool] = None,
            deadline: Optional[float] = None, config_file: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings of a Client; arguments given win over everything else.
    InvalidArgumentError for a bad deadline, a context the file lacks or a
    token that would travel in plaintext; NotFoundError/PermissionDeniedError
    for an unreadable token file."""
    env = os.environ if env is None else env
    path = config_file if config_file is not None else default_config_path(env)
    config = read_config(path)
    context = env.get("TUNEFLEET_CONTEXT") or config.top.get("current-context", "")
    if context and context not in config.sections:
        names = ", ".join(sorted(config.sections)) or "none"
        raise InvalidArgumentError(f"no context '{context}' in {path} (it has: {names})")

    def get(env_name: Optional[str], key: str) -> Optional[str]:
        # An empty value counts as unset, as an empty variable does.
        if env_name and env.get(env_name):
            return env[env_name]
        if context and config.sections[context].get(key):
            return config.sections[context][key]
        return config.top.get(key) or None

    if deadline is None:
        timeout = get(None, "timeout")
        if timeout is not None:
            try:
                deadline = float(timeout)
            except ValueError:
                deadline = -1.0
            if not 0 < deadline <= _MAX_TIMEOUT_SECONDS:
                raise InvalidArgumentError(
                    f"timeout = {timeout} in {path}: not a number of seconds in "
                    f"(0, {_MAX_TIMEOUT_SECONDS}]")
        else:
            deadline = DEFAULT_DEADLINE_SECONDS
    if not deadline > 0:
        raise InvalidArgumentError(f"deadline must be a positive number of seconds, got {deadline}")
    if insecure is None:
        insecure = _is_true(get("TUNEFLEET_INSECURE", "insecure") or "")
    settings = dict(
        server=server or get("TUNEFLEET_SERVER", "server") or DEFAULT_SERVER,
        insecure=bool(insecure),
        ca_file=ca_file or get("TUNEFLEET_CA_FILE", "ca-file") or "",
        deadline=float(deadline))
    if insecure:
        if token:
            raise InvalidArgumentError("a token is never sent over plaintext (insecure)")
        return Settings(token="", **settings)
    if token:
        return Settings(token=token, **settings)
    if env.get("TUNEFLEET_TOKEN"):
        return Settings(token=env["TUNEFLEET_TOKEN"], **settings)
    path = get("TUNEFLEET_TOKEN_FILE", "token-file") or ""
    if not path:
        path = default_token_file(env)
        if not path or not os.path.exists(path):
            return Settings(token="", **settings)
    return Settings(token=read_token_file(path), **settings)


def parse_config(text: str) -> ConfigFile:
    """tunectl's config file format: `key = value` lines (values optionally
    quoted; '#' and ';' comment lines, and ` # ...` after a value), one
    `[NAME]` section per context; the first of a key in a section wins."""
    config = ConfigFile()
    keys = config.top
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 2 and line[0] == "[" and line[-1] == "]":
            keys = config.sections.setdefault(line[1:-1].strip(), {})
            continue
        if not line or line[0] in "#;" or "=" not in line:
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if value[:1] in ("\"", "'"):
            if value.find(value[0], 1) > 0:
                value = value[1:value.find(value[0], 1)]  # a comment may follow the quote
        elif " #" in value:
            value = value[:value.index(" #")].rstrip()
        keys.setdefault(name.strip().replace("_", "-"), value)
    return config


def read_config(path: str) -> ConfigFile:
    """The config file at `path`; empty when it is absent or unreadable."""
    if not path:
        return ConfigFile()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_config(f.read())
    except OSError:
        return ConfigFile()


def read_token_file(path: str) -> str:
    """The first line of a token file, stripped."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            line = f.readline().strip()
    except PermissionError as e:
        raise PermissionDeniedError(f"cannot read token file {path}: {e.strerror}") from None
    except OSError as e:
        raise NotFoundError(f"cannot read token file {path}: {e.strerror}") from None
    if not line:
        raise InvalidArgumentError(f"{path} holds no token")
    return line


def _config_dir(env: Mapping[str, str]) -> str:
    if env.get("XDG_CONFIG_HOME"):
        return os.path.join(env["XDG_CONFIG_HOME"], "tunefleet")
    if env.get("HOME"):
        return os.path.join(env["HOME"], ".config", "tunefleet")
    return ""


def default_config_path(env: Mapping[str, str]) -> str:
    """$TUNEFLEET_CONFIG, else <config dir>/config, else the older
    <config dir>/tunectl.conf where only it exists; "" without a home."""
    if env.get("TUNEFLEET_CONFIG"):
        return env["TUNEFLEET_CONFIG"]
    directory = _config_dir(env)
    if not directory:
        return ""
    config = os.path.join(directory, "config")
    older = os.path.join(directory, "tunectl.conf")
    return older if not os.path.exists(config) and os.path.exists(older) else config


def default_token_file(env: Mapping[str, str]) -> str:
    directory = _config_dir(env)
    return os.path.join(directory, "token") if directory else ""


def _is_true(text: str) -> bool:
    return text == "1" or text.lower() in ("true", "yes")
