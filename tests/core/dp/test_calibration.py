"""MST/AIM budget searches kept on disk: found by the public setting only, never trusted.

A kept file spares a process the budget search (ρ, MST's measure split, a rehearsal on an empty
table). It must hold nothing derived from the records, every release made with it must draw
fresh OpenDP noise, and a file that was corrupted, written for another setting or altered must
never lower the noise: it is ignored (searched again) or refused by OpenDP's own privacy map.
Two columns of real Adult records keep each search short; the properties do not depend on the
width of the table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.dp import _calibration, synthetic
from privgate.core.dp.journal import JournaledAccountant
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.synthetic import SyntheticConfig, SyntheticDomains, synthesize

#: Two OpenDP MST budget searches and a few releases: slow under load.
pytestmark = pytest.mark.slow

COLUMNS = ["sex", "salary-class"]
KEYS = {"sex": ["Female", "Male"], "salary-class": ["<=50K", ">50K"]}
DOMAINS = SyntheticDomains(columns=COLUMNS, categorical=KEYS, numeric={}, integer=frozenset())
CONFIG = SyntheticConfig("mst", 1.0, 1e-6)


@pytest.fixture(scope="module")
def adult(shared_data) -> pd.DataFrame:
    frame = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    return frame[COLUMNS].reset_index(drop=True)


def _release(records: pd.DataFrame, ledger: BudgetLedger, release_id: str):
    """One journaled MST release: (result, the draw's journal text)."""
    accountant = JournaledAccountant(ledger, "adult", release_id, "run-1", budget=(1.0, 1e-6))
    result = synthesize(records, DOMAINS, CONFIG, accountant)
    (draw,) = ledger.draws("adult", release_id)
    return result, draw.value


def _ledger(folder: Path) -> BudgetLedger:
    ledger = BudgetLedger(f"sqlite:///{folder / 'ledger.sqlite'}")
    ledger.open_account("adult", 10.0, 1e-4)
    return ledger


class _Searches:
    """Counts the budget searches actually run (not found kept)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        search = synthetic._search_budget

        def counted(*args, **kwargs):
            self.count += 1
            return search(*args, **kwargs)

        monkeypatch.setattr(synthetic, "_search_budget", counted)


@pytest.fixture
def kept_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty calibration directory for this test; nothing kept in the process."""
    folder = tmp_path / "calibration"
    monkeypatch.setenv(_calibration.ENVIRONMENT, str(folder))
    synthetic._kept_search.cache_clear()
    yield folder
    synthetic._kept_search.cache_clear()


@pytest.fixture(scope="module")
def searched(adult, tmp_path_factory):
    """One release whose budget search found a torn file under its setting's name, ignored it,
    searched and replaced it: (file name, file text, result, searches run)."""
    folder = tmp_path_factory.mktemp("calibration")
    document = _calibration.setting_document(COLUMNS, KEYS, CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_calibration.ENVIRONMENT, str(folder))
        _calibration.store(document, 0.5, CONFIG.mst_measure_split)
        (path,) = folder.glob("*.json")
        whole = path.read_text()
        path.write_text(whole[: len(whole) // 2])  # a torn write
        assert _calibration.load(document) is None
        searches = _Searches(patch)
        synthetic._kept_search.cache_clear()
        result, _ = _release(adult.iloc[:1500], _ledger(folder), "r1")
        synthetic._kept_search.cache_clear()
    assert [p.name for p in folder.glob("*.json")] == [path.name]
    return path.name, path.read_text(), result, searches.count


@pytest.fixture(scope="module")
def kept_releases(searched, adult, tmp_path_factory):
    """Two releases of *other* records of the same policy by a process that has only the kept
    file (nothing kept in memory): (folder, searches run, [(result, draw text), ...], every
    call of :func:`~privgate.core.dp.synthetic._from_kept` as (arguments, what it returned))."""
    name, text, _, _ = searched
    folder = tmp_path_factory.mktemp("kept")
    (folder / name).write_text(text)
    checked: list[tuple] = []
    from_kept = synthetic._from_kept

    def recorded(*args):
        checked.append((args, from_kept(*args)))
        return checked[-1][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_calibration.ENVIRONMENT, str(folder))
        patch.setattr(synthetic, "_from_kept", recorded)
        searches = _Searches(patch)
        synthetic._kept_search.cache_clear()
        ledger = _ledger(folder)
        other = adult.iloc[1500:4000]
        releases = [_release(other, ledger, "r2"), _release(other, ledger, "r3")]
        synthetic._kept_search.cache_clear()
    return folder, searches.count, releases, checked


def test_the_kept_file_is_the_public_setting_and_the_search_result_only(
    searched, kept_releases
) -> None:
    """The file is the declared setting (built here without any record) plus ρ and the split;
    releasing *other* records of the same policy finds it, runs no search and leaves it as is."""
    name, text, first, _ = searched
    data = json.loads(text)
    assert set(data) == {"setting", "rho", "mst_measure_split"}
    assert data["setting"] == _calibration.setting_document(COLUMNS, KEYS, CONFIG)
    assert data["rho"] == first.rho
    assert data["mst_measure_split"] == first.settings["mst_measure_split"]
    folder, searches, releases, _ = kept_releases
    assert searches == 0
    assert [p.name for p in folder.glob("*.json")] == [name]
    assert (folder / name).read_text() == text
    for other, _ in releases:
        assert (other.rho, other.spend) == (first.rho, first.spend)


def test_releases_from_a_kept_search_draw_fresh_noise_within_the_budget(
    searched, kept_releases
) -> None:
    """Two releases of the same records from the one measurement rebuilt from the file."""
    _, _, first, _ = searched
    _, searches, [(one, text_one), (two, text_two)], _ = kept_releases
    assert searches == 0
    assert text_one != text_two  # fresh OpenDP noise on the same records
    assert one.spend == two.spend == first.spend
    assert one.spend.epsilon <= 1.0 and one.spend.delta <= 1e-6


def test_a_corrupted_file_is_ignored_searched_again_and_replaced(searched) -> None:
    """The module's release found a torn file under its setting's name (written before it ran,
    unreadable by :func:`~privgate.core.dp._calibration.load`): it ran the search and replaced
    the file with the search's result, which the release was drawn at."""
    _, text, first, searches = searched
    assert searches == 1
    data = json.loads(text)
    assert data["setting"] == _calibration.setting_document(COLUMNS, KEYS, CONFIG)
    assert (data["rho"], data["mst_measure_split"]) == (
        first.rho,
        first.settings["mst_measure_split"],
    )


def test_an_altered_result_never_lowers_the_noise(searched, kept_releases, monkeypatch) -> None:
    """A ρ or split no search could have returned is refused before anything is built, and a
    ρ that passed those checks but not OpenDP's privacy map (simulated: the search's ceiling
    raised) is refused by the map; the kept result itself rebuilds the release's measurement
    (the one check the module's kept releases made: their first release, with nothing in
    memory, rebuilt it from the file; the second used it from memory)."""
    _, text, first, _ = searched
    data = json.loads(text)
    rho, split = data["rho"], data["mst_measure_split"]
    keys = {name: list(values) for name, values in KEYS.items()}
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, rho * 1.001, split) is None  # more ρ
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, rho * 0.5, split) is None  # less ρ
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, rho, 0.95) is None  # split > 0.9
    *_, checked = kept_releases
    ((arguments, kept),) = checked
    assert arguments == (COLUMNS, keys, CONFIG, rho, split)
    measurement, kept_rho, epsilon, delta, chosen = kept
    assert (kept_rho, epsilon, delta) == (first.rho, first.spend.epsilon, first.spend.delta)
    assert chosen.mst_measure_split == split
    assert epsilon <= CONFIG.epsilon and delta <= CONFIG.delta
    ceiling = synthetic._rho_for(CONFIG.epsilon, CONFIG.delta)
    monkeypatch.setattr(synthetic, "_rho_for", lambda epsilon, delta: 1.5 * ceiling)
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, 1.5 * ceiling, split) is None


def test_a_file_written_for_another_setting_is_not_read(searched, kept_dir) -> None:
    name, text, _, _ = searched
    kept_dir.mkdir()
    data = json.loads(text)
    data["setting"] = _calibration.setting_document(
        COLUMNS, KEYS, SyntheticConfig("mst", 2.0, 1e-6)
    )
    (kept_dir / name).write_text(json.dumps(data))
    assert _calibration.load(_calibration.setting_document(COLUMNS, KEYS, CONFIG)) is None
    data["setting"] = _calibration.setting_document(COLUMNS, KEYS, CONFIG)
    data["rho"] = "0.5"  # not a float
    (kept_dir / name).write_text(json.dumps(data))
    assert _calibration.load(data["setting"]) is None
