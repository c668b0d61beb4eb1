"""JupyterHub for one Everything Leaks class: one instructor (who grades), many students.

nbgrader's "one class, one grader" set-up (nbgrader docs, "Using nbgrader with
JupyterHub"): every account is a real Unix account (PAM log-in), each user's server runs as
that account, the instructor's server holds the course directory and the formgrader, and
submissions travel through nbgrader's exchange folder, protected by Unix permissions.

Every path and name can be changed by an environment variable (README: "A class on
JupyterHub"); the defaults are those of a real server:

  EVERYTHING_LEAKS_PREFIX   /opt/everything-leaks  Python environment + Jupyter set-ups (hub/install)
  EVERYTHING_LEAKS_STATE    /srv/everything-leaks  the hub's database and cookie secret (root only)
  NBGRADER_EXCHANGE         /srv/nbgrader/exchange nbgrader's exchange (mode 1777: hub/install)
  EVERYTHING_LEAKS_GROUP    everything-leaks       Unix group of everyone who may log in
  EVERYTHING_LEAKS_INSTRUCTORS  everything-leaks-instructors  Unix group of the instructor
  EVERYTHING_LEAKS_COURSE   everything-leaks       course directory, in the instructor's home
  EVERYTHING_LEAKS_PORT     8000                   the hub's port, on 127.0.0.1 only
"""

import grp
import os
import pwd
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREFIX = Path(os.environ.get("EVERYTHING_LEAKS_PREFIX", "/opt/everything-leaks"))
STATE = Path(os.environ.get("EVERYTHING_LEAKS_STATE", "/srv/everything-leaks"))
EXCHANGE = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
CLASS_GROUP = os.environ.get("EVERYTHING_LEAKS_GROUP", "everything-leaks")
INSTRUCTOR_GROUP = os.environ.get("EVERYTHING_LEAKS_INSTRUCTORS", "everything-leaks-instructors")
COURSE = os.environ.get("EVERYTHING_LEAKS_COURSE", "everything-leaks")
PORT = int(os.environ.get("EVERYTHING_LEAKS_PORT", "8000"))

c = get_config()  # noqa: F821 (injected by traitlets)

# Loopback only. On a real server, put a TLS reverse proxy (nginx, Caddy) in front.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = PORT
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = PORT + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 2}"
# configurable-http-proxy from the npm registry, installed in hub/node_modules (hub/install).
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")

# Real Unix accounts, checked by PAM; only members of the class's group may log in.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {CLASS_GROUP, INSTRUCTOR_GROUP}
c.Authenticator.admin_users = set()  # nobody administers the hub through the web

# Each user's server runs as that account, from the class's Python environment.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(PREFIX / "venv" / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120


def is_instructor(name: str) -> bool:
    try:
        return name in grp.getgrnam(INSTRUCTOR_GROUP).gr_mem
    except KeyError:
        return False


def set_up(spawner):
    """The instructor set-up for the instructor, the student set-up for everyone else.

    JUPYTER_CONFIG_PATH adds a Jupyter configuration folder (prefix/jupyter/<role>) that
    outranks the environment's own, so nbgrader's extensions installed in the environment
    are turned off for students there; nbgrader reads its nbgrader_config.py there too.
    """
    name = spawner.user.name
    role = "instructor" if is_instructor(name) else "student"
    env = spawner.environment
    env["JUPYTER_CONFIG_PATH"] = str(PREFIX / "jupyter" / role)
    env["NBGRADER_EXCHANGE"] = EXCHANGE
    # `course`, `nbgrader` and `alembic` (run by nbgrader) by name in terminals and kernels.
    # (Terminals run a non-login bash, jupyter/<role>/jupyter_server_config.json: a login
    # shell's /etc/profile would reset PATH on Debian.)
    env["PATH"] = f"{PREFIX / 'venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    if role == "instructor":
        # The course directory: `course grade` in a terminal and nbgrader both find it.
        env["COURSE_ROOT"] = str(Path(pwd.getpwnam(name).pw_dir) / COURSE)


c.Spawner.pre_spawn_hook = set_up

# The formgrader, open in its own tab (see the README), links an assignment's folders and
# notebooks to /tree/..., /notebooks/... and /edit/... at the site's root (nbgrader's
# utils.js `linkTo`, written for a server at the root): on a hub those reach the Hub,
# which answers 404. They are sent on to the same path on the user's own server
# (JupyterHub's /hub/user-redirect/). Deprecated in JupyterHub 3.1 for services, still
# served; a service would need a port and a token of its own for three redirects.
from tornado.web import RedirectHandler  # noqa: E402

c.JupyterHub.extra_handlers = [
    (r"/(tree|notebooks|edit)/(.*)", RedirectHandler, {"url": "/hub/user-redirect/{0}/{1}"})
]
