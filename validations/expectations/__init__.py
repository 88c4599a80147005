"""Great Expectations contracts of a release, derived from its policy.

pandera (:mod:`validations.schema`) is the fast in-code schema at ingest; the two expectation
suites built here are the documented, reviewable contract, rendered as Data Docs next to each
release:

* the **input suite** (``<dataset>.input``): the declared columns and their types, no missing
  value where the policy requires one, values inside each quasi-identifier's hierarchy and each
  column's declared categories and range, at least ``k`` rows, unique direct identifiers;
* the **release suite** (``<dataset>.release``), run on the release file as written and re-read
  as text: no direct identifier column, exactly the released columns, every quasi-identifier
  value inside its generalized domain (the labels of the level the algorithm chose), every
  numeric range holding a number (``57-31`` is refused: a custom expectation), the
  suppression marker ``*`` only where generalization to the top level allows it, every
  equivalence class of at least ``k`` records (a custom expectation computed by Great
  Expectations itself, not by the gate), and row counts consistent with the manifest.

One module per job: the Great Expectations set-up and custom expectations (``_gx``), the
suites (``_suites``), running them (``_run``), their outcome in words and errors
(``_messages``), Data Docs (``_data_docs``; its pages rendered by Great Expectations' own
views, which compile each template once per process: ``_views``) and ``privgate validate``
(``_check``).

Every function takes a policy, frames or paths and returns plain dicts (JSON-ready summaries that
also carry the Great Expectations suite and result, so Data Docs can be written later, anywhere).
Great Expectations is imported lazily (about 3 s), runs fully offline with an ephemeral context,
and its usage analytics are switched off before it is imported.

Row numbers are 0-based data rows, as in :mod:`validations.schema` (for a CSV with a header,
line = row + 2).
"""

from __future__ import annotations

from privgate.validations.expectations._check import check_policy_input, format_validation
from privgate.validations.expectations._data_docs import write_data_docs
from privgate.validations.expectations._gx import SITE_NAME
from privgate.validations.expectations._messages import (
    InputContractError,
    ReleaseContractError,
    describe_failures,
    format_check,
    raise_for_input,
    raise_for_release,
    report,
)
from privgate.validations.expectations._run import (
    typed_view,
    validate_input_expectations,
    validate_release_expectations,
)
from privgate.validations.expectations._sample import (
    MAX_ROWS_VARIABLE,
    SEED_VARIABLE,
    ExpectationSample,
    expectation_sample,
)
from privgate.validations.expectations._suites import (
    SUPPRESSION_MARKER,
    build_input_suite,
    build_release_suite,
)

__all__ = [
    "MAX_ROWS_VARIABLE",
    "SEED_VARIABLE",
    "SITE_NAME",
    "SUPPRESSION_MARKER",
    "ExpectationSample",
    "InputContractError",
    "ReleaseContractError",
    "build_input_suite",
    "build_release_suite",
    "check_policy_input",
    "describe_failures",
    "expectation_sample",
    "format_check",
    "format_validation",
    "raise_for_input",
    "raise_for_release",
    "report",
    "typed_view",
    "validate_input_expectations",
    "validate_release_expectations",
    "write_data_docs",
]
