"""One size formatter (workflow_scripts/core/sizes.py): bytes and parameter counts in the unit a reader plans with."""

from __future__ import annotations

from workflow_scripts.core.sizes import BYTES, GIGABYTES, PARAMETERS, size_text


def test_bytes_take_the_largest_unit_they_reach():
    assert [size_text(n) for n in (4.7e9, 3.2e6, 1500, 512)] == ["4.7 GB", "3.2 MB", "1.5 kB", "512 bytes"]
    assert size_text(1234.5e9) == "1,234.5 GB"


def test_the_plans_dumps_are_in_gb_from_a_tenth_of_one_and_in_mb_below():
    assert size_text(1.2e8, BYTES[:2], at_least=0.1) == "0.1 GB"
    assert size_text(9e7, BYTES[:2], at_least=0.1) == "90.0 MB"
    assert size_text(4e4, BYTES[:2], at_least=0.1) == "0.0 MB"  # never below the last unit given


def test_gigabytes_whatever_the_size_and_parameters_as_a_figure_label():
    assert [size_text(n, GIGABYTES) for n in (1.5e9, 2e7)] == ["1.5 GB", "0.0 GB"]
    assert [size_text(n, PARAMETERS, digits=".3g") for n in (1.1e8, 6.65e9, 22_700, 512)] == [
        "110M", "6.65B", "22.7k", "512"]
