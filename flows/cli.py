"""The ``privgate`` command line.

    privgate demo                       run the whole pipeline on the built-in demo dataset
    privgate run POLICY [--k K ...]     one release of the table a policy describes
    privgate anonymize POLICY --output F  the engine alone (no Prefect): read, search, write, verify
    privgate serve POLICY...            serve nightly deployments (cron 0 2 * * *) from this process
    privgate crash-detection            mark runs whose process died Crashed (server automation)
    privgate verify FILE --qi a,b --k 5 check an existing file, as the gate would
    privgate validate POLICY            ingest + schema + expectation suite only (no Prefect)
    privgate budget DATASET             a dataset's lifetime privacy budget: spent, left, releases
    privgate risk POLICY                re-identification risk of the input and latest release

Every expected failure (bad policy, bad input, impossible k, blocked gate) ends with one line
on stderr naming the setting, column or row, and a non-zero exit: 2 for an error, 3 for a
blocked gate. Prefect is imported only when a flow runs, after pre-flight
(:mod:`privgate.core.preflight`: the policy, the input's header, the hierarchies and their
coverage), so such errors arrive in well under two seconds. A Prefect server that cannot be
started or reached is an error too (one line saying what to do), not a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from datetime import date
from pathlib import Path

# Quiet, offline runs. Without the first two, a run on Prefect's temporary local server prints
# a "database is locked" traceback although the run completes (see ../shared/STACK.md).
for _name, _value in (
    ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),
    ("DO_NOT_TRACK", "1"),
    ("GX_ANALYTICS_ENABLED", "false"),
    # Prefect gives its temporary server 20 s to come up; on a busy 2-core machine that is not
    # enough (../shared/STACK.md), and a first run must not fail because the machine is busy.
    ("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300"),
):
    os.environ.setdefault(_name, _value)

from privgate.core.exceptions import PrivgateError  # noqa: E402  (after the environment is set)
from privgate.flows.crash_detection import CRASH_AFTER_SECONDS  # noqa: E402  (no Prefect)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEMO_POLICY = PROJECT_ROOT / "policies" / "demo.yaml"


class _ExpectedErrorFilter(logging.Filter):
    """Log expected refusals as one line: a bad input is not a bug, so no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PrivgateError):
            record.exc_info = None
            record.exc_text = None
        return True


def _quiet_expected_tracebacks() -> None:
    expected = _ExpectedErrorFilter()
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("prefect"):
            for handler in logging.getLogger(name).handlers:
                handler.addFilter(expected)
    for handler in logging.getLogger().handlers:
        handler.addFilter(expected)


def _run_release(policy_path: Path, args: argparse.Namespace, overrides: dict) -> int:
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.preflight import preflight_before_prefect

    parameters = ReleaseParameters(
        policy_path=str(policy_path),
        k=args.k,
        suppression_limit=args.suppression_limit,
        epsilon=getattr(args, "epsilon", None),
        release_date=args.release_date,
        dry_run=args.dry_run,
        data_docs=getattr(args, "data_docs", True),
        engine=getattr(args, "engine", "auto"),
        overrides=overrides,
    )
    # Validate the policy, the overrides, the input and the hierarchies before starting
    # Prefect: a typo or a missing file fails in well under two seconds, not after the server
    # has started (the flow reuses the resolved policy).
    policy = parameters.policy()
    # Which path the run takes, said (and refused, if the partitioned path cannot honour the
    # policy) before Prefect starts; the flow decides the same way from the same input.
    from privgate.core.engine_choice import choose_engine

    choice = choose_engine(policy, parameters.engine)
    print(f"engine: {choice.reason}", flush=True)
    checked = None
    if choice.engine == "memory":
        checked = preflight_before_prefect(policy)
    elif Path(policy.input.path).is_file():  # header, hierarchies, the first rows; no ingest
        from privgate.core.preflight import preflight

        checked = preflight(policy)
    if checked is not None:
        print(f"{checked.summary()} ({sum(checked.seconds.values()):.2f}s)", flush=True)

    from privgate.flows.release import release_flow

    _quiet_expected_tracebacks()
    outcome = release_flow(parameters)
    if outcome.get("engine", {}).get("path") == "partitioned":
        return _print_partitioned(outcome)
    gate = outcome["gate"]
    m = gate["measurements"]
    if outcome.get("dry_run") and "differential_privacy" in outcome:
        print(outcome["message"])
        return 0
    if "differential_privacy" in outcome:
        remaining = (m.get("remaining_exact") or [m["remaining_epsilon"]])[0]
        print(
            f"gate: PASSED ({m['rows']} partitions; the release's draws compose to epsilon "
            f"{m['release_epsilon']:g}; {remaining} of {m['budget_epsilon']:g} left)"
        )
    else:
        print(_k_anonymous_gate_line(outcome))
    for tier in outcome.get("tiers", []):
        print(f"tier {tier['tier']}: k-anonymity covers {', '.join(tier['covers'])}")
    for release in outcome.get("releases", [])[:-1]:  # every tier's release has its own gate
        print(_k_anonymous_gate_line(release))
        print(f"release: {release['path'] or release['release_id']}")
    if outcome["published"] and outcome.get("already_published_by"):
        print(
            f"release: {outcome['path']} (already published by run "
            f"{outcome['already_published_by']}; nothing new written)"
        )
    elif outcome["published"]:
        print(f"release: {outcome['path']}")
    else:
        print(f"dry run: release {outcome['release_id']} verified, nothing published")
    return 0


def _print_partitioned(outcome: dict) -> int:
    """The end of a partitioned run (:mod:`privgate.flows.partitioned`): its gate, the sample
    its input suites ran on, and the release folder."""
    print(_k_anonymous_gate_line(outcome))
    sample = outcome["expectations"]["input"].get("sample")
    if sample:
        print(
            f"validation: schema and input suite on a seeded sample of {sample['rows']:,} of "
            f"{sample['of_rows']:,} rows (seed {sample['seed']})"
        )
    if outcome["published"]:
        print(f"release: {outcome['path']} (Parquet parts in release/)")
    else:
        print(f"dry run: release {outcome['release_id']} verified, nothing published")
    return 0


def _k_anonymous_gate_line(outcome: dict) -> str:
    """One release's gate line. A passed release can still say less than it seems to (a
    quasi-identifier generalized away, a utility baseline at chance): the gates' flags end it."""
    gate = outcome["gate"]
    m = gate["measurements"]
    flags = [*gate.get("flags", []), *(outcome.get("utility_gate") or {}).get("flags", [])]
    return (
        f"gate: PASSED ({m['rows']} rows, {m['classes']} classes, smallest class "
        f"{m['min_class_size']}, {m['suppressed']} suppressed)"
        + "".join(f"; FLAGGED: {flag}" for flag in flags)
    )


def _overrides(args: argparse.Namespace) -> dict:
    changes = {}
    if getattr(args, "output", None) and args.command != "anonymize":
        changes["output.directory"] = str(Path(args.output).resolve())
    if getattr(args, "input", None):
        path = Path(args.input).resolve()
        changes["input.path"] = str(path)
        if args.command == "run" and (path.is_dir() or path.suffix in (".parquet", ".pq")):
            changes["input.format"] = "parquet"  # a folder of parts: the partitioned path's
    return changes


def cmd_run(args: argparse.Namespace) -> int:
    return _run_release(Path(args.policy), args, _overrides(args))


def cmd_demo(args: argparse.Namespace) -> int:
    from privgate.core.demo_data import write_census_csv

    workdir = Path(args.workdir).resolve()
    data = workdir / "demo-data" / "census.csv"
    if not data.exists():
        write_census_csv(data, n_rows=args.rows)
        print(f"demo: wrote {args.rows} synthetic census records to {data}")
    overrides = {"input.path": str(data), "output.directory": str(workdir / "releases")}
    overrides.update(_overrides(args))
    return _run_release(DEMO_POLICY, args, overrides)


def cmd_anonymize(args: argparse.Namespace) -> int:
    from privgate.core.fastpath import anonymize_csv
    from privgate.flows.policy_overrides import resolve_policy

    policy = resolve_policy(args.policy, args.k, args.suppression_limit, _overrides(args))
    decision, summary = anonymize_csv(policy, args.output)
    seconds = summary.pop("seconds")
    print(f"gate: {decision.summary}")
    print(f"wrote: {Path(args.output).resolve()}")
    print(
        f"{summary['algorithm']} levels {summary['levels']}, {summary['suppressed']} of "
        f"{summary['input_rows']} records suppressed"
    )
    print("seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in seconds.items()))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from prefect import serve

    from privgate.flows.crash_detection import ensure_crash_automation
    from privgate.flows.serve import build_deployments, refuse_to_replace

    overrides = {"output.directory": str(Path(args.output).resolve())} if args.output else None
    deployments = build_deployments(args.policies, args.cron, args.timezone, overrides)
    refuse_to_replace(deployments)
    ensure_crash_automation(args.crash_after)
    _quiet_expected_tracebacks()
    names = ", ".join(d.name for d in deployments)
    print(f"serving {names} ({args.cron}, {args.timezone}); Ctrl-C to stop")
    for deployment in deployments:
        print(f"  {deployment.name}: {deployment.parameters['parameters']['policy_path']}")
    print(
        f"a run whose process dies is marked Crashed {args.crash_after:g} s after its last "
        "heartbeat; retry it from the UI"
    )
    serve(*deployments)
    return 0


def cmd_crash_detection(args: argparse.Namespace) -> int:
    from privgate.flows.crash_detection import ensure_crash_automation

    automation = ensure_crash_automation(args.after)
    print(
        f"automation {automation}: release runs tagged 'privgate' without a heartbeat for "
        f"{args.after:g} s are marked Crashed (workers must run flows with "
        "PREFECT_FLOWS_HEARTBEAT_FREQUENCY=30, as deployments/prefect.yaml sets)"
    )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from privgate.core.gate import verify_release
    from privgate.core.privacy import (
        DistinctLDiversity,
        EntropyLDiversity,
        KAnonymity,
        PrivacyModel,
        TCloseness,
    )

    qis = [q.strip() for q in args.qi.split(",") if q.strip()]
    models: list[PrivacyModel] = [KAnonymity(k=args.k)]
    if args.l is not None:
        if not args.sensitive:
            raise PrivgateError("--l needs --sensitive COLUMN")
        cls = EntropyLDiversity if args.l_variant == "entropy" else DistinctLDiversity
        models.append(cls(column=args.sensitive, l=args.l))
    if args.t is not None:
        if not args.sensitive:
            raise PrivgateError("--t needs --sensitive COLUMN")
        models.append(TCloseness(column=args.sensitive, t=args.t, distance=args.t_distance))
    decision = verify_release(args.file, qis, models)
    if args.json:
        print(json.dumps(decision.to_dict(), indent=2, default=str))
    else:
        print(f"{args.file}: {decision.summary}")
        for name, level in decision.measurements.get("achieved", {}).items():
            print(f"  {name}: reached {level:g}")
    return 0 if decision.passed else 3


def cmd_validate(args: argparse.Namespace) -> int:
    from privgate.flows.policy_overrides import resolve_policy
    from privgate.validations.expectations import check_policy_input, format_validation, report

    policy = resolve_policy(args.policy, overrides=_overrides(args))
    outcome = check_policy_input(policy, docs_dir=args.docs)
    if args.json:
        data = dict(outcome, expectations=report([outcome["expectations"]])["input"])
        print(json.dumps(data, indent=2, default=str))
    else:
        print(format_validation(outcome))
    return 0 if outcome["valid"] else 2


def cmd_risk(args: argparse.Namespace) -> int:
    from privgate.core.risk import analyse_policy, format_analysis, latest_release
    from privgate.flows.policy_overrides import resolve_policy

    policy = resolve_policy(args.policy)
    release = Path(args.release) if args.release else latest_release(policy)
    analyses = analyse_policy(policy, release=release, population_size=args.population_size,
                              threshold=args.threshold)  # fmt: skip
    if args.json:
        print(json.dumps([a.to_dict() for a in analyses], indent=2, default=str))
    else:
        print("\n\n".join(format_analysis(a) for a in analyses))
        if release is None:
            print("\n(no published release of this dataset yet: input only)")
    return 0


def cmd_budget(args: argparse.Namespace) -> int:
    from privgate.core.dp.ledger import BudgetLedger, configured_ledger_url, ledger_exists

    url = args.ledger or configured_ledger_url()
    if not ledger_exists(url):
        raise PrivgateError(
            f"no privacy ledger at {url} yet: no DP release has been charged there (the "
            "ledger is PRIVGATE_LEDGER_URL, or a file in the privgate data directory)"
        )
    with BudgetLedger(url) as ledger:
        if args.set_epsilon is not None:
            if not args.reason:
                raise PrivgateError("--set-epsilon needs --reason: a budget change is recorded")
            delta = args.set_delta
            if delta is None:
                delta = ledger.account(args.dataset).budget_delta
            account = ledger.set_budget(args.dataset, args.set_epsilon, delta, args.reason)
        else:
            account = ledger.account(args.dataset)
    if args.json:
        print(json.dumps(account.to_dict(), indent=2, default=str))
    else:
        print(account.describe())
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from privgate.core.history import ReleaseHistory, configured_history_url, history_exists

    url = args.history or configured_history_url()
    if not history_exists(url) and not args.record_published:
        raise PrivgateError(
            f"no release history at {url} yet: no release with a history key has been "
            "published there (the history is PRIVGATE_HISTORY_URL, or a file in the privgate "
            "data directory)"
        )
    with ReleaseHistory(url) as history:
        if args.record_published:
            return _record_published(history, args)
        if args.forget:
            history.forget(args.dataset, args.forget, force=args.force)
            print(f"history: release {args.forget} of {args.dataset!r} forgotten")
            return 0
        recorded = history.releases(args.dataset)
    if args.json:
        print(json.dumps([r.__dict__ for r in recorded], indent=2, default=str))
        return 0
    if not recorded:
        print(f"history of {args.dataset!r}: no release recorded")
        return 0
    print(f"history of {args.dataset!r}: {len(recorded)} release(s), oldest first")
    for release in recorded:
        print("  " + release.describe())
    return 0


def _record_published(history, args: argparse.Namespace) -> int:
    """``privgate history DATASET --record-published RELEASE_DIR``: the recovery of a release
    published and not recorded (README, "Nightly releases and the release history")."""
    from privgate.core.history import record_published

    done = record_published(history, args.dataset, args.record_published, keys_file=args.row_keys)
    if not done.recorded:
        print(f"history: release {done.release_id} of {args.dataset!r} was already recorded")
        return 0
    print(
        f"history: release {done.release_id} of {args.dataset!r} recorded from its published "
        f"file ({done.people} people)"
    )
    result = done.result
    if result is not None and not result.passed:
        print(
            f"history: warning: combined with the earlier releases it exposes "
            f"{len(result.exposed)} person(s) (fewest candidates "
            f"{result.measurements.get('min_candidates')}); it is already published, so later "
            "releases are checked against it"
        )
    return 0


def cmd_purge(args: argparse.Namespace) -> int:
    from privgate.core.retention import (
        attack_evidence_root,
        purge_attack_evidence,
        purge_results,
        results_root,
    )

    report = purge_results(args.dataset, args.older_than)
    where = results_root() / args.dataset if args.dataset else results_root()
    print(f"purge: {report.describe()} under {where}")
    if args.attack_evidence:
        evidence = purge_attack_evidence(args.dataset, args.older_than)
        root = attack_evidence_root()
        where = root / args.dataset if args.dataset else root
        described = evidence.describe().replace("cached result", "attack evidence")
        print(f"purge: {described} under {where}")
    return 0


def _days(text: str) -> float:
    value = float(text.removesuffix("d"))
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of days >= 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privgate",
        description="Anonymize a table, verify the release as written, and publish it "
        "only if every privacy criterion of its policy holds.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def release_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--k", type=_positive_int, help="override privacy.k")
        p.add_argument(
            "--suppression-limit",
            type=_fraction,
            help="override privacy.suppression_limit (a fraction, e.g. 0.02)",
        )
        p.add_argument("--output", help="override output.directory")
        p.add_argument(
            "--release-date",
            type=date.fromisoformat,
            help="release date, YYYY-MM-DD (default: today, UTC)",
        )
        p.add_argument("--dry-run", action="store_true", help="verify but do not publish")
        p.add_argument(
            "--epsilon",
            type=_positive_float,
            help="override differential_privacy.epsilon (DP policies only)",
        )

    run = sub.add_parser("run", help="run one release of a policy")
    run.add_argument("policy", help="release policy (YAML)")
    run.add_argument("--input", help="override input.path")
    run.add_argument(
        "--no-data-docs",
        dest="data_docs",
        action="store_false",
        help="leave Great Expectations' HTML Data Docs out of the release folder (both suites "
        "still run; expectations.json still records every result)",
    )
    run.add_argument(
        "--engine",
        choices=["auto", "memory", "partitioned"],
        default="auto",
        help="auto (default): the partitioned path (Parquet parts, bounded memory) when the "
        "input's estimated rows reach PRIVGATE_PARTITIONED_MIN_ROWS (default 2000000), else "
        "the in-memory path; memory or partitioned forces one",
    )
    release_options(run)
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="run the pipeline on the built-in demo dataset")
    demo.add_argument(
        "--workdir", default=".", help="where demo-data/ and releases/ are created (default: .)"
    )
    demo.add_argument(
        "--rows",
        type=_positive_int,
        default=30_000,
        help="rows of synthetic census data (default: 30000)",
    )
    release_options(demo)
    demo.set_defaults(func=cmd_demo)

    fast = sub.add_parser(
        "anonymize",
        help="anonymize a policy's CSV into a file and verify it, without Prefect (fast)",
    )
    fast.add_argument("policy", help="release policy (YAML)")
    fast.add_argument("--output", required=True, help="release file to write (CSV)")
    fast.add_argument("--input", help="override input.path")
    fast.add_argument("--k", type=_positive_int, help="override privacy.k")
    fast.add_argument(
        "--suppression-limit", type=_fraction, help="override privacy.suppression_limit"
    )
    fast.set_defaults(func=cmd_anonymize)

    served = sub.add_parser(
        "serve", help="serve nightly release deployments, one per policy, from this process"
    )
    served.add_argument("policies", nargs="+", help="release policies (YAML)")
    served.add_argument("--cron", default="0 2 * * *", help="schedule (default: 0 2 * * *)")
    served.add_argument("--timezone", default="UTC", help="timezone of the schedule")
    served.add_argument("--output", help="override output.directory of every policy")
    served.add_argument(
        "--crash-after",
        type=_positive_float,
        default=CRASH_AFTER_SECONDS,
        metavar="SECONDS",
        help="mark a run Crashed after this long without a heartbeat (its process died), so "
        f"that it can be retried (default: {CRASH_AFTER_SECONDS})",
    )
    served.set_defaults(func=cmd_serve)

    crashes = sub.add_parser(
        "crash-detection",
        help="create (or update) the server automation that marks release runs whose "
        "process died as Crashed (for work-pool deployments; `serve` does it itself)",
    )
    crashes.add_argument(
        "--after",
        type=_positive_float,
        default=CRASH_AFTER_SECONDS,
        metavar="SECONDS",
        help=f"seconds without a heartbeat (default: {CRASH_AFTER_SECONDS})",
    )
    crashes.set_defaults(func=cmd_crash_detection)

    verify = sub.add_parser(
        "verify",
        help="check a release file's k / l / t, counted in records (a person-keyed release: "
        "privgate.verify with persons=)",
    )
    verify.add_argument("file", help="release file (CSV or Parquet)")
    verify.add_argument("--qi", required=True, help="quasi-identifier columns, comma-separated")
    verify.add_argument("--k", type=_positive_int, required=True)
    verify.add_argument("--sensitive", help="sensitive column for --l / --t")
    verify.add_argument("--l", type=_positive_int, help="required l-diversity")
    verify.add_argument("--l-variant", choices=["distinct", "entropy"], default="distinct")
    verify.add_argument("--t", type=float, help="required t-closeness")
    verify.add_argument("--t-distance", choices=["equal", "ordered"], default="equal")
    verify.add_argument("--json", action="store_true", help="print the decision as JSON")
    verify.set_defaults(func=cmd_verify)

    validate = sub.add_parser(
        "validate",
        help="read a policy's input and check it against the schema and the expectation suite "
        "(exit 0 if valid, 2 if not); no Prefect, nothing written unless --docs",
    )
    validate.add_argument("policy", help="release policy (YAML)")
    validate.add_argument("--input", help="override input.path")
    validate.add_argument("--docs", help="write the input suite's Data Docs into this folder")
    validate.add_argument("--json", action="store_true", help="print the outcome as JSON")
    validate.set_defaults(func=cmd_validate)

    risk = sub.add_parser(
        "risk", help="re-identification risk of a policy's input and of its latest release"
    )
    risk.add_argument("policy", help="release policy (YAML)")
    risk.add_argument("--release", help="analyse this release file instead of the latest one")
    risk.add_argument("--population-size", type=_positive_int, help="people in the population")
    risk.add_argument("--threshold", type=_fraction, help="risk above which a record is at risk")
    risk.add_argument("--json", action="store_true", help="print the analyses as JSON")
    risk.set_defaults(func=cmd_risk)

    budget = sub.add_parser(
        "budget", help="show a dataset's lifetime privacy budget, its spends and releases"
    )
    budget.add_argument("dataset", help="dataset name, as in the policy's 'dataset'")
    budget.add_argument(
        "--ledger", help="ledger URL (default: PRIVGATE_LEDGER_URL or the privgate data directory)"
    )
    budget.add_argument(
        "--set-epsilon", type=_positive_float, help="change the lifetime epsilon (needs --reason)"
    )
    budget.add_argument("--set-delta", type=_fraction, help="change the lifetime delta")
    budget.add_argument("--reason", help="why the budget changes (recorded in the ledger)")
    budget.add_argument("--json", action="store_true", help="print the account as JSON")
    budget.set_defaults(func=cmd_budget)

    history = sub.add_parser(
        "history", help="list a dataset's recorded releases and their cross-release checks"
    )
    history.add_argument("dataset", help="dataset name, as in the policy's 'dataset'")
    history.add_argument(
        "--history", help="history URL (default: PRIVGATE_HISTORY_URL or the data directory)"
    )
    history.add_argument("--forget", metavar="RELEASE_ID", help="remove a release (needs --force)")
    history.add_argument(
        "--force",
        action="store_true",
        help="with --forget: really remove it (only for a release nobody can have downloaded)",
    )
    history.add_argument("--json", action="store_true", help="print the releases as JSON")
    history.add_argument(
        "--record-published",
        metavar="RELEASE_DIR",
        help="record a published release missing from the history, from its file and the row "
        "keys its run kept (refused unless they were written for exactly that file)",
    )
    history.add_argument(
        "--row-keys",
        metavar="FILE",
        help="with --record-published: the row-keys file (default: the data directory's)",
    )
    history.set_defaults(func=cmd_history)

    purge = sub.add_parser(
        "purge",
        help="remove cached private stage results (all, one dataset's, or those older than N "
        "days); releases, the ledger and histories are not touched",
    )
    purge.add_argument("dataset", nargs="?", help="only this dataset's results")
    purge.add_argument(
        "--older-than",
        type=_days,
        metavar="DAYS",
        help="only results older than DAYS (e.g. 3 or 3d)",
    )
    purge.add_argument(
        "--attack-evidence",
        action="store_true",
        help="also remove the owner-side attack evidence of DP releases (kept by default as "
        "the owner's audit trail)",
    )
    purge.set_defaults(func=cmd_purge)
    return parser


def _prefect_unavailable(exc: BaseException) -> str | None:
    """The sentence for a Prefect server that could not be started or reached, else None.

    Prefect raises these as a bare ``RuntimeError`` (or an httpx error) with a long traceback;
    what the user needs is what happened and what to do about it.
    """
    text = str(exc)
    api_url = os.environ.get("PREFECT_API_URL")
    if "ephemeral Prefect API server" in text:
        limit = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "20")
        return (
            f"Prefect's temporary server did not start within {limit} s (is the machine very "
            "busy?): try again, raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, or "
            "start a server (`prefect server start`) and set PREFECT_API_URL to its /api"
        )
    names = {type(e).__name__ for e in _chain(exc)}
    if "Failed to reach API" in text or names & {"ConnectError", "ConnectTimeout"}:
        where = api_url or "the configured PREFECT_API_URL"
        return (
            f"the Prefect server at {where} does not answer: start it (`prefect server "
            "start`), or unset PREFECT_API_URL to let privgate start a temporary one"
        )
    return None


def _chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code = _run(args)
    if argv is None and args.command == "anonymize":
        _end_process(code)
    return code


def _end_process(code: int) -> None:
    """End ``privgate anonymize``'s process now, its output flushed, without the
    interpreter's teardown.

    Why: by the time the command returns, everything it promises is on disk (the release
    written, synced, renamed, its folder synced) and every file it opened is closed; tearing
    down the interpreter then only frees memory the operating system takes back anyway: 0.14-0.25
    s of the 10M-row command's wall time (issue 18). Only when run as a command (``argv`` read
    from the command line): a caller of :func:`main` in its own process (the tests) keeps it.
    If the output cannot be flushed (a closed pipe), the normal exit reports it instead.
    """
    logging.shutdown()  # what the interpreter's exit would flush of the log handlers
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
    except PrivgateError as exc:
        kind = "blocked" if exc.exit_code == 3 else "error"
        if exc.report_path:
            print(f"report: {exc.report_path}", flush=True)
        print(f"privgate: {kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        message = _prefect_unavailable(exc)
        if message is None:
            raise
        print(f"privgate: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("privgate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and cut short: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
