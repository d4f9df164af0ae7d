"""core/cli/__init__.py: only the chosen subcommand's module is imported; --help and typos still see all."""

import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import SUBCOMMANDS, build_parser, chosen_command, listing_parser, main

ROOT = Path(__file__).resolve().parents[2]

# Imported by other subcommands (or by torch helpers) and not needed for `devices`: each takes
# noticeable start-up time, and torch.utils.cpp_extension logs "No CUDA runtime is found" to
# stderr on a CUDA build without a GPU, ahead of the CLI's one-line errors.
NOT_FOR_DEVICES = ["sklearn", "scipy", "pandas", "streamlit", "plotly", "psycopg", "core.selfcheck", "core.store",
                   "core.matmul", "core.classifier", "core.parallel", "torch.utils.benchmark",
                   "torch.utils.cpp_extension"]


def _modules_after(argv: list[str]) -> set[str]:
    """Top-level and dotted module names a fresh interpreter holds after running `main(argv)`."""
    code = ("import sys, io, contextlib\nfrom core.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): main({argv!r})\n"
            "print('\\n'.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.slow
def test_devices_imports_neither_other_subcommands_nor_heavy_libraries():
    loaded = _modules_after(["devices", "--json"])
    assert "core.cli.devices" in loaded
    assert not {name for name in NOT_FOR_DEVICES if name in loaded}
    assert not {f"core.cli.{m}" for m in SUBCOMMANDS.values() if m != "devices"} & loaded


@pytest.mark.slow
def test_no_subcommand_module_imports_torch_cpp_extension():
    """Every subcommand's module together (what --help loads): still no cpp_extension warning source."""
    code = "import sys\nfrom core.cli import build_parser\nbuild_parser()\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert "core.selfcheck" in loaded and "torch.utils.cpp_extension" not in loaded
    assert out.stderr == ""


@pytest.mark.parametrize("argv, expected", [
    (["devices", "--json"], "devices"),
    (["why-parallel", "--section", "first-call"], "why-parallel"),
    (["--help"], None),
    ([], None),
    (["devicez"], None),
    (["-h", "matmul"], "matmul"),
])
def test_chosen_command(argv, expected):
    assert chosen_command(argv) == expected


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SUBCOMMANDS)


def test_unknown_subcommand_is_one_line_naming_the_real_ones(capsys):
    assert main(["devicez"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "devicez" in err and all(name in err for name in SUBCOMMANDS)


def test_parser_for_one_subcommand_parses_like_the_full_one():
    argv = ["matmul", "--sizes", "64,128", "--json"]
    one, full = build_parser("matmul").parse_args(argv), build_parser().parse_args(argv)
    assert {k: v for k, v in vars(one).items() if k != "handler"} == {k: v for k, v in vars(full).items()
                                                                      if k != "handler"}


@pytest.mark.slow
def test_help_imports_no_torch_and_no_subcommand_module():
    """`python -m core --help` lists the subcommands from core.cli.HELP alone: no torch (seconds to import)."""
    code = ("import sys, io, contextlib\nfrom core.cli import main\n"
            "try:\n    with contextlib.redirect_stdout(io.StringIO()): main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('\\n'.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert "core.cli" in loaded and "torch" not in loaded
    assert not {f"core.cli.{m}" for m in SUBCOMMANDS.values()} & loaded


def test_the_listing_shows_each_subcommands_own_help_line():
    """The help --help lists is the help each subcommand's parser was built with (one string, core.cli.HELP)."""
    listed = next(a for a in listing_parser()._actions if a.dest == "command")
    built = next(a for a in build_parser()._actions if a.dest == "command")
    assert [c.help for c in listed._choices_actions] == [c.help for c in built._choices_actions]
    assert all(c.help for c in listed._choices_actions)
