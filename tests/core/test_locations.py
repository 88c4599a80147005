"""The privgate data directory: configured, never derived from an output folder, owner-only."""

import os
import stat

from privgate.core.locations import data_dir, ensure_private_dir, restrict_file


def test_data_dir_comes_from_configuration(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(tmp_path / "owner"))
    assert data_dir() == (tmp_path / "owner").resolve()
    monkeypatch.delenv("PRIVGATE_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == (tmp_path / "xdg" / "privgate").resolve()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_dir() == (tmp_path / "home" / ".local" / "share" / "privgate").resolve()


def test_private_folders_and_files_are_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0o000)
    try:
        folder = ensure_private_dir(tmp_path / "a" / "b")
        (tmp_path / "open").mkdir(mode=0o777)
        tightened = ensure_private_dir(tmp_path / "open")
        file = folder / "ledger.sqlite"
        file.write_text("x")
        restrict_file(file)
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(tightened.stat().st_mode) == 0o700
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
