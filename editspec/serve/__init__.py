"""``editspec serve``: corrections over HTTP (native JSON, LanguageTool's /v2, a web page).

``app.py`` the Starlette app, ``batching.py`` concurrent requests corrected together,
``languagetool.py`` the /v2 compatibility, ``page/index.html`` the page. Needs the ``serve`` extra
(``pip install "editspec[serve]"``: Starlette and uvicorn).
"""
