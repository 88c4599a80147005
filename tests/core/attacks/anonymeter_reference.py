"""Run anonymeter 1.1.0 itself on a job and print its numbers as JSON.

Executed by ``test_anonymeter_crosscheck.py`` with ``.venv-anonymeter/bin/python`` (anonymeter
needs numpy < 1.27, which the project's environment cannot hold). It imports nothing from
privgate: it is the independent reference. Usage: ``python anonymeter_reference.py JOB.json``.
"""

from __future__ import annotations

import json
import operator
import sys
import warnings
from functools import reduce

import numpy as np
import pandas as pd
import polars as pl
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
from anonymeter.evaluators.singling_out_evaluator import (
    _evaluate_queries,
    singling_out_probability_integral,
)
from anonymeter.neighbors.mixed_types_kneighbors import MixedTypeKNeighbors
from anonymeter.stats.confidence import EvaluationResults


def _risk(risk) -> list:
    return [float(risk.value), float(risk.ci[0]), float(risk.ci[1])]


def main(path: str) -> None:
    with open(path) as handle:
        job = json.load(handle)
    out: dict = {}
    warnings.simplefilter("ignore")
    if "stats" in job:
        rows = []
        for n, s, b, c in job["stats"]:
            result = EvaluationResults(n_attacks=n, n_success=s, n_baseline=b, n_control=c)
            rows.append(
                {
                    "risk": _risk(result.risk()),
                    "attack_rate": [result.attack_rate.value, result.attack_rate.error],
                }
            )
        out["stats"] = rows
        out["integral"] = [
            singling_out_probability_integral(n, lo, hi) for n, lo, hi in job["integral"]
        ]
    frames = {name: pd.read_csv(file) for name, file in job.get("frames", {}).items()}
    if "nn" in job:
        spec = job["nn"]
        nn = MixedTypeKNeighbors(n_neighbors=1, n_jobs=1).fit(frames["syn"][spec["columns"]])
        dist, idx = nn.kneighbors(frames[spec["targets"]][spec["columns"]], return_distance=True)
        out["nn"] = {"distance": dist[:, 0].tolist(), "index": idx[:, 0].tolist()}
    if "queries" in job:
        # Each query: [[column, operator, value], ...], joined with & as anonymeter does.
        ops = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
               ">": operator.gt, "<": operator.lt}  # fmt: skip
        df = pl.DataFrame(frames[job["queries"]["frame"]])
        queries = [
            reduce(operator.and_, [ops[op](pl.col(col), value) for col, op, value in query])
            for query in job["queries"]["queries"]
        ]
        out["queries"] = list(_evaluate_queries(df, queries))
    if "attacks" in job:
        spec = job["attacks"]
        ori, syn, control = frames["ori"], frames["syn"], frames["control"]
        results = []
        for repeat in range(spec["repeats"]):
            np.random.seed(repeat)  # pandas' .sample() in anonymeter draws from numpy's global RNG
            so = SinglingOutEvaluator(
                ori=ori, syn=syn, control=control, n_attacks=spec["n_attacks"], n_cols=3
            ).evaluate(mode="multivariate")
            link = LinkabilityEvaluator(
                ori=ori,
                syn=syn,
                control=control,
                aux_cols=tuple(spec["aux_cols"]),
                n_attacks=spec["n_attacks"],
                n_neighbors=1,
            ).evaluate(n_jobs=1)
            inf = InferenceEvaluator(
                ori=ori,
                syn=syn,
                control=control,
                aux_cols=[c for c in ori.columns if c != spec["secret"]],
                secret=spec["secret"],
                n_attacks=spec["n_attacks"],
            ).evaluate(n_jobs=1)
            results.append(
                {
                    "singling_out": _risk(so.risk()),
                    "linkability": _risk(link.risk()),
                    "inference": _risk(inf.risk()),
                    "singling_out_success": so.results().n_success,
                    "linkability_success": link.results().n_success,
                    "inference_success": int(inf.results().n_success),
                    "singling_out_control": float(so.results().n_control),
                    "linkability_control": float(link.results().n_control),
                    "inference_control": float(inf.results().n_control),
                }
            )
        out["attacks"] = results
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
