"""Anonymization algorithms behind one contract, one per private module.

Every algorithm takes a :class:`SearchInput` (the table encoded along its hierarchies, plus the
:class:`SearchSetup` with the privacy models built from the policy) and returns an
:class:`AnonymizationResult`, from which :func:`release_table` builds the release. The registry
:data:`ALGORITHMS` maps a policy's ``algorithm.name`` to its class; :func:`make_algorithm`
builds the one a setup names.

============================  ===========================================================
``optimal``                   :class:`OptimalLattice`: least-loss full-domain generalization
``heuristic``                 :class:`HeuristicLattice`: budgeted search for wide tables
``datafly``                   :class:`Datafly`: Sweeney's greedy full-domain generalization
``multi_attribute_datafly``   :class:`MultiAttributeDatafly`: Datafly, ties by skew
``mondrian``                  :class:`Mondrian`: multidimensional local recoding
``greedy_partition``          :class:`GreedyPartition`: Mondrian's regions, loss-driven cuts
``rfka``                      :class:`RFKA`: feature selection in ranking order
``tiered``                    :class:`Tiered`: the optimal search once per ranking tier
``local_recoding``            :class:`LocalRecoding`: optimal searches repeated on the rest
``local_suppression``         :class:`LocalSuppression`: the optimum, then ``*`` cells
============================  ===========================================================

A new algorithm is a module with an :class:`AnonymizationAlgorithm` subclass, one line in
:data:`ALGORITHMS` and its name in :class:`privgate.core.policy.Algorithm`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from privgate.core.anonymize._bounds import ProjectionBounds
from privgate.core.anonymize._contract import (
    AnonymizationAlgorithm,
    PlannedRelease,
    RankedAttributes,
    SearchInput,
)
from privgate.core.anonymize._datafly import (
    Datafly,
    MultiAttributeDatafly,
    approximation_degree,
    failing_tuples,
)
from privgate.core.anonymize._generalize import (
    FullDomainAlgorithm,
    apply_generalization,
    generalization_result,
)
from privgate.core.anonymize._lattice import NodeChecker
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._persons import check_person_models
from privgate.core.anonymize._release import release_columns, release_table, shuffle_rows
from privgate.core.anonymize._result import AnonymizationResult, Generalization
from privgate.core.anonymize._setup import SearchSetup, check_k
from privgate.core.exceptions import AnonymizationError
from privgate.core.policy import Algorithm, ReleasePolicy

__all__ = [
    "ALGORITHMS",
    "AnonymizationAlgorithm",
    "AnonymizationResult",
    "Datafly",
    "FeatureSelection",
    "FullDomainAlgorithm",
    "LocalRecoding",
    "LocalSuppression",
    "Generalization",
    "GreedyPartition",
    "HeuristicLattice",
    "Mondrian",
    "NodeChecker",
    "MondrianResult",
    "MultiAttributeDatafly",
    "OptimalLattice",
    "PlannedRelease",
    "ProjectionBounds",
    "RFKA",
    "RankedAttributes",
    "SearchInput",
    "SearchSetup",
    "Tiered",
    "TieredRelease",
    "algorithm_class",
    "apply_generalization",
    "approximation_degree",
    "check_k",
    "failing_tuples",
    "generalization_result",
    "binarize",
    "greedy_hamdist_select",
    "make_algorithm",
    "release_columns",
    "release_table",
    "full_domain_setup",
    "is_single_full_domain",
    "rfka_release",
    "rfka_select",
    "select_releases",
    "shuffle_rows",
    "tiered_releases",
]

if TYPE_CHECKING:
    from privgate.core.anonymize._greedy_partition import GreedyPartition
    from privgate.core.anonymize._hamdist import binarize, greedy_hamdist_select
    from privgate.core.anonymize._heuristic import HeuristicLattice
    from privgate.core.anonymize._local_recoding import LocalRecoding
    from privgate.core.anonymize._local_suppression import LocalSuppression
    from privgate.core.anonymize._mondrian import Mondrian, MondrianResult
    from privgate.core.anonymize._rfka import RFKA, FeatureSelection, rfka_release, rfka_select
    from privgate.core.anonymize._tiered import (
        Tiered,
        TieredRelease,
        select_releases,
        tiered_releases,
    )

#: Every algorithm a policy can name, as ``module:class``. The full-domain searches need only
#: numpy; the others build pandas tables and are imported on first use, so that
#: ``privgate anonymize`` starts without paying for pandas' import (~0.9 s).
ALGORITHMS: dict[Algorithm, str] = {
    Algorithm.OPTIMAL: "privgate.core.anonymize._optimal:OptimalLattice",
    Algorithm.HEURISTIC: "privgate.core.anonymize._heuristic:HeuristicLattice",
    Algorithm.DATAFLY: "privgate.core.anonymize._datafly:Datafly",
    Algorithm.MULTI_ATTRIBUTE_DATAFLY: "privgate.core.anonymize._datafly:MultiAttributeDatafly",
    Algorithm.MONDRIAN: "privgate.core.anonymize._mondrian:Mondrian",
    Algorithm.GREEDY_PARTITION: "privgate.core.anonymize._greedy_partition:GreedyPartition",
    Algorithm.RFKA: "privgate.core.anonymize._rfka:RFKA",
    Algorithm.TIERED: "privgate.core.anonymize._tiered:Tiered",
    Algorithm.LOCAL_RECODING: "privgate.core.anonymize._local_recoding:LocalRecoding",
    Algorithm.LOCAL_SUPPRESSION: "privgate.core.anonymize._local_suppression:LocalSuppression",
}

_LAZY = {
    "HeuristicLattice": "privgate.core.anonymize._heuristic",
    "binarize": "privgate.core.anonymize._hamdist",
    "greedy_hamdist_select": "privgate.core.anonymize._hamdist",
    "Mondrian": "privgate.core.anonymize._mondrian",
    "GreedyPartition": "privgate.core.anonymize._greedy_partition",
    "MondrianResult": "privgate.core.anonymize._mondrian",
    "RFKA": "privgate.core.anonymize._rfka",
    "FeatureSelection": "privgate.core.anonymize._rfka",
    "rfka_release": "privgate.core.anonymize._rfka",
    "rfka_select": "privgate.core.anonymize._rfka",
    "Tiered": "privgate.core.anonymize._tiered",
    "TieredRelease": "privgate.core.anonymize._tiered",
    "select_releases": "privgate.core.anonymize._tiered",
    "tiered_releases": "privgate.core.anonymize._tiered",
    "LocalRecoding": "privgate.core.anonymize._local_recoding",
    "LocalSuppression": "privgate.core.anonymize._local_suppression",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def algorithm_class(name: Algorithm | str) -> type[AnonymizationAlgorithm]:
    """The class registered under a policy's ``algorithm.name``."""
    module, _, cls = ALGORITHMS[Algorithm(name)].partition(":")
    return getattr(importlib.import_module(module), cls)


def make_algorithm(setup: SearchSetup) -> AnonymizationAlgorithm:
    """The algorithm a setup names, configured with its models, limits and options.

    Raises
    ------
    AnonymizationError
        A person-keyed setup with an algorithm that counts records (only the optimal search
        counts persons), or models that cannot be guaranteed per person.
    """
    if setup.person_key is not None:
        if setup.algorithm is not Algorithm.OPTIMAL:
            raise AnonymizationError(
                f"algorithm {setup.algorithm.value!r} counts records, not persons; use "
                "'optimal' with a person key"
            )
        check_person_models(setup.models)
    return algorithm_class(setup.algorithm).from_setup(setup)


def is_single_full_domain(name: Algorithm | str) -> bool:
    """Whether the algorithm makes one release by a full-domain generalization
    (:class:`FullDomainAlgorithm`, one planned release): what a search on a frequency set
    alone, applied to dictionary codes (the columnar engine), describes completely."""
    cls = algorithm_class(name)
    return issubclass(cls, FullDomainAlgorithm) and cls.plan is AnonymizationAlgorithm.plan


def full_domain_setup(policy: ReleasePolicy, where: str) -> SearchSetup:
    """The search setup of a policy a rows-free path can run, or a refusal naming ``where``.

    The engine-only command and the Dask path search a frequency set and apply the levels
    found to make one release, which only a full-domain algorithm
    (:class:`FullDomainAlgorithm`) that plans a single release describes. Mondrian, RFKA,
    tiered and differentially private releases go through ``privgate run``.
    """
    if policy.is_differentially_private:
        raise AnonymizationError(
            f"a differential_privacy policy is not available in {where}; use `privgate run`"
        )
    if policy.attacks is not None:  # its gate needs held-out records only the flow draws
        raise AnonymizationError(
            f"attacks is not available in {where} (it neither holds out control records nor "
            "runs the attacks); use `privgate run`"
        )
    if policy.privacy is not None and policy.privacy.research_subset is not None:
        raise AnonymizationError(  # it reads the whole input and would release all of it
            f"privacy.research_subset is not available in {where} (it reads and releases the "
            "whole input); use `privgate run`"
        )
    setup = SearchSetup.from_policy(policy)
    if setup.person_key is not None:
        raise AnonymizationError(
            f"privacy.person_key is not available in {where} (it counts records, not persons); "
            "use `privgate run`"
        )
    if not is_single_full_domain(setup.algorithm):
        raise AnonymizationError(
            f"algorithm.name {setup.algorithm.value} is not available in {where} "
            "(full-domain algorithms only); use `privgate run`"
        )
    return setup
