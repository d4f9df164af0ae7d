"""The Review classifier's working state for one user: loaded reviews, built features, runs, the latest model.

A page keeps one `Workbench` in its session. Loading reviews and building the document-term matrices take
seconds, so each is redone only when what it depends on changed (`DataChoice.key`, `features_key`), and
with the server's `SharedBuilds` a built-in data set or a feature set another session already built is
taken rather than built again; a run is recorded report by report (`RunRecord`), so a Stop or a rerun
keeps everything measured. A server's Workbench (`quiet`) builds large feature sets as quiet work, out of
the way of every timed job; the training run is timed as ever. `Workbench.train` is the Train and "Race
CPU vs GPU" buttons: the same config (and preset), hence the same seed, on one device or on the CPU and
then the first GPU; with `both=True` it is the "Both presets" button: each preset's defaults from that
seed on the CPU and the first GPU (the CPU half alone without one), kept as `preset_race`
(core.classifier.preset_race).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

from core.classifier.baseline import BaselineResult
from core.classifier.browser_paths import QUIET_LOAD_CPU_S, read_choice, read_cost_s
from core.classifier.datasets import BUILTIN_DATASETS, ProgressCallback, is_cached
from core.classifier.features import Features
from core.classifier.guess import compare_guess
from core.classifier.loaders import Reviews
from core.classifier.model import ClassifierConfig
from core.classifier.preset_race import PresetRace, preset_race, race_configs
from core.classifier.runs import RunRecord, interrupted
from core.classifier.shared_builds import SharedBuilds, reviews_digest
from core.classifier.reports import TrainResult
from core.classifier.training import prepare, prepare_quietly, train
from core.errors import DashboardError
from core.platform.devices import available_devices, has_gpu
from core.platform.jobs import JobHooks, Progress
from core.platform.quiet_work import Listeners, run_quietly
from core.results.guess import Guess
from core.results.train import TrainEpoch, TrainRun

UPLOAD, PATH = "upload", "path"  # the data sources besides BUILTIN_DATASETS' names


@dataclass(frozen=True)
class Upload:
    """One uploaded file; `file_id` changes when the user uploads again, even a file of the same name."""

    name: str
    data: bytes
    file_id: str


PAUSE_TOUCH_S = 0.5  # a paused quiet read calls its progress this often: the page's chance to act on a Stop


@dataclass(frozen=True)
class DataChoice:
    """Where the reviews come from: a built-in data set's name, UPLOAD (with its files) or PATH (with its path)."""

    source: str
    path: str = ""
    uploads: tuple[Upload, ...] = ()

    @property
    def key(self) -> Hashable:
        """Equal for two choices that load the same reviews: the loaded ones are reused."""
        if self.source == UPLOAD:
            return UPLOAD, tuple((u.name, len(u.data), u.file_id) for u in self.uploads)
        return "source", self.source if self.source in BUILTIN_DATASETS else self.path

    @property
    def waiting_for(self) -> str:
        """What this choice still needs before a run can read it; '' when nothing.

        An uploader lists a file at once and sends it in the background, so a click before it
        arrives would find no file: the page disables its run buttons while this says why.
        """
        return "a file to be uploaded" if self.source == UPLOAD and not self.uploads else ""

    def _what(self) -> tuple[bool, str, tuple[tuple[str, bytes], ...]]:
        """read_choice's arguments: plain values, which travel to a quiet child process."""
        return (self.source == UPLOAD, self.source if self.source in BUILTIN_DATASETS else self.path,
                tuple((u.name, u.data) for u in self.uploads))

    def load(self, progress: ProgressCallback | None = None) -> Reviews:
        # a browser user is a stranger: a typed path is read only under the configured data roots
        return read_choice(*self._what(), progress=progress)

    def load_quietly(self, progress: ProgressCallback | None = None) -> Reviews:
        """`load` as a server does it for its sessions: a read estimated at more than QUIET_LOAD_CPU_S of CPU
        (a large upload or archive, aclImdb; never rt-polarity, docs/classifier.md) runs as quiet work
        (core.platform.quiet_work: a process of its own, stopped while a timed job holds or
        waits for a device). Its download progress reaches `progress`, which is also called again (the same
        values) every PAUSE_TOUCH_S while the read is paused: a page redraws there, so a Stop click ends it. A download
        is not stopped midway (its server would drop a connection that stalls for a race): it waits for a moment with
        no timed job (QUIET_WAIT_S at most), then runs to its end, at idle priority from the next timed job on."""
        what = self._what()
        if read_cost_s(*what) <= QUIET_LOAD_CPU_S:
            return self.load(progress)
        last: tuple[int, int | None] = (0, None)
        touched = time.monotonic()

        def step(done: int, total: int | None) -> None:
            nonlocal last, touched
            last, touched = (done, total), time.monotonic()
            if progress is not None:
                progress(done, total)

        def still_going() -> bool:
            if progress is not None and time.monotonic() - touched > PAUSE_TOUCH_S:
                step(*last)
            return False

        downloads = not what[0] and what[1] in BUILTIN_DATASETS and not is_cached(what[1])
        return run_quietly(read_choice, *what, what="reading the reviews", pause=not downloads,
                           listeners=Listeners(on_step=step, should_stop=still_going))


def features_key(config: ClassifierConfig) -> tuple[object, ...]:
    """Every setting `prepare` (the split and the document-term matrices) depends on, and nothing else."""
    return config.weighting, config.ngrams, config.max_features, config.test_size, config.val_fraction, config.seed


def run_configs(config: ClassifierConfig, *, race: bool) -> list[ClassifierConfig]:
    """One run on the chosen device, or a race: the same config and seed on the CPU, then the first GPU."""
    if not race:
        return [config]
    if not has_gpu():
        raise DashboardError("a race needs a GPU; none is visible here, so train on the CPU instead")
    return [replace(config, device="cpu"), replace(config, device=available_devices()[0])]


def both_configs(config: ClassifierConfig) -> list[ClassifierConfig]:
    """The "both presets" runs: lecture then mini-batch defaults, from the chosen seed, on the CPU and the first GPU."""
    return race_configs(config.seed, ["cpu", available_devices()[0]] if has_gpu() else ["cpu"])


PREP_KEPT = 2  # feature sets kept: the two presets' (the lecture's caps its vocabulary) switch without rebuilding


def should_save(result: TrainResult) -> bool:
    """A run that finished all its epochs goes to the shared Results page; a stopped one stays in the history."""
    return bool(result.epochs) and not result.stopped


@dataclass
class Workbench:
    """What the page keeps between reruns. Mutated in place by the methods below, never by the page."""

    reviews: Reviews | None = None
    reviews_key: Hashable = None
    prep: tuple[Features, BaselineResult] | None = None
    prep_key: Hashable = None
    runs: list[RunRecord] = field(default_factory=list)
    model: tuple[str, TrainResult] | None = None  # the latest run's label and kept weights, for "try your own review"
    preset_race: PresetRace | None = None  # the latest "both presets" comparison
    preset_race_runs: int = 0  # how many runs the history held when that comparison finished
    kept_preps: dict[Hashable, tuple[Features, BaselineResult]] = field(default_factory=dict)  # newest last
    status: str = ""  # the latest line about the current run
    shared_features: SharedBuilds[tuple[Features, BaselineResult]] | None = None  # the server's, for every session
    shared_reviews: SharedBuilds[Reviews] | None = None  # the server's built-in data sets, read once
    reviews_id: str = ""  # the loaded reviews' content, for `shared_features`; "" until first needed
    guess_note: str | None = None  # the latest run's guess set beside its measurement (core.classifier.guess)
    quiet: bool = False  # a server's: large feature builds run as quiet work (training.prepare_quietly)

    def mark_interrupted(self) -> None:
        """At the top of a script run nothing trains, so a run still 'running' was stopped."""
        self.runs = interrupted(self.runs)

    def needs_loading(self, choice: DataChoice) -> bool:
        return self.reviews is None or self.reviews_key != choice.key

    def load(self, choice: DataChoice, progress: ProgressCallback | None = None) -> Reviews:
        """The chosen reviews, read only if the choice changed since the last load."""
        if self.needs_loading(choice):
            self.reviews, self.reviews_key = self._read(choice, progress), choice.key
            self.reviews_id = ""  # named again when `shared_features` first needs it
            self.prep = self.prep_key = None
            self.kept_preps.clear()
        assert self.reviews is not None
        return self.reviews

    def _read(self, choice: DataChoice, progress: ProgressCallback | None) -> Reviews:
        """Read the reviews; a built-in data set is read (and downloaded) once for every session of the server."""
        read = choice.load_quietly if self.quiet else choice.load
        if self.shared_reviews is None or choice.source not in BUILTIN_DATASETS:
            return read(progress)
        return self.shared_reviews.get_or_build(choice.key, lambda: read(progress))

    def needs_prepare(self, config: ClassifierConfig) -> bool:
        return self.prep is None or self.prep_key != (self.reviews_key, features_key(config))

    def prepared(self, config: ClassifierConfig, hooks: JobHooks | None = None) -> tuple[Features, BaselineResult]:
        """Features and baseline for the loaded reviews, rebuilt (holding the CPU) only if their settings changed."""
        if self.reviews is None:
            raise DashboardError("load reviews first")
        if self.needs_prepare(config):
            key = (self.reviews_key, features_key(config))
            built = self.kept_preps.pop(key, None) or self._build(config, hooks)
            self.kept_preps[key] = built
            while len(self.kept_preps) > PREP_KEPT:
                self.kept_preps.pop(next(iter(self.kept_preps)))
            self.prep, self.prep_key = built, key
        assert self.prep is not None
        return self.prep

    def _build(self, config: ClassifierConfig, hooks: JobHooks | None) -> tuple[Features, BaselineResult]:
        """Prepare the features, or take the ones another session built from the same reviews and settings."""
        reviews = self.reviews
        assert reviews is not None
        if self.shared_features is None:
            return (prepare_quietly if self.quiet else prepare)(reviews, config, hooks)
        self.reviews_id = self.reviews_id or reviews_digest(reviews)
        return self.shared_features.get_or_build((self.reviews_id, features_key(config)),
                                                 lambda: (prepare_quietly if self.quiet else prepare)(
                                                     reviews, config, hooks),
                                                 None if hooks is None else hooks.should_stop)

    def train(self, config: ClassifierConfig, hooks: JobHooks, *, race: bool = False, both: bool = False,
              on_done: Callable[[TrainRun], None] | None = None,
              guess: Guess | None = None) -> list[TrainResult]:
        """Train one run (or a CPU-then-GPU race) on the prepared features, recording every report.

        `hooks.on_progress` hears a start line per run (item None) and every report (item: an
        TrainEpoch), with the run's label in the message; `on_done` gets each run that finished
        all its epochs as it is saved (its baseline's accuracy filled in), at once, so a page saves it as is.
        `guess` (the student's prediction) is saved with every run and `guess_note` compares it.
        """
        results: list[TrainResult] = []
        self.guess_note = None
        for cfg in both_configs(config) if both else run_configs(config, race=race):
            features, baseline = self.prepared(cfg, hooks)
            result = self._one_run(features, baseline, cfg, hooks)
            results.append(result if guess is None else replace(result, run=replace(result.run, guess=guess)))
            self.guess_note = compare_guess([r.run for r in results], guess)  # each run adds to the comparison
            if on_done is not None and should_save(results[-1]):
                on_done(replace(results[-1].run, baseline_accuracy=baseline.accuracy))
        if both:
            self.preset_race, self.preset_race_runs = preset_race(results, with_gpu=has_gpu()), len(self.runs)
        return results

    @property
    def race_is_latest(self) -> bool:
        """The latest runs were a "both presets" comparison (no Train since): the page shows it first, so its
        chart is what a projector shows after the click, above the last run's own curves."""
        return self.preset_race is not None and bool(self.runs) and len(self.runs) == self.preset_race_runs

    def _one_run(self, features: Features, baseline: BaselineResult, config: ClassifierConfig,
                 hooks: JobHooks) -> TrainResult:
        data = self.reviews.source if self.reviews is not None else ""
        self.runs.append(RunRecord(len(self.runs) + 1, data, config, config.device, baseline=baseline))
        slot = len(self.runs) - 1

        def on_progress(step: Progress[TrainEpoch]) -> None:
            if step.item is not None:
                self.runs[slot] = self.runs[slot].with_report(step.item)
            self._tell(hooks, replace(step, message=f"{self.runs[slot].label}, {step.message}"))

        preset = "the lecture preset " if config.preset == "lecture" else ""
        self._tell(hooks, Progress(0, 0, f"{features.n_train} training, {features.n_val} validation, "
                                         f"{features.n_test} test reviews, {features.vocab_size:,} terms: "
                                         f"training {preset}on {config.device}…"))
        result = train(features, config, replace(hooks, on_progress=on_progress))
        self.runs[slot] = self.runs[slot].finished(result)
        self.model = (self.runs[slot].label, result)
        return result

    def _tell(self, hooks: JobHooks, step: Progress[TrainEpoch]) -> None:
        self.status = step.message
        if hooks.on_progress is not None:
            hooks.on_progress(step)
