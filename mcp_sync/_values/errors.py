"""The exceptions mcp_sync raises; catch `MCPSyncError` to catch them all.

    MCPSyncError
    ├── ConfigError               bad configuration: names the entry and the field
    │   └── UnresolvedInputError      a host file's `${input:ID}` that nothing gave a value for
    ├── AuthError                 signing in to a server failed
    │   └── SignInRequiredError       the server needs a sign-in (none yet, or it expired or was revoked)
    ├── ServerStartError          a `required: true` server failed to start
    ├── ToolListError             a server's tools/list was invalid (repeated name, collision, endless cursor)
    ├── ToolNotFoundError         no tool by that public name (also a LookupError)
    ├── ResourceNotFoundError     no server lists that resource URI (also a LookupError)
    ├── AmbiguousResourceError    several servers list it, or only a template matches: name the server
    ├── PromptNotFoundError       no prompt by that public name (also a LookupError)
    ├── UnsupportedFeatureError   the server does not offer it (subscriptions, completions, roots)
    └── ToolCallError             a call ended without a result
        ├── ToolCallTimeoutError      the timeout ran out (also a TimeoutError)
        ├── ToolCallCancelledError    the caller cancelled it
        ├── ServerDisconnectedError   the server went away before it answered
        │   └── ToolCallMayHaveRunError   the connection broke after the call was sent: it may have run
        ├── TaskNotFoundError         the server does not know that task (never existed, expired, dropped)
        ├── TaskCancelRefusedError    the server refused to cancel the task (it may still be running)
        └── ToolApprovalError         the tool waits for a person's approval, and none was given
            ├── ToolApprovalRequiredError   the hub has no `approve` callback to ask with
            └── ToolApprovalDeniedError     the approver said no (or failed)

A tool that runs and fails is not an exception: it is a `ToolResult` with
`is_error=True`, which is what a model should see.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AmbiguousResourceError",
    "AuthError",
    "ConfigError",
    "MCPSyncError",
    "PromptNotFoundError",
    "ResourceNotFoundError",
    "ServerDisconnectedError",
    "ServerStartError",
    "SignInRequiredError",
    "TaskCancelRefusedError",
    "TaskNotFoundError",
    "ToolApprovalDeniedError",
    "ToolApprovalError",
    "ToolApprovalRequiredError",
    "ToolCallCancelledError",
    "ToolCallError",
    "ToolCallMayHaveRunError",
    "ToolCallTimeoutError",
    "ToolListError",
    "ToolNotFoundError",
    "UnresolvedInputError",
    "UnsupportedFeatureError",
]


class MCPSyncError(Exception):
    """Base class of every error mcp_sync raises."""


class ConfigError(MCPSyncError, ValueError):
    """The configuration is invalid; the message names the entry and the field, never a secret."""


class UnresolvedInputError(ConfigError):
    """A host file's `${input:ID}` (VS Code's inputs) that no inputs handler and no environment
    variable gave a value for; `input_ids` names them."""

    def __init__(self, message: str, input_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.input_ids = input_ids


class AuthError(MCPSyncError):
    """Signing in to a server failed: refused, timed out, or the authorization server misbehaved."""


class SignInRequiredError(AuthError):
    """The server needs a user to sign in first (`hub.login(name)`, `mcp-sync login CONFIG NAME`)."""


class ServerStartError(MCPSyncError):
    """One or more servers marked `required` failed to start; `failures` maps name to cause."""

    def __init__(self, message: str, failures: dict[str, BaseException] | None = None) -> None:
        super().__init__(message)
        self.failures: dict[str, BaseException] = dict(failures or {})


class ToolListError(MCPSyncError):
    """A server's tool listing was rejected; the previous generation stays registered."""


class ToolNotFoundError(MCPSyncError, LookupError):
    """No tool is registered under that public name; `reason` says why, when that can be told."""

    def __init__(self, name: str, reason: str | None = None) -> None:
        super().__init__(f"unknown tool {name!r}" + (f": {reason}" if reason else ""))
        self.name = name
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0])


class ToolCallError(MCPSyncError):
    """A tool call ended without a result: the server answered with a protocol error, or see subclasses.
    `tool` is the tool's public name (None where it is not known), `code` the server's JSON-RPC error
    code, `task_id` the task's id when the call ran as a task (a task's id is no secret)."""

    def __init__(
        self, message: str, *, tool: str | None = None, code: int | None = None, task_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.code = code
        self.task_id = task_id


class ToolCallTimeoutError(ToolCallError, TimeoutError):
    """The call's timeout ran out; the request was cancelled on the server."""


class ToolCallCancelledError(ToolCallError):
    """The caller cancelled the call; the request was cancelled on the server."""


class ServerDisconnectedError(ToolCallError):
    """The server's connection closed (process exited, transport failed, hub closed) during the call."""


class ToolCallMayHaveRunError(ServerDisconnectedError):
    """The connection broke after the call was sent and before its answer came: the server may have run
    it. It was not sent again (the tool is not marked safe to repeat, or the replay broke too); whether
    to call it again is the caller's decision (`replayed` says whether it was already sent twice). A
    `ServerDisconnectedError`, as a lost connection during a call always was; the server may well be
    `ready` still (a network blip)."""

    def __init__(self, message: str, *, tool: str | None = None, replayed: bool = False) -> None:
        super().__init__(message, tool=tool)
        self.replayed = replayed


class TaskNotFoundError(ToolCallError):
    """The server does not know the task (it never existed, expired or was dropped); `server` and
    `task_id` name it (a task's id is no secret)."""

    task_id: str

    def __init__(self, message: str, *, server: str, task_id: str, tool: str | None = None) -> None:
        super().__init__(message, tool=tool, task_id=task_id)
        self.server = server

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self.args, self.__dict__)


class TaskCancelRefusedError(ToolCallError):
    """The server refused to cancel the task (`tasks/cancel` answered with an error other than "the task
    already ended"): the task may still be running. `server` and `task_id` name it; `code` and `reason`
    are the server's."""

    task_id: str

    def __init__(
        self,
        message: str,
        *,
        server: str,
        task_id: str,
        reason: str,
        code: int | None = None,
        tool: str | None = None,
    ) -> None:
        super().__init__(message, tool=tool, code=code, task_id=task_id)
        self.server = server
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self.args, self.__dict__)


class ToolApprovalError(ToolCallError):
    """The tool's configuration says a person approves each call first (`Tool.requires_approval`), and
    no one did: the call was not sent. The arguments are never part of the message."""


class ToolApprovalRequiredError(ToolApprovalError):
    """No one could be asked: the hub has no `approve` callback."""


class ToolApprovalDeniedError(ToolApprovalError):
    """The hub's `approve` callback said no, or failed (then its exception is the cause)."""


class ResourceNotFoundError(MCPSyncError, LookupError):
    """No server offers that resource URI (or the one named answered that it does not exist)."""


class AmbiguousResourceError(MCPSyncError, LookupError):
    """Several servers offer that resource URI, or it is only matched by templates: name the server."""


class PromptNotFoundError(MCPSyncError, LookupError):
    """No prompt is listed under that public name."""


class UnsupportedFeatureError(MCPSyncError):
    """The server (or its configuration) does not support what was asked: subscriptions, completions."""


def describe(exc: BaseException) -> str:
    """`Type: message`, or the type alone when the message is empty."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """Unpickle an error whose `__init__` takes keyword-only fields: made without it, its state set back
    (errors cross processes pickled: `concurrent.futures.ProcessPoolExecutor`, `multiprocessing`)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error
