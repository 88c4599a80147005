"""Cache keys of the stages: which policy sections each stage's result depends on.

A stage reruns when anything it reads changes and is reused otherwise: editing a utility
threshold does not redo the anonymization, a new input file redoes everything. The rules
(:data:`STAGE_SECTIONS` and :func:`stage_tokens`) live here, beside the token itself, so the
flow only passes tokens on.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from privgate.core.policy import RANKED_ALGORITHMS, ReleasePolicy
from privgate.core.publish import sha256_file

__all__ = [
    "CODE_PACKAGES",
    "STAGE_SECTIONS",
    "PartitionedTokens",
    "StageTokens",
    "cache_token",
    "code_digest",
    "code_version",
    "partitioned_tokens",
    "stage_tokens",
    "utility_token",
]

#: The policy sections each cached stage reads (its token covers exactly these).
STAGE_SECTIONS: dict[str, tuple[str, ...]] = {
    "ingest": ("dataset", "input", "columns"),
    "rank": ("dataset", "input", "columns", "ranking"),
    "anonymize": ("dataset", "input", "columns", "privacy", "algorithm", "ranking"),
    # The partitioned path: the frequency set reads the quasi-identifiers, their hierarchies
    # and the sensitive columns the privacy models name (and refuses a k above the table);
    # its validation reads the columns, and the sensitive values the models name from the
    # frequency set; its search is the anonymize stage's.
    "frequency": ("dataset", "input", "columns", "privacy"),
    "validate-sample": ("dataset", "input", "columns", "privacy"),
}


#: privgate's subpackages whose code computes a stage's result (not tests or benchmarks).
CODE_PACKAGES = ("core", "validations", "tasks", "flows")


def code_digest(root: Path) -> str:
    """sha256 over every ``.py`` file of :data:`CODE_PACKAGES` under ``root``, each by its
    relative name and content (tests and benchmarks are not part of it)."""
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted((Path(root) / package).rglob("*.py")):
            digest.update(f"{path.relative_to(root).as_posix()}:".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.cache
def code_version() -> str:
    """The running privgate's code (:func:`code_digest` of the package's folder; computed once
    per process, about 15 ms).

    Why it is in every token: Prefect's ``TASK_SOURCE`` hashes only the task function's own
    lines, so a fix in ``core`` or ``validations`` (a schema check, the frequency set, the
    search) left every key equal, and a run retried or repeated after an upgrade took the old
    code's validation verdict or plan ``Cached`` (review9 F1).
    """
    return code_digest(Path(__file__).resolve().parent.parent)


def cache_token(policy: ReleasePolicy, input_sha256: str, *sections: str) -> str:
    """A key for a stage's cached result: the data, the policy sections the stage reads, the
    content of every file those sections name (hierarchies, the population), and the code that
    computes it (:func:`code_version`)."""
    digest = hashlib.sha256(input_sha256.encode())
    digest.update(f":code={code_version()}".encode())
    dumped = policy.model_dump(mode="json", include=set(sections) or None)
    digest.update(json.dumps(dumped, sort_keys=True).encode())
    if not sections or "columns" in sections:
        for name, spec in policy.columns.items():
            path = getattr(spec.hierarchy, "path", None)
            if path is not None and Path(path).is_file():
                digest.update(f"{name}:{sha256_file(path)}".encode())
    # What k-map and δ-presence compare the release with: a new census extract must redo the
    # search, not reuse a result searched against the old one. (The research subset's key file
    # is already in the input's fingerprint, ``stages.fingerprint_input``.)
    population = getattr(policy.privacy, "population", None)
    reads_privacy = not sections or "privacy" in sections
    if reads_privacy and population is not None and Path(population.path).is_file():
        digest.update(f"privacy.population:{sha256_file(population.path)}".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class StageTokens:
    """The cache token of every cached stage of one run."""

    ingest: str
    rank: str
    anonymize: str


def stage_tokens(policy: ReleasePolicy, input_sha256: str) -> StageTokens:
    """Every cached stage's token for this policy and input.

    The anonymization reads the ranking only when its algorithm does, and not which of the
    tiered releases are published: choosing other tiers to publish reuses the computed ones.
    """
    searched = policy
    options = policy.algorithm
    if options.release_tiers is not None or options.accept_narrower_coverage is not None:
        searched = policy.with_overrides(
            **{"algorithm.release_tiers": None, "algorithm.accept_narrower_coverage": None}
        )
    anonymize = STAGE_SECTIONS["anonymize"]
    if policy.algorithm.name not in RANKED_ALGORITHMS:
        anonymize = tuple(section for section in anonymize if section != "ranking")
    # With an attacks section the ranking and the release are made from the records left after
    # the control split: which records those are is part of what both stages read.
    held_out = _control_split(policy) + _history_search(policy)
    return StageTokens(
        ingest=cache_token(policy, input_sha256, *STAGE_SECTIONS["ingest"]),
        rank=cache_token(policy, input_sha256 + held_out, *STAGE_SECTIONS["rank"]),
        anonymize=cache_token(searched, input_sha256 + held_out, *anonymize),
    )


@dataclass(frozen=True)
class PartitionedTokens:
    """The cache token of every cached stage of one partitioned run."""

    frequency: str
    search: str
    #: The validation's token before it is told which rows it reads (:meth:`validate_sample`).
    validation: str

    def validate_sample(self, rows: str) -> str:
        """The validation's token for the rows it reads (``rows``: the sample's size, the
        table's rows and the seed, or "every row"): a new ``PRIVGATE_EXPECTATIONS_MAX_ROWS``
        or seed validates other rows, so it must not reuse the old result."""
        return hashlib.sha256(f"{self.validation}:rows={rows}".encode()).hexdigest()


def partitioned_tokens(policy: ReleasePolicy, input_sha256: str) -> PartitionedTokens:
    """Every cached stage's token on the partitioned path. The search reads what the in-memory
    anonymize stage reads (the policies this path accepts have no ranking, attacks or
    history)."""
    return PartitionedTokens(
        frequency=cache_token(policy, input_sha256, *STAGE_SECTIONS["frequency"]),
        search=stage_tokens(policy, input_sha256).anonymize,
        validation=cache_token(policy, input_sha256, *STAGE_SECTIONS["validate-sample"]),
    )


def _control_split(policy: ReleasePolicy) -> str:
    """The control split's settings as text ("" without one: older tokens unchanged)."""
    spec = policy.attacks
    if spec is None:
        return ""
    return f":control={spec.control_fraction!r}:seed={spec.seed}"


def _history_search(policy: ReleasePolicy) -> str:
    """The release history's search settings as text ("" without a history check): the
    search's k margin and the key column whose values the release table carries."""
    if policy.history_key is None or policy.history is None:
        return ""
    return f":history-key={policy.history_key}:margin={policy.history.margin!r}"


def utility_token(anonymize_token: str, policy: ReleasePolicy) -> str:
    """Cache key of the utility measurement: the release's token and the utility settings,
    not the thresholds (a changed threshold re-decides without measuring again)."""
    from privgate.core.utility import utility_spec

    settings = utility_spec(policy).model_dump(mode="json", exclude={"thresholds"})
    payload = anonymize_token + json.dumps(settings, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()
