"""Version-aware routing of tools to servers: ``server`` + version constraint -> ``server:version``.

Rules, for a server declared in ``servers`` (in one or more versions):

* a constraint that is a range (``^1.2``, ``~1.2.3``, ``>=1.0,<2``, ``1.2``): the highest
  version it allows; none allowed is a :class:`RoutingError` listing the versions there are;
* an exact version (``1.2.0``) that is declared: that one;
* an exact version that is not declared: **fallback** to the highest version its caret range
  allows (``1.2.0`` -> the latest ``>=1.2.0 <2.0.0``), with a warning logged on this module's
  logger; none there is a :class:`RoutingError`;
* no constraint (a v1 tool, or a direct call without a version): the latest version, with a
  warning that the call is version-unaware.

A server that is not declared routes to its plain name (v1 registries declare no servers), but
asking for a version of it is a :class:`RoutingError`: there is nothing to check it against.
The route key is what a backend is registered under: ``doc-service:1.2.0`` (an
:class:`~structured_agents.tools.mcp.MCPRegistry` of that name), or ``doc-service``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from structured_agents.registry.errors import Loc, RegistryError, RoutingError
from structured_agents.registry.models import ServerDefinition
from structured_agents.registry.versions import Version, VersionConstraint

__all__ = ["Route", "ServerRouter"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Route:
    """Where a call goes."""

    server: str
    """Server name."""
    version: Version | None
    """The chosen version; None for an undeclared server."""
    definition: ServerDefinition | None
    """The chosen server definition; None for an undeclared server."""
    fallback: bool = False
    """True when an exact version was asked for and another one was chosen."""

    @property
    def key(self) -> str:
        """``name:version``, or the plain name for an undeclared server."""
        return self.server if self.version is None else f"{self.server}:{self.version}"


class ServerRouter:
    """Routes ``(server, constraint)`` pairs among the declared server versions."""

    def __init__(self, servers: Sequence[ServerDefinition]) -> None:
        self._servers: dict[str, dict[Version, ServerDefinition]] = {}
        for index, server in enumerate(servers):
            versions = self._servers.setdefault(server.name, {})
            version = Version.parse(server.version)
            if version in versions:
                raise RegistryError(
                    f"server {server.name!r} version {version} is declared twice",
                    ("servers", index, "version"),
                )
            versions[version] = server

    def versions(self, server: str) -> list[Version]:
        """The declared versions of ``server``, lowest first (empty when it is not declared)."""
        return sorted(self._servers.get(server, {}))

    def route_key(self, key: str, *, loc: Loc = ()) -> Route:
        """Route a ``server:constraint`` key (``doc-service:^1.2``, ``doc-service``)."""
        server, _, constraint = key.partition(":")
        return self.route(server, constraint or None, loc=loc)

    def route(self, server: str, constraint: str | None, *, loc: Loc = (), caller: str = "") -> Route:
        """The version of ``server`` a call with ``constraint`` goes to (see the module docstring).

        ``loc`` and ``caller`` (``tool get_weather``) only make errors and warnings say where.
        """
        who = f"{caller}: " if caller else ""
        declared = self._servers.get(server)
        if declared is None:
            if constraint is not None:
                known = ", ".join(sorted(self._servers)) or "none"
                raise RoutingError(
                    f"{who}server {server!r} is not declared in servers, so version {constraint!r} "
                    f"cannot be routed (declared servers: {known})",
                    loc,
                )
            return Route(server, None, None)
        versions = sorted(declared)
        if constraint is None:
            latest = VersionConstraint.parse("*").best(versions) or versions[-1]
            logger.warning(
                "%sversion-unaware call of server %r routed to the latest version, %s", who, server, latest
            )
            return Route(server, latest, declared[latest])
        wanted = VersionConstraint.parse(constraint)
        if wanted.exact is not None and wanted.exact not in declared:
            compatible = VersionConstraint.parse(f"^{wanted.exact}").best(versions)
            if compatible is not None:
                logger.warning(
                    "%sserver %r has no version %s; falling back to the latest compatible version, %s",
                    who,
                    server,
                    wanted.exact,
                    compatible,
                )
                return Route(server, compatible, declared[compatible], fallback=True)
        chosen = wanted.best(versions)
        if chosen is None:
            have = ", ".join(map(str, versions))
            raise RoutingError(f"{who}no version of server {server!r} satisfies {constraint!r} ({have})", loc)
        return Route(server, chosen, declared[chosen])
