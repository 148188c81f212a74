"""What the command line lists comes from the one list of each: the faults from the nemesis
(inventory/chaos/nemesis.py), the scenarios from inventory/scenarios/__init__.py."""

from __future__ import annotations

import argparse
import inspect

import pytest

from inventory import scenarios
from inventory.chaos import nemesis
from inventory.cli import build_parser, main


def test_list_faults_prints_every_fault_with_what_it_does_and_marks_the_quick_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["chaos", "--list-faults"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name, fault in nemesis.FAULTS.items():
        line = next(line for line in lines if line[2:].split()[:1] == [name])
        assert fault.what in line
        assert line.startswith("*") == (name in nemesis.QUICK), line
    assert lines[-1].endswith(",".join(nemesis.QUICK))


def test_chaos_help_points_to_the_list_of_faults() -> None:
    chaos = subcommands()["chaos"]
    assert "--list-faults" in " ".join(chaos.format_help().split())


def test_demo_offers_the_story_the_herd_and_every_scenario() -> None:
    scenario = next(a for a in subcommands()["demo"]._actions if a.dest == "scenario")
    assert list(scenario.choices or ()) == ["order", "herd", *scenarios.NAMES]


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS, ids=lambda s: s.name)
def test_each_scenario_runs_a_function_that_takes_unfenced_when_it_says_so(
    scenario: scenarios.Scenario,
) -> None:
    run = scenario.load()
    assert callable(run)
    assert ("unfenced" in inspect.signature(run).parameters) == scenario.unfenced
    assert getattr(scenarios, scenario.function) is run  # `scenarios.stale_holder` and the like


def test_the_scenario_names_are_unique() -> None:
    assert len(set(scenarios.NAMES)) == len(scenarios.NAMES)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)
