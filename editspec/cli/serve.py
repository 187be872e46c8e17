"""``editspec serve``: load the models, the spelling dictionary and ERRANT, then open the port.

    editspec serve --port 8081            # http://127.0.0.1:8081/ the page, /v2/check for clients

Everything loads before uvicorn binds, so a client that can connect gets answers at full speed
(``GET /health`` says ready). uvicorn handles SIGTERM and Ctrl-C: it stops accepting, lets the
requests in flight finish, then the app's lifespan stops the batcher.
"""

from __future__ import annotations

import sys

def run_serve(args) -> int:
    from editspec.errors import EditspecError

    try:  # the optional extra: a one-line error, not a traceback, when it is missing
        import uvicorn

        from editspec.serve.app import create_app
    except ImportError as e:
        raise EditspecError(f"editspec serve needs the serve extra ({e.name} is missing): "
                            f"pip install 'editspec[serve]'")
    for name, value, low in (("--port", args.port, 0), ("--max-chars", args.max_chars, 1),
                             ("--max-batch", args.max_batch, 1), ("--batch-wait-ms", args.batch_wait_ms, 0)):
        if value < low:
            raise EditspecError(f"{name} must be at least {low}")
    # imported here, not at the top: bad options fail before seconds of torch
    from editspec.cli import corrector_from_args
    from editspec.text import error_types
    from editspec.text.spelling import load_speller

    corrector = corrector_from_args(args)
    if corrector.spelling:
        load_speller()
    error_types.annotator()
    corrector.correct_detailed(["Warm up."])  # first-call costs (kernels, caches) before the port opens
    info = {"mode": corrector.mode, "device": str(corrector.device), "max_chars": args.max_chars}
    app = create_app(corrector.correct_detailed, info=info, max_chars=args.max_chars,
                     max_batch=args.max_batch, max_wait=args.batch_wait_ms / 1000,
                     cors_origins=args.cors_origin or ())
    print(f"editspec: serving {corrector.mode} on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=args.graceful_timeout)
    return 0
