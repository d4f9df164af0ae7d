"""The README's two set-up commands come first, and CI runs them verbatim in a fresh venv."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def _ci_lines() -> list[str]:
    return [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]


def test_readme_opens_with_start_and_test_commands():
    start, test = _commands()[:2]
    assert "requirements.txt" in start and "streamlit run app.py" in start
    assert "requirements-dev.txt" in test and "pytest" in test


def test_ci_runs_the_readme_test_command():
    test = _commands()[1]
    assert test in _ci_lines()


def test_ci_installs_as_the_readme_says_in_a_fresh_venv_with_pips_own_torch():
    """The start command's install part, verbatim, in an activated fresh venv, with no torch put in first."""
    install = _commands()[0].split(" && ")[0]
    lines = _ci_lines()
    assert install in lines
    venv = next(i for i, line in enumerate(lines) if line.startswith("python3 -m venv "))
    activate = next(i for i, line in enumerate(lines) if re.match(r"(source|\.) .*/bin/activate", line))
    assert venv < activate < lines.index(install) < lines.index(_commands()[1])
    before = [line for line in lines[:lines.index(install)] if "pip install" in line or "torch" in line]
    assert not [line for line in before if not line.startswith("#")]


def test_readme_gives_the_install_size_and_the_cpu_build_line_under_the_start_command():
    text = (ROOT / "README.md").read_text()
    after_start = text.split(_commands()[0], 1)[1].split("```bash", 1)[0]
    assert re.search(r"\d(\.\d)? GB", after_start)
    assert "python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu" in after_start


def test_the_cpu_build_advice_comes_before_the_install_line():
    """A reader on GPU-less Linux who runs the first command as soon as they see it gets the 6.1 GB CUDA build:
    the CPU-build line must be read first (issue 34), in the sentence that introduces the command."""
    text = (ROOT / "README.md").read_text()
    before_start = text.split("```bash", 1)[0]
    assert "python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu" in before_start
    assert "without an NVIDIA GPU" in before_start
