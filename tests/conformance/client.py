"""The client program the MCP conformance suite runs (one process per scenario), on mcp_sync's public API.

The suite starts it as `python client.py SERVER_URL` with `MCP_CONFORMANCE_SCENARIO` (the scenario's name)
and, where a scenario needs credentials, `MCP_CONFORMANCE_CONTEXT` (JSON) in its environment, then checks
what reached its server and its authorization server. Each scenario does what the suite's reference client
does for it, through an `MCPHub` with one Streamable HTTP server. Exit status 0 means the client finished
its part; the suite decides pass or fail from its own checks.

Sign-in scenarios go through `auth:` configuration and `hub.login(..., open_url=...)`: the suite's
authorization server answers the authorization URL with a redirect carrying the code, so a scripted
"browser" GETs that URL and follows the redirect to mcp_sync's loopback listener.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from mcp_sync import (
    ElicitationRequest,
    ElicitationResponse,
    MCPHub,
    MCPSyncError,
    SignInRequiredError,
    Tool,
    ToolResult,
)

SERVER = "conformance"
# What a scenario's server may need per call (the suite's own per-scenario bound is larger).
CALL_TIMEOUT = 20.0
# How long the scripted browser waits for the authorization server and the loopback listener.
BROWSER_TIMEOUT = 15.0
# The bound of one sign-in: discovery, registration, the scripted browser and the token exchange.
SIGN_IN_TIMEOUT = 30.0
# The client's own client metadata document (its URL is its client id where the authorization server reads
# such documents); the suite's authorization servers expect this one.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# Sign-ins one action may ask for (a first one, then one for more scopes or another authorization server):
# more would loop on a server that never accepts.
SIGN_IN_ATTEMPTS = 2

logger = logging.getLogger("conformance-client")


# -- pieces the scenarios share --------------------------------------------------------------------------


class MemoryTokenStorage:
    """Tokens for one run only: each scenario starts signed out and leaves nothing behind."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._records.get(key)
            return dict(record) if record is not None else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        with self._lock:
            self._records[key] = dict(record)

    def delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)


def scripted_browser(url: str) -> None:
    """Open the authorization URL like a browser would: the authorization server redirects at once to the
    loopback listener with the code, and urllib follows that redirect."""
    try:
        with urllib.request.urlopen(url, timeout=BROWSER_TIMEOUT) as response:
            response.read()
    except Exception as exc:  # the sign-in then fails on its own timeout, with the reason logged here
        logger.error("the scripted browser could not follow the authorization URL: %s", exc)


def context() -> dict[str, Any]:
    """The scenario's context (credentials and the like) from `MCP_CONFORMANCE_CONTEXT`."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        raise SystemExit("MCP_CONFORMANCE_CONTEXT is not set")
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise SystemExit("MCP_CONFORMANCE_CONTEXT is not a JSON object")
    return value


def server_entry(url: str, auth: Mapping[str, Any] | None = None, *, required: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "server_name": SERVER,
        "transport": "streamable-http",
        "url": url,
        # start() raises with the cause instead of leaving a failed server behind; a server signed in to
        # is left failed, to be signed in to.
        "required": required,
        "connect_timeout_ms": int(CALL_TIMEOUT * 1000),
        "tool_call_timeout_ms": int(CALL_TIMEOUT * 1000),
    }
    if auth is not None:
        entry["auth"] = dict(auth)
    return entry


def tool(hub: MCPHub, raw_name: str) -> Tool:
    found = next((t for t in hub.tools() if t.raw_name == raw_name), None)
    if found is None:
        raise MCPSyncError(f"the server has no tool {raw_name!r}; it has {[t.raw_name for t in hub.tools()]}")
    return found


def call(hub: MCPHub, raw_name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
    result = hub.call_tool(tool(hub, raw_name).name, dict(arguments or {}))
    logger.info("%s -> is_error=%s text=%r", raw_name, result.is_error, result.text[:200])
    return result


def accept_with(content: Mapping[str, Any]) -> Callable[[ElicitationRequest], ElicitationResponse]:
    def handler(request: ElicitationRequest) -> ElicitationResponse:
        logger.info("elicitation: %s", request.message)
        return ElicitationResponse.accept(content)

    return handler


# -- the scenarios ----------------------------------------------------------------------------------------


def basic(url: str) -> None:
    """Connect, list the tools, call the first one with the arguments the suite's servers expect."""
    with MCPHub([server_entry(url)]) as hub:
        tools = [t for t in hub.tools() if t.server_name == SERVER]
        if tools:
            hub.call_tool(tools[0].name, {"a": 2, "b": 3})


def list_only(url: str) -> None:
    """Connect and list the tools, nothing else (the scenario's server answers nothing more)."""
    with MCPHub([server_entry(url)]) as hub:
        logger.info("tools: %s", [t.raw_name for t in hub.tools()])


def json_schema_preservation(url: str) -> None:
    """Echo the observed input schema of the focal tool back to the server, which diffs it."""
    with MCPHub([server_entry(url)]) as hub:
        schema = tool(hub, "json_schema_2020_12_tool").input_schema
        call(hub, "json_schema_echo", {"schema": dict(schema)})


def elicitation_defaults(url: str) -> None:
    """Accept the elicitation with no fields: the client must fill in the schema's defaults."""
    with MCPHub([server_entry(url)], elicitation=accept_with({})) as hub:
        call(hub, "test_client_elicitation_defaults")


def sse_retry(url: str) -> None:
    """Call the tool whose response stream the server closes mid-call; the result comes after reconnecting."""
    with MCPHub([server_entry(url)]) as hub:
        call(hub, "test_reconnection")


def request_state(url: str) -> None:
    """Input-required results (SEP-2322): answer the elicitations, keep each call's state to itself, and take
    a result without `resultType` as complete."""
    with MCPHub([server_entry(url)], elicitation=accept_with({"confirmed": True})) as hub:
        call(hub, "test_mrtr_echo_state")
        call(hub, "test_mrtr_unrelated")
        call(hub, "test_mrtr_no_state")
        call(hub, "test_mrtr_no_result_type")


def everything(url: str) -> None:
    """Exercise each kind of request once: tools, resources and prompts (the header scenarios inspect
    each). The tool calls are the context's `toolCalls` when it names them, else each tool without
    arguments."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    planned = json.loads(raw).get("toolCalls") if raw else None
    with MCPHub([server_entry(url)]) as hub:
        if isinstance(planned, list):
            calls = [(str(c["name"]), dict(c.get("arguments") or {})) for c in planned]
        else:
            calls = [(t.raw_name, {}) for t in hub.tools() if t.server_name == SERVER]
        for name, arguments in calls:
            try:
                call(hub, name, arguments)
            except MCPSyncError as exc:
                logger.info("%s failed: %s", name, exc)
        resources = hub.resources()
        if resources:
            hub.read_resource(resources[0].uri, server=SERVER)
        prompts = hub.prompts()
        if prompts:
            hub.get_prompt(prompts[0].name)


def _signed_in_hub(url: str, auth: Mapping[str, Any]) -> MCPHub:
    hub = MCPHub([server_entry(url, auth)], token_storage=MemoryTokenStorage())
    if auth["type"] == "oauth":
        hub.login(SERVER, open_url=scripted_browser, timeout=SIGN_IN_TIMEOUT)
    return hub


def login(hub: MCPHub) -> None:
    hub.login(SERVER, open_url=scripted_browser, timeout=SIGN_IN_TIMEOUT)


def with_sign_in(hub: MCPHub, action: Callable[[], object]) -> None:
    """Do `action`, signing in first when the server needs it, and again when it asks for a new sign-in
    (more scopes, another authorization server): what an application does with `SignInRequiredError`."""
    for _ in range(SIGN_IN_ATTEMPTS):
        if isinstance(hub.servers[SERVER].error, SignInRequiredError):
            logger.info("sign-in needed: %s", hub.servers[SERVER].error)
            login(hub)
            continue
        try:
            action()
            return
        except MCPSyncError as exc:
            # A call cut short because its server needs a sign-in fails with the server's error as its text.
            cause = exc if isinstance(exc, SignInRequiredError) else hub.servers[SERVER].error
            if not isinstance(cause, SignInRequiredError):
                raise
            logger.info("sign-in needed: %s", cause)
            login(hub)
    action()


def oauth(url: str, **options: object) -> None:
    """Sign in (authorization code with PKCE) when the server asks, then list the tools and call
    `test-tool`, signing in again when a request asks for more."""
    auth = {"type": "oauth", "client_metadata_url": CLIENT_METADATA_URL, **options}
    with MCPHub([server_entry(url, auth, required=False)], token_storage=MemoryTokenStorage()) as hub:
        with_sign_in(hub, lambda: call(hub, "test-tool"))


def pre_registration(url: str) -> None:
    """Sign in with the pre-registered client id and secret (no dynamic registration), then list."""
    ctx = context()
    auth = {"type": "oauth", "client_id": ctx["client_id"], "client_secret": ctx["client_secret"]}
    with _signed_in_hub(url, auth) as hub:
        logger.info("tools: %s", [t.raw_name for t in hub.tools()])


def client_credentials_basic(url: str) -> None:
    """A service account: client id and secret, no user; then list the tools."""
    ctx = context()
    auth = {
        "type": "client_credentials",
        "client_id": ctx["client_id"],
        "client_secret": ctx["client_secret"],
    }
    with _signed_in_hub(url, auth) as hub:
        logger.info("tools: %s", [t.raw_name for t in hub.tools()])


def client_credentials_jwt(url: str) -> None:
    """A service account proving itself with a JWT signed by its private key (private_key_jwt); the key
    reaches the configuration through an environment variable, as a key must."""
    ctx = context()
    os.environ["CONFORMANCE_PRIVATE_KEY"] = ctx["private_key_pem"]
    auth = {
        "type": "private_key_jwt",
        "client_id": ctx["client_id"],
        "private_key": "${CONFORMANCE_PRIVATE_KEY}",
    }
    if ctx.get("signing_algorithm"):
        auth["signing_algorithm"] = ctx["signing_algorithm"]
    with _signed_in_hub(url, auth) as hub:
        logger.info("tools: %s", [t.raw_name for t in hub.tools()])


def oauth_dpop(url: str) -> None:
    """The same with proof-of-possession tokens (DPoP)."""
    oauth(url, dpop=True)


def workload_identity(url: str) -> None:
    """A workload presenting the JWT its platform issued as a jwt-bearer grant (SEP-1933)."""
    ctx = context()
    os.environ["CONFORMANCE_WORKLOAD_JWT"] = ctx["valid_jwt"]
    auth = {"type": "jwt_bearer", "client_id": ctx["client_id"], "assertion": "${CONFORMANCE_WORKLOAD_JWT}"}
    with _signed_in_hub(url, auth) as hub:
        logger.info("tools: %s", [t.raw_name for t in hub.tools()])


def authorization_server_of(url: str) -> str:
    """The authorization server the protected resource names (an identity assertion client is configured
    with it, as a deployment would be)."""
    parts = urllib.parse.urlsplit(url)
    metadata_url = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    with urllib.request.urlopen(metadata_url, timeout=BROWSER_TIMEOUT) as response:
        return str(json.loads(response.read())["authorization_servers"][0])


def identity_assertion(url: str) -> None:
    """Enterprise-managed authorization (SEP-990): the user's ID token exchanged at the identity provider
    for an identity assertion grant, presented to the authorization server with the client's secret."""
    ctx = context()
    os.environ["CONFORMANCE_ID_TOKEN"] = ctx["idp_id_token"]
    os.environ["CONFORMANCE_CLIENT_SECRET"] = ctx["client_secret"]
    auth = {
        "type": "identity_assertion",
        "client_id": ctx["client_id"],
        "client_secret": "${CONFORMANCE_CLIENT_SECRET}",
        "issuer": authorization_server_of(url),
        "token_endpoint_auth_method": "client_secret_basic",
        "idp_token_endpoint": ctx["idp_token_endpoint"],
        "idp_client_id": ctx["idp_client_id"],
        "assertion": "${CONFORMANCE_ID_TOKEN}",
    }
    with _signed_in_hub(url, auth) as hub:
        call(hub, "test-tool")


SCENARIOS: dict[str, Callable[[str], None]] = {
    "initialize": basic,
    "tools_call": basic,
    "tools-call": basic,
    "json-schema-ref-no-deref": list_only,
    "request-metadata": list_only,
    "json-schema-2020-12-preservation": json_schema_preservation,
    "elicitation-defaults": elicitation_defaults,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": everything,
    "http-custom-headers": everything,
    "http-invalid-tool-headers": everything,
    "auth/pre-registration": pre_registration,
    "auth/client-credentials-basic": client_credentials_basic,
    "auth/client-credentials-jwt": client_credentials_jwt,
    "auth/wif-jwt-bearer": workload_identity,
    "auth/dpop": oauth_dpop,
    "auth/dpop-nonce": oauth_dpop,
    "auth/enterprise-managed-authorization": identity_assertion,
    "auth/cross-app-access-complete-flow": identity_assertion,
}
# Every other sign-in scenario: the well-behaved authorization-code client.
OAUTH_DEFAULT = oauth


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) < 2 or not scenario:
        print("usage: MCP_CONFORMANCE_SCENARIO=NAME client.py SERVER_URL", file=sys.stderr)
        return 2
    url = argv[-1]
    handler = SCENARIOS.get(scenario) or (OAUTH_DEFAULT if scenario.startswith("auth/") else everything)
    try:
        handler(url)
    except MCPSyncError as exc:
        logger.error("scenario %s failed: %s: %s", scenario, type(exc).__name__, exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
