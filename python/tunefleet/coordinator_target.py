"""How the client reaches the coordinators of a fleet: one address
("host:port"; a DNS name may resolve to one address per coordinator), or a
comma-separated list of IP addresses, one per coordinator that shares the
database. Only the coordinator that leads the database serves the fleet's
services (its standbys answer health alone, NOT_SERVING): the channel
balances over every address by gRPC's client-side health checks, so calls go
to the leader and follow a takeover. The same rule as the C++ client's
(common/coordinator_channel.h), checked by the shared cases of
tests/data/coordinator_target_cases.json."""

from __future__ import annotations

import ipaddress
import json
from typing import List, Optional, Tuple

from .errors import InvalidArgumentError

TUNING_SERVICE = "tunefleet.v1.TuningService"


def _family(address: str) -> Optional[int]:
    """4 or 6 for "a.b.c.d:port" or "[v6]:port"; None for anything else."""
    host, sep, port = address.rpartition(":")
    if not sep or not port:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        want = 6
    else:
        want = 4
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    return ip.version if ip.version == want else None


def parse(addresses: str) -> Tuple[str, str]:
    """(target, authority): one address as it is (authority ""), a list as one
    ipv4: or ipv6: target whose authority is the first address.
    InvalidArgumentError for an empty item, or for a list with an item that
    is not an IP address and port, or that mixes IPv4 and IPv6."""
    items: List[str] = [item.strip() for item in addresses.split(",")]
    if any(not item for item in items):
        raise InvalidArgumentError(f'the coordinator address "{addresses}" has an empty item')
    if len(items) == 1:
        return items[0], ""
    family = _family(items[0])
    for item in items:
        each = _family(item)
        if each is None:
            raise InvalidArgumentError(
                f'coordinator "{item}" of the list "{addresses}" is not an IP address and '
                "port; give a list of IP addresses, or one DNS name that resolves to every "
                "coordinator")
        if each != family:
            raise InvalidArgumentError(
                f'the coordinator list "{addresses}" mixes IPv4 and IPv6')
    return f"ipv{family}:" + ",".join(items), items[0]


# How often the channel pings each coordinator connection, and how long it
# waits for the answer (common/coordinator_channel.h): a coordinator that
# stopped running still accepts TCP, and would otherwise keep its share of
# the calls, each to time out.
KEEPALIVE_MS = 5000
KEEPALIVE_TIMEOUT_MS = 5000


def channel_options(authority: str, service: str = TUNING_SERVICE) -> List[Tuple[str, object]]:
    """gRPC channel options: round_robin over the target's addresses by the
    health of `service`, pings that drop a coordinator that stopped
    answering, and the authority TLS checks."""
    config = {"loadBalancingConfig": [{"round_robin": {}}],
              "healthCheckConfig": {"serviceName": service}}
    options: List[Tuple[str, object]] = [
        ("grpc.service_config", json.dumps(config)),
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]
    if authority:
        options.append(("grpc.default_authority", authority))
    return options
