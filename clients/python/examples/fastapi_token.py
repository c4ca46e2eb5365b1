"""POST /api/sandbox-token: a FastAPI-style endpoint that gives the signed-in
user's page a client token for that user's own session. The page hands the
token to sandman.js or opens open_url; it never sees the API key.

With FastAPI:

    from fastapi import Depends, FastAPI
    app = FastAPI()
    app.post("/api/sandbox-token")(sandbox_token)  # user_id: str | None = Depends(current_user)

The function itself needs no framework: the tests call it directly.
"""

from __future__ import annotations

from sandman import Sandman, SandmanError

try:
    from fastapi import HTTPException  # type: ignore[import-not-found]
except ImportError:  # the same shape, so the example runs without FastAPI

    class HTTPException(Exception):  # type: ignore[no-redef]
        def __init__(self, status_code: int, detail: str) -> None:
            super().__init__(detail)
            self.status_code = status_code
            self.detail = detail


sandman = Sandman()  # SANDMAN_URL and SANDMAN_API_KEY from the server's environment

#: Your database: the Sandman session you stored for each user when you created it.
SESSIONS: dict[str, str] = {}


def current_user(cookie: str | None) -> str | None:
    """Your auth (a FastAPI dependency): here the user id of a `user` cookie."""
    for part in (cookie or "").split(";"):
        k, _, v = part.strip().partition("=")
        if k == "user" and v:
            return v
    return None


def sandbox_token(user_id: str | None) -> dict[str, str | None]:
    if user_id is None:
        raise HTTPException(401, "sign in first")
    session_id = SESSIONS.get(user_id)
    if session_id is None:
        raise HTTPException(404, "you have no session")
    try:
        t = sandman.client_tokens.create(session_id, ttl_seconds=900)
    except SandmanError as e:
        if e.error_type == "not_found":
            raise HTTPException(404, "your session is gone") from e
        raise  # FastAPI answers 500 and logs it
    return {
        "session_id": session_id,
        "token": t.token,
        "expires_at": t.expires_at,
        "ws_url": t.ws_url,
        "open_url": sandman.sessions.open_url(session_id, t.token),
    }
