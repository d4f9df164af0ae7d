"""What the pages say, in the words and figures issue 34 asked for: shares' differences in points, big whole
numbers with separators, and a "both presets" comparison shown first right after it ran."""

from __future__ import annotations

import pandas as pd

from core import glossary
from core.classifier.preset_race import PresetRace
from core.classifier.workbench import Workbench
from core.platform.units import EMPTY, points, readable


def test_a_difference_of_accuracies_reads_in_percentage_points():
    assert points(0.780 - 0.774) == "+0.6 points" and points(-0.083) == "-8.3 points"
    assert points(None) == EMPTY


def test_big_whole_numbers_get_separators_like_the_rates_beside_them():
    shown = readable(pd.DataFrame({"terms": [104_903, 2_000], "reviews/s": [18_550.4, 900.0], "epochs": [10, 3]}))
    assert list(shown["terms"]) == ["104,903", "2,000"] and list(shown["reviews/s"]) == ["18,600", "900"]
    assert list(shown["epochs"]) == [10, 3], "small whole numbers stay numbers: they sort"


def test_the_both_presets_comparison_is_first_only_until_the_next_run():
    bench = Workbench()
    assert not bench.race_is_latest
    bench.runs = ["lecture cpu", "mini-batch cpu"]  # type: ignore[list-item]  # only counted here
    bench.preset_race, bench.preset_race_runs = PresetRace((), with_gpu=False), 2
    assert bench.race_is_latest
    bench.runs.append("a Train run")  # type: ignore[arg-type]
    assert not bench.race_is_latest
    bench.runs.clear()
    assert not bench.race_is_latest


def test_every_glossary_line_names_its_term_and_is_one_sentence_or_two():
    terms = {name: text for name, text in vars(glossary).items() if name.isupper()}
    assert len(terms) >= 12
    for name, text in terms.items():
        assert text.count(". ") <= 2 and text.endswith("."), name
