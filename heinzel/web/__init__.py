"""The web head (`hz system serve`): "My Heinzelmännchen", a page per Heinzelmännchen and
its sidebar chat, served on 127.0.0.1 behind a token (docs/web.md).

`auth` holds the token, the cookie, the origin and CSRF checks; `views` the pages and the
buttons; `events` the server-sent spine lines; `server` builds the Starlette application
and runs it on uvicorn. Everything is read and written through `heinzel.app.App`.
"""
