"""What one server's sign-in holds: the secrets in use, the stored tokens (re-read when another
process may have refreshed them, written back only when they are ours), and a sign-in's draft,
which replaces the stored tokens only once the sign-in succeeded.

Every change to the stored record is one `update_record` (read, change and write in one step under a lock
of every process): a change never writes back what another process stored meanwhile as it was before.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.auth.utils import (
    issuers_match,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
)

from .._values.secrets import SecretHandle
from .._values.secrets import register as register_secrets
from .token_store import RecordChange, TokenStorage, update_record

__all__ = ["Draft", "Secrets", "StoredTokens"]


logger = logging.getLogger("mcp_sync")


class Secrets:
    """Every secret value an auth object has seen, registered until `release()`."""

    def __init__(self) -> None:
        self._handles: list[SecretHandle] = []
        self._lock = threading.Lock()

    def keep(self, *values: str | None) -> None:
        handle = register_secrets(value for value in values if value)
        with self._lock:
            self._handles.append(handle)

    def release(self) -> None:
        with self._lock:
            handles, self._handles = self._handles, []
        for handle in handles:
            handle.release()


class StoredTokens:
    """The SDK's (async) token storage over one record of a `TokenStorage`; registers what it sees as secrets.

    Client registrations are kept by the authorization server that issued them (`registrations`, by
    issuer), beside the one in use (`client_info`): a server that moves to another authorization server
    registers there, and one that moves back finds its registration. `fixed_client`: a configured client
    (id and secret), offered instead of any registration. `redirect_uri`: a registration made for another
    redirect address is not offered (the sign-in registers again), since the authorization server would
    refuse it.
    """

    def __init__(
        self,
        storage: TokenStorage,
        key: str,
        secrets: Secrets,
        *,
        redirect_uri: str | None = None,
        fixed_client: OAuthClientInformationFull | None = None,
    ) -> None:
        self._storage = storage
        self._key = key
        self._secrets = secrets
        self._redirect_uri = redirect_uri
        self.fixed_client = fixed_client
        self.expires_at: float | None = None
        self.metadata: OAuthMetadata | None = None
        # The access token this object last read or wrote: a different one in the store is another process's.
        self._seen: str | None = None

    def _load(self) -> dict[str, Any]:
        return self._storage.load(self._key) or {}

    async def get_tokens(self) -> OAuthToken | None:
        return self.read_tokens()

    def read_tokens(self) -> OAuthToken | None:
        record = self._load()
        tokens = record.get("tokens")
        if not isinstance(tokens, dict):
            return None
        try:
            token = OAuthToken.model_validate(tokens)
        except ValueError:
            return None
        self._secrets.keep(token.access_token, token.refresh_token)
        self._seen = token.access_token
        expires_at = record.get("expires_at")
        self.expires_at = float(expires_at) if isinstance(expires_at, int | float) else None
        metadata = record.get("oauth_metadata")
        try:
            self.metadata = OAuthMetadata.model_validate(metadata) if isinstance(metadata, dict) else None
        except ValueError:
            self.metadata = None
        return token

    def newer_tokens(self) -> OAuthToken | None:
        """The stored tokens if they are not the ones this object last read or wrote (another process
        refreshed or signed in since), else None."""
        stored = self._load().get("tokens")
        if not isinstance(stored, dict) or stored.get("access_token") in (None, self._seen):
            return None
        return self.read_tokens()

    def _update(self, change: RecordChange) -> None:
        update_record(self._storage, self._key, change)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._secrets.keep(tokens.access_token, tokens.refresh_token)
        had_tokens = self._seen is not None
        self._seen = tokens.access_token

        def change(record: dict[str, Any]) -> dict[str, Any] | None:
            if had_tokens and not record.get("tokens"):
                # Signed out elsewhere (`logout`) since these tokens were read: a refresh does not sign in.
                logger.info("the stored tokens were deleted meanwhile; the refreshed ones are not stored")
                return None
            record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
            record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in is not None else None
            return record

        self._update(change)

    def _usable(self, info: Any) -> OAuthClientInformationFull | None:
        if not isinstance(info, dict):
            return None
        try:
            client = OAuthClientInformationFull.model_validate(info)
        except ValueError:
            return None
        if self._redirect_uri is not None and self._redirect_uri not in {
            str(u) for u in client.redirect_uris or ()
        }:
            return None
        self._secrets.keep(client.client_secret)
        return client

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.fixed_client is not None:
            return self.fixed_client
        return self._usable(self._load().get("client_info"))

    def registration_for(self, issuer: str) -> OAuthClientInformationFull | None:
        """The stored registration made at the authorization server `issuer`, if any."""
        registrations = self._load().get("registrations")
        if self.fixed_client is not None or not isinstance(registrations, dict):
            return None
        return next(
            (
                client
                for stored_issuer, info in registrations.items()
                if issuers_match(stored_issuer, issuer) and (client := self._usable(info)) is not None
            ),
            None,
        )

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._secrets.keep(client_info.client_secret)
        info = client_info.model_dump(mode="json", exclude_none=True)

        def change(record: dict[str, Any]) -> dict[str, Any]:
            record["client_info"] = info
            if client_info.issuer is not None:
                registrations = record.get("registrations")
                registrations = dict(registrations) if isinstance(registrations, dict) else {}
                registrations[client_info.issuer] = info
                record["registrations"] = registrations
            return record

        self._update(change)

    def save_metadata(self, metadata: OAuthMetadata | None) -> None:
        """Keep the authorization server's endpoints with the tokens: a later run refreshes at the right one
        without discovering them first."""
        if metadata is None:
            return
        endpoints = metadata.model_dump(mode="json", exclude_none=True)

        def change(record: dict[str, Any]) -> dict[str, Any] | None:
            if not record:
                return None
            record["oauth_metadata"] = endpoints
            return record

        self._update(change)

    def dpop_key(self) -> str:
        """The client's DPoP private key (PEM), made and kept with the tokens the first time (by whichever
        process gets there first: the others take its key)."""
        kept: list[str] = []

        def change(record: dict[str, Any]) -> dict[str, Any] | None:
            pem = record.get("dpop_key")
            if isinstance(pem, str):
                kept.append(pem)
                return None
            key = ec.generate_private_key(ec.SECP256R1())
            record["dpop_key"] = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ).decode()
            kept.append(record["dpop_key"])
            return record

        self._update(change)
        return kept[-1]

    def required_scope(self) -> str | None:
        """The scopes a server asked for (a 403 insufficient_scope) that the next sign-in must request."""
        scope = self._load().get("required_scope")
        return scope if isinstance(scope, str) and scope else None

    def require_scope(self, scope: str) -> None:
        def change(record: dict[str, Any]) -> dict[str, Any]:
            record["required_scope"] = scope
            return record

        self._update(change)


class Draft:
    """A `TokenStorage` of one record held in memory until `commit()`, so that a sign-in replaces the
    stored tokens only once it succeeded. It starts from the stored record without its tokens: the
    client registrations and the endpoints are reused, and the sign-in is a new one."""

    def __init__(self, storage: TokenStorage, key: str) -> None:
        self._storage = storage
        self._key = key
        stored = storage.load(key) or {}
        self._record = {name: value for name, value in stored.items() if name not in ("tokens", "expires_at")}
        # The scopes this sign-in asks for beyond its configuration's (a server asked for them before it).
        self._asked_scope = stored.get("required_scope")
        self._lock = threading.Lock()

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return dict(self._record) if self._record else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        with self._lock:
            self._record = dict(record)

    def delete(self, key: str) -> None:
        with self._lock:
            self._record = {}

    def update(self, key: str, change: RecordChange) -> dict[str, Any] | None:
        with self._lock:
            changed = change(dict(self._record))
            if changed is not None:
                self._record = dict(changed)
            return dict(self._record) if self._record else None

    def commit(self) -> None:
        """Replace the stored tokens with this sign-in's, in one update: what other processes stored meanwhile
        and this sign-in did not decide (registrations at other authorization servers, scopes a server asked
        for since it began, a DPoP key when it used none) stays."""
        with self._lock:
            draft = dict(self._record)
        asked = self._asked_scope

        def change(current: dict[str, Any]) -> dict[str, Any]:
            record = dict(draft)
            record.pop("required_scope", None)  # asked for now
            later = current.get("required_scope")
            if isinstance(later, str) and later and later != asked:
                record["required_scope"] = later
            theirs, ours = current.get("registrations"), record.get("registrations")
            if isinstance(theirs, dict):
                record["registrations"] = {**theirs, **(ours if isinstance(ours, dict) else {})}
            if "dpop_key" not in record and isinstance(current.get("dpop_key"), str):
                record["dpop_key"] = current["dpop_key"]
            return record

        update_record(self._storage, self._key, change)
