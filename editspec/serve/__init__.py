"""``editspec serve``: corrections over HTTP (native JSON, LanguageTool's /v2, a web page).

``app.py`` the Starlette app, ``batching.py`` concurrent requests corrected together,
``bounds.py`` what one text may cost (over-long units left as written), ``languagetool.py`` the
/v2 compatibility, ``guard.py`` Host/Origin checks and the body deadline, ``server.py`` the
uvicorn pieces (header deadline, shutdown notice), ``page/index.html`` the page. Needs the ``serve`` extra
(``pip install "editspec[serve]"``: Starlette and uvicorn).
"""
