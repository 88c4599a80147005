"""The parts of OpenDP that :mod:`privgate.core.dp.mechanisms` draws with, as one namespace.

Not ``opendp.prelude``: the prelude also imports OpenDP's extras, and with them scikit-learn,
SciPy and Polars, none of which a mechanism here uses. That import was most of the start-up of
every DP release process (``privgate run`` on a DP policy, each served DP run): about 4 CPU s
at a load of 10, 1.7 s of which for the prelude alone against 0.2 s for these modules.
The names keep the prelude's, so ``dp.m.make_laplace`` reads as OpenDP's documentation does.
"""

from opendp import combinators as c
from opendp import measurements as m
from opendp.domains import atom_domain, vector_domain
from opendp.measures import max_divergence
from opendp.metrics import l1_distance, l2_distance, linf_distance
from opendp.mod import Measurement, binary_search_param, enable_features

__all__ = [
    "Measurement",
    "atom_domain",
    "binary_search_param",
    "c",
    "enable_features",
    "l1_distance",
    "l2_distance",
    "linf_distance",
    "m",
    "max_divergence",
    "vector_domain",
]
