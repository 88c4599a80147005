"""Row keys: kept owner-only for exactly one release file, refused for any other."""

from __future__ import annotations

import stat

import pytest

from privgate.core.exceptions import HistoryError
from privgate.core.history import discard_row_keys, find_row_keys, row_keys_dir, save_row_keys


def test_row_keys_are_found_only_for_the_file_they_were_written_for(tmp_path, _private_data_dir):
    published = tmp_path / "release.csv"
    published.write_text("age,diagnosis\n20-29,flu\n20-29,hiv\n")
    path = save_row_keys("hospital", "2026-11-02-abc", published, ["S1", "S2"], "subject_id")
    assert path.parent == row_keys_dir("hospital")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    found = find_row_keys("hospital", "2026-11-02-abc", published)
    assert found.keys == ("S1", "S2") and found.key == "subject_id"

    retried = tmp_path / "retry.csv"  # the same release id, another run's file
    retried.write_text("age,diagnosis\n20-29,hiv\n20-29,flu\n")
    with pytest.raises(HistoryError, match="no row keys match the published file"):
        find_row_keys("hospital", "2026-11-02-abc", retried)
    with pytest.raises(HistoryError, match="written for other files"):
        find_row_keys("hospital", "2026-11-02-abc", retried, keys_file=path)
    with pytest.raises(HistoryError, match="none was kept"):
        find_row_keys("hospital", "2026-11-03-def", published)
    assert discard_row_keys("hospital", "2026-11-02-abc") == 1
    with pytest.raises(HistoryError, match="none was kept"):
        find_row_keys("hospital", "2026-11-02-abc", published)
