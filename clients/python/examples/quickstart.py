from sandman import Sandman, SandmanError

sm = Sandman()  # reads SANDMAN_URL and SANDMAN_API_KEY
session = sm.sessions.create(
    template="web",
    app={"port": 3000, "start_command": "python3 -m http.server $PORT"},
)
sm.sessions.wait_until_ready(session.id, timeout=60)

# A browser gets a client token, never the API key.
token = sm.client_tokens.create(session.id)
print("open", sm.sessions.open_url(session.id, token.token), "channel", token.ws_url)

sm.sessions.pause(session.id)
resumed = sm.sessions.resume(session.id, wait_ready=True)
print("preview", resumed.preview_url)

try:
    sm.sessions.activity("ses_aaaaaaaaaaaaaaaaaaaaaaaaaa")
except SandmanError as e:
    print(e.status, e.error_type, e.message)  # 404 not_found session … not found
sm.sessions.delete(session.id)
