"""`AuthConfig`: how a Streamable HTTP server is signed in to, as written in the configuration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, Field, field_validator
from pydantic_core import PydanticCustomError

from .fields import MASK, NESTED_CONFIG, scope_tuple


class AuthConfig(BaseModel):
    """How a Streamable HTTP server is signed in to: `oauth` (a user signs in once, in a browser;
    authorization code with PKCE), `client_credentials` (a service account, no user present, with a
    client secret), `private_key_jwt` (the same, the client proving itself with a JWT signed by its
    private key: `private_key_file`, or `private_key` given as a `${VAR}` reference, never inline),
    `jwt_bearer` (workload identity: a JWT the platform issued to the workload, `assertion_file` or
    `assertion`, is the grant) or `identity_assertion` (enterprise-managed: the user's ID token is
    exchanged at the identity provider's `idp_token_endpoint` for an identity assertion grant, which the
    authorization server `issuer` takes with the client's id and secret).

    `client_id` is optional for `oauth` (the client registers itself when the server allows it, or
    names itself by `client_metadata_url` when the authorization server reads client metadata documents);
    `client_secret` is a secret (never shown in a repr, a log line or an error).
    `token_endpoint_auth_method` forces how the client authenticates at the token endpoint (default: the
    one the authorization server advertises). `dpop: true` asks for proof-of-possession tokens (DPoP).
    """

    model_config = NESTED_CONFIG

    type: Literal["oauth", "client_credentials", "private_key_jwt", "jwt_bearer", "identity_assertion"]
    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = Field(default=None, min_length=1, repr=False)
    scopes: Annotated[tuple[str, ...], BeforeValidator(scope_tuple)] = ()
    redirect_port: int | None = Field(default=None, ge=1, le=65535)
    issuer: str | None = Field(default=None, min_length=1)
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    client_metadata_url: str | None = Field(default=None, min_length=1)
    private_key: str | None = Field(default=None, min_length=1, repr=False)
    private_key_file: str | None = Field(default=None, min_length=1)
    signing_algorithm: str | None = Field(default=None, min_length=1)
    assertion: str | None = Field(default=None, min_length=1, repr=False)
    assertion_file: str | None = Field(default=None, min_length=1)
    idp_token_endpoint: str | None = Field(default=None, min_length=1)
    idp_client_id: str | None = Field(default=None, min_length=1)
    idp_client_secret: str | None = Field(default=None, min_length=1, repr=False)
    dpop: bool = False

    @field_validator("client_metadata_url")
    @classmethod
    def _metadata_url_is_https(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise PydanticCustomError("config", "client_metadata_url must be an https:// URL with a path")
        return value

    @field_validator("client_secret")
    @classmethod
    def _secret_needs_id(cls, value: str | None, info: Any) -> str | None:
        if value is not None and info.data.get("client_id") is None:
            raise PydanticCustomError("config", "a client_secret needs its client_id")
        return value

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        yield from super().__repr_args__()
        if self.client_secret is not None:
            yield "client_secret", MASK
        for name in ("private_key", "assertion", "idp_client_secret"):
            if getattr(self, name) is not None:
                yield name, MASK
