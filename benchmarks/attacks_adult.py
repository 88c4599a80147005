"""The attacks on Adult releases (run_attacks): this checkout vs a baseline, side by side.

The releases are the ones ``tests/core/attacks/test_release_attacks.py`` attacks: Adult's
5-anonymous release (``policies/adult.yaml``) and the weak one (only sex and race generalized),
each made from the records the control split keeps, staged and read back as the written file
(text). Each is attacked with :func:`privgate.core.attacks.run_attacks` at the policy's
settings (200 attacks as in the tests; 500, the default, on the 5-anonymous one), in a fresh
process per round, alternating the baseline checkout (``--baseline DIR``, a worktree of the
commit before a change) and this one, the order reversed every other round; each process runs
one untimed warm-up (imports, first calls) and then each case once. Reported: the median wall
time per case over the rounds, the CPU time (``time.process_time``, what the machine's load
does not inflate as much), and whether both checkouts returned the same evidence (everything
``AttackEvidence.to_dict`` holds but the seconds).

Usage (from the repository root)::

    .venv/bin/python benchmarks/attacks_adult.py --baseline /tmp/base --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _environment import ARX_DATA, machine

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "policies" / "adult.yaml"
LIMITS = {"max_singling_out": 0.05, "max_linkability": 0.05, "max_inference": 0.1}
#: The weak release's columns released as they are (as in test_release_attacks.py).
RAW = ("age", "marital-status", "education", "native-country", "workclass", "occupation")

CHILD = """
import json, pickle, sys, time
import privgate
from privgate.core import stages
from privgate.core.attacks import AttackSettings, run_attacks
from privgate.core.policy import load_policy
cases = pickle.load(open(sys.argv[2], "rb"))
hierarchies = stages.load_hierarchies(load_policy(sys.argv[1]))
def attack(case, n_attacks):
    settings = AttackSettings(
        n_attacks=n_attacks, seed=case["seed"], secrets=tuple(case["secrets"])
    )
    return run_attacks(
        case["release"], case["kept"], case["control"], case["columns"],
        numeric=case["numeric"],
        hierarchies={c: hierarchies[c] for c in case["hierarchy_columns"]},
        settings=settings,
    )
attack(cases["k5"], 200)  # warm-up: imports, first calls
out = {"privgate": privgate.__file__}
for name, n_attacks in (("k5", 200), ("weak", 200), ("k5", 500)):
    wall, cpu = time.perf_counter(), time.process_time()
    evidence = attack(cases[name], n_attacks).to_dict()
    out[f"{name}/{n_attacks}"] = {
        "seconds": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "singling_out_queries": evidence["details"]["singling_out"]["queries"],
    }
    del evidence["details"]["seconds"]
    out[f"{name}/{n_attacks}"]["evidence"] = evidence
print(json.dumps(out, default=float))
"""


def build_cases() -> dict:
    """The two releases as the test fixture makes them, and what the attacks need."""
    import pandas as pd

    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup
    from privgate.core.attacks import attacked_columns, split_control
    from privgate.core.policy import load_policy
    from privgate.validations.schema import validate_input

    base = load_policy(POLICY)
    assert (ARX_DATA / "adult.csv").is_file(), ARX_DATA
    hierarchies = stages.load_hierarchies(base)
    frame = validate_input(stages.ingest(base).frame, base, hierarchies)
    weak_columns = base.model_dump(mode="python")["columns"]
    for name in RAW:
        weak_columns[name] = {**weak_columns[name], "role": "insensitive", "hierarchy": None}
    overrides = {
        "k5": {"attacks": {**LIMITS, "n_attacks": 200}},
        "weak": {
            "columns": weak_columns,
            "attacks": {"max_singling_out": 0.05, "n_attacks": 200, "seed": 1},
        },
    }
    out_dir = Path(tempfile.mkdtemp(prefix="privgate-attacks-bench-"))
    cases = {}
    for name, changes in overrides.items():
        policy = base.with_overrides(**changes, **{"output.directory": str(out_dir)})
        policy_hierarchies = stages.load_hierarchies(policy)
        setup = SearchSetup.from_policy(policy, policy_hierarchies)
        split = split_control(frame, policy)
        [table] = stages.anonymize(split.kept, setup)
        staged, _ = stages.stage_and_verify(
            table, setup, policy, f"2026-11-26-{name}", len(split.kept), split
        )
        written = pd.read_csv(staged.release_file, dtype=str, keep_default_na=False)
        written = written.where(written != "", None)
        columns, secrets = attacked_columns(policy)
        cases[name] = {
            "release": written[columns],
            "kept": split.kept[columns],
            "control": split.control[columns],
            "columns": columns,
            "secrets": secrets,
            "numeric": [c for c in columns if policy.columns[c].is_numeric],
            "hierarchy_columns": [c for c in columns if c in policy_hierarchies],
            "seed": policy.attacks.seed,
        }
    return cases


def run(cases_file: Path, baseline: Path | None) -> dict:
    env = dict(os.environ)
    if baseline is not None:
        shim = Path(tempfile.mkdtemp(prefix="privgate-baseline-"))
        (shim / "privgate").symlink_to(baseline.resolve())
        env["PYTHONPATH"] = str(shim)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(POLICY), str(cases_file)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    cases_file = Path(tempfile.mkdtemp(prefix="privgate-attacks-cases-")) / "cases.pkl"
    cases_file.write_bytes(pickle.dumps(build_cases()))
    before = os.getloadavg()
    found: dict[str, list[dict]] = {"baseline": [], "this checkout": []}
    for r in range(a.rounds):
        order = ("baseline", "this checkout") if r % 2 == 0 else ("this checkout", "baseline")
        for side in order:
            found[side].append(run(cases_file, a.baseline if side == "baseline" else None))
    after = os.getloadavg()
    print(f"machine: {machine(before, after, ('numpy', 'pandas', 'scipy'))}")
    for side, runs in found.items():
        print(f"{side}: privgate from {runs[0]['privgate']}")
    print("| case | baseline wall (s) | this wall (s) | wall ratio | baseline CPU (s) | "
          "this CPU (s) | CPU ratio | predicates found | same evidence |")  # fmt: skip
    print("|:---|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for case in ("k5/200", "weak/200", "k5/500"):
        base = [r[case] for r in found["baseline"]]
        mine = [r[case] for r in found["this checkout"]]
        wall_b = statistics.median(r["seconds"] for r in base)
        wall_m = statistics.median(r["seconds"] for r in mine)
        cpu_b = statistics.median(r["cpu"] for r in base)
        cpu_m = statistics.median(r["cpu"] for r in mine)
        same = all(r["evidence"] == base[0]["evidence"] for r in base + mine)
        print(
            f"| {case} | {wall_b:.2f} | {wall_m:.2f} | {wall_b / wall_m:.1f} | {cpu_b:.2f} | "
            f"{cpu_m:.2f} | {cpu_b / cpu_m:.1f} | {mine[0]['singling_out_queries']} | "
            f"{'yes' if same else 'NO'} |"
        )
    for side, runs in found.items():
        for case in ("k5/200", "weak/200", "k5/500"):
            each = ", ".join(f"{r[case]['seconds']:.2f}" for r in runs)
            print(f"{side} {case} wall per round: {each}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
