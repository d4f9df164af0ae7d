"""The README's two set-up commands come first, and CI runs the test one verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_readme_opens_with_start_and_test_commands():
    start, test = _commands()[:2]
    assert "requirements.txt" in start and "streamlit run app.py" in start
    assert "requirements-dev.txt" in test and "pytest" in test


def test_ci_runs_the_readme_test_command():
    test = _commands()[1]
    lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert test in lines
    assert "torch==2.13.0" in (ROOT / ".ci/run").read_text()
