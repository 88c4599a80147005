"""Where privgate keeps what is private to the data owner, and how it protects it.

A release folder is meant to be shared; the ε ledger, the release history, person mappings and
cached stage results are not. They live in one *privgate data directory*, chosen by
configuration and never derived from a release's ``--output`` folder, so no command-line option
can point a run at an empty ledger or history:

``PRIVGATE_DATA_DIR``
    The data directory. Default: ``$XDG_DATA_HOME/privgate``, else ``~/.local/share/privgate``.

Folders made here are ``0700`` and files ``0600``, whatever the process umask: only the owner
of the process that runs the releases can read them.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "data_dir",
    "ensure_private_dir",
    "restrict_file",
]

#: Mode of every private folder privgate creates (owner only).
PRIVATE_DIR_MODE = 0o700
#: Mode of every private file privgate writes (owner read/write only).
PRIVATE_FILE_MODE = 0o600


def data_dir() -> Path:
    """The privgate data directory (not created; see :func:`ensure_private_dir`).

    ``PRIVGATE_DATA_DIR`` if set, else ``$XDG_DATA_HOME/privgate``, else
    ``~/.local/share/privgate``; always an absolute path.
    """
    configured = os.environ.get("PRIVGATE_DATA_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return (base / "privgate").resolve()


def ensure_private_dir(path: str | Path) -> Path:
    """Create ``path`` (and missing parents) and make it ``0700``; return it.

    The mode is set explicitly after creation because ``mkdir(mode=...)`` is masked by the
    umask. An existing folder is tightened to ``0700`` too: a folder holding private state that
    others can list is a finding, not a preference.
    """
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    os.chmod(folder, PRIVATE_DIR_MODE)
    return folder


def restrict_file(path: str | Path) -> Path:
    """Make an existing file ``0600`` (owner read/write only); return it."""
    os.chmod(path, PRIVATE_FILE_MODE)
    return Path(path)
