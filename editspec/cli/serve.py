"""``editspec serve``: load the models, the spelling dictionary and ERRANT, then open the port.

    editspec serve --port 8081            # http://127.0.0.1:8081/ the page, /v2/check for clients

Everything loads before uvicorn binds, so a client that can connect gets answers at full speed
(``GET /health`` says ready). Connections are bounded with uvicorn's own settings
(``limit_concurrency``: 503 beyond it; ``timeout_keep_alive``; ``backlog``;
``h11_max_incomplete_event_size``) plus a deadline on request headers (serve/server.py) and on
request bodies (serve/guard.py). On SIGTERM or Ctrl-C uvicorn stops accepting and lets the
requests in flight finish for ``--graceful-timeout`` seconds; the app answers 503 to those that
cannot finish in time (serve/app.py ``Shutdown``), then the app's lifespan stops the batcher.
"""

from __future__ import annotations

import argparse
import functools
import os
import socket
import sys

from editspec.cli.model_options import add_correction_options, add_model_options


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``serve`` subcommand with its options (the model options included)."""
    p = sub.add_parser("serve", help="correction server: JSON API, LanguageTool's /v2 API, a web page")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    p.add_argument("--port", type=int, default=8081, help="TCP port to listen on")
    p.add_argument("--allow-host", action="append", default=None, metavar="NAME",
                   help="also answer requests whose Host header names NAME (repeatable; * for any; "
                        "default: localhost, 127.0.0.1 and [::1] only, against DNS rebinding)")
    p.add_argument("--allow-origin", "--cors-origin", dest="allow_origin", action="append", default=None,
                   metavar="ORIGIN",
                   help="allow browser pages of this origin (https://example.org) to call the API "
                        "(repeatable; * for any; default: only the server's own page)")
    p.add_argument("--max-chars", type=int, default=20000, help="most characters in one request (else 413)")
    p.add_argument("--max-sentence-chars", type=int, default=1000,
                   help="a longer sentence is left as written (no matches), which bounds what one "
                        "request costs")
    p.add_argument("--max-batch", type=int, default=32, help="most texts corrected together")
    p.add_argument("--batch-wait-ms", type=float, default=2.0,
                   help="how long an idle server waits for more requests to batch with the first")
    p.add_argument("--max-length", type=int, default=None,
                   help="longest model input in tokens with EOS (default: the models' training length)")
    p.add_argument("--graceful-timeout", type=float, default=30.0,
                   help="on SIGTERM, seconds to let requests in flight finish (those that cannot "
                        "get 503)")
    p.add_argument("--limit-concurrency", type=int, default=256,
                   help="most open connections and requests at once; beyond, 503 at once")
    p.add_argument("--backlog", type=int, default=256, help="most connections waiting to be accepted")
    p.add_argument("--timeout-keep-alive", type=float, default=5.0,
                   help="seconds an idle keep-alive connection stays open")
    p.add_argument("--header-timeout", type=float, default=10.0,
                   help="seconds a connection has to send a request's headers (else closed)")
    p.add_argument("--body-timeout", type=float, default=10.0,
                   help="seconds a request has to send its body (else 408)")
    p.add_argument("--reuse-port", action="store_true",
                   help="bind with SO_REUSEPORT, so that several editspec serve processes share one port (Linux "
                        "spreads the connections between them): e.g. two processes with --threads 1 on 2 cores")
    p.add_argument("--alternatives", action="store_true",
                   help="each suggestion also lists the T5's n-best replacements of its span (LanguageTool's "
                        "replacements, up to 3; /v1: alternatives): a beam search besides each correction, about "
                        "2x the time a request takes (reports/confidence.md), so off by default")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                   help="uvicorn's log level (each request is logged at info)")
    add_model_options(p)
    add_correction_options(p)
    return p


def run_serve(args) -> int:
    from editspec.errors import EditspecError

    try:  # the optional extra: a one-line error, not a traceback, when it is missing
        import uvicorn

        from editspec.serve.app import Limits, create_app
        from editspec.serve.server import Server, with_header_timeout
    except ImportError as e:
        raise EditspecError(f"editspec serve needs the serve extra ({e.name} is missing): "
                            f"pip install 'editspec[serve]'")
    for name, value, low in (("--port", args.port, 0), ("--max-chars", args.max_chars, 1),
                             ("--max-sentence-chars", args.max_sentence_chars, 1),
                             ("--max-batch", args.max_batch, 1), ("--batch-wait-ms", args.batch_wait_ms, 0),
                             ("--graceful-timeout", args.graceful_timeout, 0),
                             ("--limit-concurrency", args.limit_concurrency, 1), ("--backlog", args.backlog, 1),
                             ("--timeout-keep-alive", args.timeout_keep_alive, 0),
                             ("--header-timeout", args.header_timeout, 0), ("--body-timeout", args.body_timeout, 0)):
        if value < low:
            raise EditspecError(f"{name} must be at least {low}")
    # imported here, not at the top: bad options fail before seconds of torch
    from editspec.cli.model_options import corrector_from_args
    from editspec.post import error_types

    corrector = corrector_from_args(args)
    corrector.prepare()  # the spelling index, the pass costs of every batch size (kept per machine)
    error_types.annotator()
    corrector.correct_detailed(["Warm up."])  # first-call costs (kernels, caches) before the port opens
    info = {"mode": corrector.mode, "device": str(corrector.device), "pid": os.getpid(), "max_chars": args.max_chars,
            "max_sentence_chars": args.max_sentence_chars, "header_timeout": args.header_timeout,
            "body_timeout": args.body_timeout}
    hosts = None if args.allow_host is None else ["localhost", "127.0.0.1", "[::1]", *args.allow_host]
    if args.alternatives and corrector.bundle.t5 is None:
        raise EditspecError("--alternatives come from the T5's beam search: mode edit5 has none")
    correct_detailed = functools.partial(corrector.correct_detailed, alternatives=2) if args.alternatives \
        else corrector.correct_detailed
    limits = Limits(args.max_chars, args.max_sentence_chars, args.body_timeout, args.max_batch,
                    args.batch_wait_ms / 1000, hosts, args.allow_origin or ())
    app = create_app(correct_detailed, limits, info=info, levels=levels(corrector))
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                            http=with_header_timeout(args.header_timeout),
                            limit_concurrency=args.limit_concurrency, backlog=args.backlog,
                            timeout_keep_alive=args.timeout_keep_alive,
                            h11_max_incomplete_event_size=16 * 1024,  # headers; bodies are bounded by the app
                            timeout_graceful_shutdown=args.graceful_timeout)
    print(f"editspec: serving {corrector.mode} on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    sockets = [reuse_port_socket(args.host, args.port, args.backlog)] if args.reuse_port else None
    Server(config, on_exit=lambda: app.state.shutdown.begin(args.graceful_timeout)).run(sockets=sockets)
    return 0


def levels(corrector) -> list[str]:
    """The levels a request may ask for: the corrector's own first, then each other it can run."""
    from editspec.config import LEVELS
    from editspec.errors import EditspecError

    out = [corrector.config.level]
    for name in LEVELS:
        try:
            if name not in out and corrector.level_of(name):
                out.append(name)
        except EditspecError:
            pass
    return out


def reuse_port_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket with SO_REUSEPORT: each process of a group binds its own, and the kernel
    hands each new connection to one of them (uvicorn's --workers would need an import string and
    load the models in processes it forks; this keeps one plain process per model copy)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock
