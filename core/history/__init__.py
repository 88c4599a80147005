"""The release history and the cross-release criterion (nightly releases that stay safe together).

:class:`ReleaseHistory` keeps, privately, which person went into which published class of every
k-anonymous release of a dataset; :func:`check_cross_release` combines a new release with them
the way an attacker holding every release would, and says who would be exposed.
"""

from __future__ import annotations

from privgate.core.history._criterion import (
    CrossReleaseResult,
    CrossReleaseState,
    check_cross_release,
    exposure,
    protect_across_releases,
    release_snapshot,
)
from privgate.core.history._recover import RecordedPublished, record_published
from privgate.core.history._release import (
    HistoryEntry,
    check_entry_is_published,
    check_written_release,
    history_by_default,
    history_requirements,
    removal_budget,
    searched_policy,
    with_history,
)
from privgate.core.history._row_keys import (
    RowKeys,
    discard_row_keys,
    find_row_keys,
    row_keys_dir,
    save_row_keys,
)
from privgate.core.history._store import (
    HISTORY_URL_VARIABLE,
    PastRelease,
    RecordedRelease,
    ReleaseHistory,
    configured_history_url,
    history_exists,
)

__all__ = [
    "HISTORY_URL_VARIABLE",
    "CrossReleaseResult",
    "CrossReleaseState",
    "HistoryEntry",
    "PastRelease",
    "RecordedPublished",
    "RecordedRelease",
    "ReleaseHistory",
    "RowKeys",
    "check_cross_release",
    "check_entry_is_published",
    "check_written_release",
    "configured_history_url",
    "discard_row_keys",
    "find_row_keys",
    "exposure",
    "history_by_default",
    "history_exists",
    "history_requirements",
    "protect_across_releases",
    "record_published",
    "release_snapshot",
    "removal_budget",
    "row_keys_dir",
    "save_row_keys",
    "searched_policy",
    "with_history",
]
