"""A configurable MCP server for the mcp_sync test suite, built on the `mcp` 2.x SDK.

Run as ``python fixture_server.py [flags]``. One process serves one transport.

Flags
-----
--transport stdio|http|sse
                         stdio (default), Streamable HTTP on 127.0.0.1 at path ``/mcp``, or the
                         legacy HTTP+SSE transport (the SDK's ``sse_app``) on 127.0.0.1: the event
                         stream at ``/sse``, messages POSTed to ``/messages/``. Every tool works over
                         each; ``http_error`` and ``get_header`` as over HTTP (the error answers the
                         message POST).
--port N                 HTTP or SSE port; 0 (default) picks a free one. Once listening the server
                         prints exactly one line ``LISTENING <port>`` to stdout.
--era modern|legacy      modern (default): a normal 2.x server; a ``mode="auto"`` client
                         negotiates 2026-07-28. legacy: a handshake-era (2025) server that
                         answers ``server/discover`` with METHOD_NOT_FOUND, so the client
                         falls back to ``initialize`` at once (see `FixtureMiddleware`).
--events PATH            append one JSON object per line to PATH, flushed at once:
                         ready, started / cancelled / finished (``sleep``), list_tools,
                         tool_added, tool_removed, announced, crashing, exit_scheduled,
                         stdin_closed, signal. ``ready`` holds the server's ``pid`` and its
                         ``client_pid``: the process its client started (the warm launcher's
                         shim when the server was warm-launched, else the server itself).
--ignore-signals         ignore SIGTERM and SIGINT (recorded as ``signal`` events) and, on
                         stdio, keep running after stdin closes: a server that must be killed.
--tools N                add N extra tools ``t00000`` ... each with a description and a
                         small input schema (``value: str = ""``; returns the value).
--page-size P            ``tools/list`` pages hold P tools, chained by ``nextCursor``
                         (default 0: one page with everything).
--duplicate-listing      the listing repeats the tool name ``echo`` (an invalid listing).
--endless-cursor         every ``tools/list`` page carries a fresh ``nextCursor``, forever;
                         pages after the real listing are empty.
--garbage-stdout         (stdio only) write non-JSON lines, a truncated JSON line and a
                         non-JSON-RPC object to stdout before and after the first response.
--invalid-utf8     (stdio only) before the first response, write one line that is not valid UTF-8
                         (bytes 0xff 0xfe inside it), then answer normally.
--stderr-lines K         write K lines ``fixture stderr line <i>`` to stderr at start-up.
--stdout-banner K        (stdio only) write K lines ``fixture banner line <i>`` to stdout at start-up,
                         before serving: a server that prints a banner where its messages go.
--resources N            add N extra resources ``fixture://extra/00000`` ... (text/plain);
                         ``--page-size`` pages ``resources/list`` and ``prompts/list`` too.
--no-subscribe           do not offer resource subscriptions (2025: no ``resources/subscribe``
                         and ``subscribe: false``; 2026-07-28: ``resourceSubscriptions`` refused).
--hold-subscriptions     (2026-07-28) hold a ``subscriptions/listen`` that names resources unanswered
                         (``listen_held``): a subscription the server never acknowledges.
--untyped-results        ``tools/call`` results leave out ``resultType`` (which means "complete").
--elicit-defaults        add the tool ``ask_defaults()``: elicits a form whose every field has a
                         ``default`` and is required (so a client that leaves one out is refused);
                         returns "accept <content JSON>", "decline" or "cancel".
--fail-listings N        the first N ``tools/list`` answer with an error (``list_tools_failed``),
                         as the ``fail_listings`` tool does later: a server whose first listing fails.
--exit-during-handshake  exit at once (status 5, ``exiting`` event) on the first handshake request
                         (``server/discover`` or ``initialize``), before answering it.
--helper quiet|inherit   (stdio only) at start-up, start a helper process (a python that sleeps) in
                         this server's process group, recorded as ``helper_started`` with its pid.
                         quiet: its stdin and stdout are /dev/null and it shares stderr; inherit: it
                         shares all three pipes (so the server's output does not end when the
                         server dies). With ``--ignore-signals`` the helper ignores SIGTERM too.
--hold-start PATH        before serving, wait until PATH exists (``holding`` event): a server that
                         is slow to start, for as long as the test wants.
--echo-in-errors         ``get_env`` and ``get_header`` answer with a JSON-RPC error (not a result)
                         whose message holds the value, as a server that echoes a rejected
                         credential back does.
--refuse-messages STATUS (http, sse) answer every POST with that HTTP status and an echoing error
                         (as ``http_error`` does), from the first one on: over SSE the event stream
                         opens, but no message gets through (a message endpoint that refuses the
                         credentials).
--stderr-env NAME        write ``fixture config NAME=<value>`` to stderr at start-up, as a server
                         that prints its configuration does.
--refuse-method METHOD   answer every METHOD request (``resources/templates/list``, say) with
                         METHOD_NOT_FOUND (``method_refused``), as a 1.x-SDK server without a
                         handler for it does; may be given more than once.
--fail-method METHOD     answer every METHOD request with INTERNAL_ERROR (``method_failed``).

--record-calls           record every ``tools/call`` as a ``called`` event (``tool``, ``arguments``), as
                         it arrives: how many times the server was asked to run a tool.
--json-response          (http) answer each request with one JSON body instead of an event stream.
--tls CERT KEY           (http, sse) serve HTTPS with the PEM certificate CERT and its key KEY; the
                         ``LISTENING`` line is the same (the address starts ``https://``).
--media                  add the tool ``media()``: text "two pictures and a clip", two 1x1 PNG
                         images, a JPEG image (bytes ``jpeg-bytes``), a WAV audio clip (bytes
                         ``wav-bytes``), an embedded binary resource ``fixture://blob/report``
                         (application/pdf, bytes ``pdf-bytes``) and an embedded text resource.

Resources, templates, prompts
-----------------------------
fixture://text/readme (text/plain "fixture readme"), fixture://blob/pixel (image/png, a 1x1 PNG);
template fixture://items/{item} ("item <item>"; completions for ``item``: apple, apricot, banana);
prompts greet(name, style="plain") -> one user message; review(code) -> a user message with the
code, an embedded text resource, and an assistant message; completions for greet's ``style``:
plain, formal, pirate. 2025 sessions may ``resources/subscribe`` (recorded as ``subscribed``).
Template fixture://slow/{tag} sleeps 30 s (events started / cancelled / finished with the tag).
Template fixture://env-error/{name} fails with a JSON-RPC error holding that variable's value.
A 2025 client's ``notifications/roots/list_changed`` is recorded as ``roots_changed``.

Tools
-----
echo(text) -> text                       add(a, b) -> a + b
    echo, add, get_env, get_cwd, pid, the ``--tools`` extras and the tools ``add_tool`` adds return
    structured content too (``{"result": ...}``, under the output schema their return type gives);
    the other tools return content only.
blocks() -> text "first", text "second", a 1x1 PNG image, text "third"
fail(message) -> an ``isError: true`` result carrying the message
sleep(seconds, tag="") -> sleeps (anyio), recording started / cancelled / finished events
progress(steps, delay=0.0) -> ``steps`` progress notifications (i, steps, "step i"), then "done"
add_tool(name) / remove_tool(name) -> change the tool set and announce it the way the
    negotiated era wants (2025: ``notifications/tools/list_changed``; 2026-07-28: the
    subscription bus, i.e. ``subscriptions/listen`` streams). An added tool takes
    ``text: str = ""`` and returns it.
announce(n) -> announce a tools change n times in a burst, changing nothing
get_header(name) -> the HTTP request header as received, or "<unset>"
break_listing() -> from now on ``tools/list`` repeats ``echo`` (an invalid listing); announces it
fail_listings(n) -> the next n ``tools/list`` answer with an error (``list_tools_failed`` events); announces
delay_listings(seconds, announce=True) -> later ``tools/list`` answers wait ``seconds``
    (``list_tools_delayed``); announces a change unless told not to; a later call ends the waits in
    progress at once (a test holds a listing, then lets it go)
crash() -> ``os._exit(3)`` while the call is in flight
crash_by_signal(name="SIGTERM") -> the process sends itself that signal while the call is in flight
exit_later(delay) -> returns "ok", then ``os._exit(4)`` ``delay`` seconds later (an idle crash)
echo_meta() -> the request's ``_meta`` as received, as JSON (e.g. the ``traceparent`` a traced client sent)
framework_names(config, run_manager="", callbacks="") -> the three arguments as JSON: names agent frameworks
    use for their own parameters (LangChain's StructuredTool._run takes ``config`` and ``run_manager``)
get_env(name) -> the variable's value or "<unset>";  get_cwd() -> os.getcwd();  pid() -> os.getpid()
fail_with_env(name) -> a JSON-RPC error (not a result) whose message and data hold the variable's value,
    as a careless server's error might
http_error(status) -> over HTTP the request is answered with that HTTP status and a JSON-RPC error that
    echoes the request's Authorization and X-Api-Key headers and its query string back
    (`EchoingErrorRoute`); the same for ``resources/read`` of ``fixture://http-error/<status>``
add_resource(name, text) / remove_resource(name) -> resource fixture://dynamic/<name> comes or goes,
    announced like tools (2025: notifications/resources/list_changed; 2026-07-28: the bus)
add_prompt(name) / remove_prompt(name) -> the same for a prompt (no arguments, one user message)
announce_update(uri) -> announce that the resource changed (2025: to sessions that subscribed to it;
    2026-07-28: on the bus, to listen streams that subscribed to it)
ask_name() -> elicits {name: str, age: int}; returns "accept <content JSON>", "decline" or "cancel"
ask_sample(prompt) -> asks the client's model (sampling); returns "sampled <model>: <text>"
ask_roots() -> asks for the client's roots; returns their URIs as a JSON list
ask_unhandled() -> (2025 sessions) sends sampling/createMessage whatever the client declared;
    returns "refused <code>: <message>" with the error the client answered
log(level, message) -> one log message at that level (logger "fixture"); 2026-07-28 clients get it
    only if they asked for a log level at or below it. Recorded as ``logged`` with ``requested``, the
    log level the request asked for (2026-07-28 ``_meta``; None when absent)
notify_flood(n, kind="log") -> n notifications as fast as possible: "log" (notifications/message;
    on 2026-07-28 only delivered to a client that opted in with a log level), "progress"
    (needs a progress token) or "tools_changed" (announcements); returns "sent <n>"
"""

import sys
from pathlib import Path

# `python fixture_server.py` puts this folder first on sys.path; a runner by path (runpy.run_path,
# a wrapper script) does not.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from fixture_app import main  # noqa: E402

if __name__ == "__main__":
    main()
