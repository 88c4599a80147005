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
    """One release whose search was kept on disk: (file name, file text, result)."""
    folder = tmp_path_factory.mktemp("calibration")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_calibration.ENVIRONMENT, str(folder))
        synthetic._kept_search.cache_clear()
        result, _ = _release(adult.iloc[:1500], _ledger(folder), "r1")
        synthetic._kept_search.cache_clear()
    (path,) = folder.glob("*.json")
    return path.name, path.read_text(), result


def test_the_kept_file_is_the_public_setting_and_the_search_result_only(
    searched, adult, kept_dir, monkeypatch
) -> None:
    """The file is the declared setting (built here without any record) plus ρ and the split;
    releasing *other* records of the same policy finds it, runs no search and leaves it as is."""
    name, text, first = searched
    data = json.loads(text)
    assert set(data) == {"setting", "rho", "mst_measure_split"}
    assert data["setting"] == _calibration.setting_document(COLUMNS, KEYS, CONFIG)
    assert data["rho"] == first.rho
    assert data["mst_measure_split"] == first.settings["mst_measure_split"]
    kept_dir.mkdir()
    (kept_dir / name).write_text(text)
    searches = _Searches(monkeypatch)
    other, _ = _release(adult.iloc[1500:4000], _ledger(kept_dir), "r2")
    assert searches.count == 0
    assert [p.name for p in kept_dir.glob("*.json")] == [name]
    assert (kept_dir / name).read_text() == text
    assert (other.rho, other.spend) == (first.rho, first.spend)


def test_releases_from_a_kept_search_draw_fresh_noise_within_the_budget(
    searched, adult, kept_dir, monkeypatch
) -> None:
    name, text, first = searched
    kept_dir.mkdir()
    (kept_dir / name).write_text(text)
    searches = _Searches(monkeypatch)
    ledger = _ledger(kept_dir)
    records = adult.iloc[:1500]
    one, text_one = _release(records, ledger, "r1")
    two, text_two = _release(records, ledger, "r2")
    assert searches.count == 0
    assert text_one != text_two  # fresh OpenDP noise on the same records
    assert one.spend == two.spend == first.spend
    assert one.spend.epsilon <= 1.0 and one.spend.delta <= 1e-6


def test_a_corrupted_file_is_ignored_searched_again_and_replaced(
    searched, kept_dir, monkeypatch
) -> None:
    """What a release asks for first (:func:`~privgate.core.dp.synthetic._budgeted_measurement`
    of its declared setting): with a torn file it searches again and gets the search's result.
    No draw is made: what follows the search in a release does not read the file (the releases
    above draw from a kept one)."""
    name, text, first = searched
    kept_dir.mkdir()
    (kept_dir / name).write_text(text[: len(text) // 2])  # a torn write
    searches = _Searches(monkeypatch)
    keys = {name: list(values) for name, values in KEYS.items()}
    _, rho, epsilon, delta, chosen = synthetic._budgeted_measurement(COLUMNS, keys, CONFIG)
    assert searches.count == 1
    assert (rho, epsilon, delta) == (first.rho, first.spend.epsilon, first.spend.delta)
    assert chosen.mst_measure_split == first.settings["mst_measure_split"]
    assert json.loads((kept_dir / name).read_text()) == json.loads(text)


def test_an_altered_result_never_lowers_the_noise(searched, monkeypatch) -> None:
    """A ρ or split no search could have returned is refused before anything is built, and a
    ρ that passed those checks but not OpenDP's privacy map (simulated: the search's ceiling
    raised) is refused by the map; the kept result itself rebuilds the release's measurement."""
    _, text, first = searched
    data = json.loads(text)
    rho, split = data["rho"], data["mst_measure_split"]
    keys = {name: list(values) for name, values in KEYS.items()}
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, rho * 1.001, split) is None  # more ρ
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, rho * 0.5, split) is None  # less ρ
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, rho, 0.95) is None  # split > 0.9
    measurement, kept_rho, epsilon, delta, chosen = synthetic._from_kept(
        COLUMNS, keys, CONFIG, rho, split
    )
    assert (kept_rho, epsilon, delta) == (first.rho, first.spend.epsilon, first.spend.delta)
    assert chosen.mst_measure_split == split
    assert epsilon <= CONFIG.epsilon and delta <= CONFIG.delta
    ceiling = synthetic._rho_for(CONFIG.epsilon, CONFIG.delta)
    monkeypatch.setattr(synthetic, "_rho_for", lambda epsilon, delta: 1.5 * ceiling)
    assert synthetic._from_kept(COLUMNS, keys, CONFIG, 1.5 * ceiling, split) is None


def test_a_file_written_for_another_setting_is_not_read(searched, kept_dir) -> None:
    name, text, _ = searched
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
