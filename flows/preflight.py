"""Pre-flight as the command line runs it: fast checks first, the pipeline's own words on failure.

:func:`privgate.core.preflight.preflight` answers in about a second, but it reads only the header
and a bounded number of values, so it can tell *that* an input is broken before it can say
*where* (which line is not valid UTF-8, which row holds the value a hierarchy does not cover).
When it finds a problem, :func:`preflight_before_prefect` runs the stages the release flow would
run next — ingest, the schema, the input expectations — without Prefect, and raises their error:
the user sees one message naming the line, row or column, the same one ``privgate validate`` and
the flow itself give. Only when those stages accept the input (pre-flight is stricter on some
point) is pre-flight's own message raised. A missing input file or a k larger than the table
needs no location: those are raised at once, without importing pandas. Nothing is written and
the input is only read.
"""

from __future__ import annotations

from privgate.core.exceptions import PrivgateError
from privgate.core.policy import ReleasePolicy
from privgate.core.preflight import PreflightReport, is_final, preflight

__all__ = ["preflight_before_prefect"]


def preflight_before_prefect(policy: ReleasePolicy) -> PreflightReport:
    """Pre-flight the policy's input; on a problem, raise the pipeline's own error for it.

    Raises
    ------
    PrivgateError
        The first problem, worded by the stage that owns it (ingest, schema, expectations),
        or by pre-flight when those stages do not object.
    """
    try:
        return preflight(policy)
    except PrivgateError as found:
        if not is_final(found):
            _raise_the_stages_error(policy)
        raise found from None


def _raise_the_stages_error(policy: ReleasePolicy) -> None:
    """Run the release flow's input stages (no Prefect); they raise where the input breaks."""
    from privgate.core import stages
    from privgate.validations.expectations import raise_for_input, validate_input_expectations
    from privgate.validations.schema import validate_input

    hierarchies = stages.load_hierarchies(policy)
    ingested = stages.ingest(policy)
    if policy.is_differentially_private:
        return  # records outside a declared domain are excluded by design, not refused
    validated = validate_input(ingested.frame, policy, hierarchies)
    raise_for_input(validate_input_expectations(validated, policy, hierarchies))
