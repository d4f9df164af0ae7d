"""Chromium's WebGPU on Mesa's lavapipe, a real Vulkan implementation that offers `shader-f16`, for the tests.

Headless Chromium's own software adapter, SwiftShader, offers no `shader-f16`, so race.js's "webgpu f16"
series would never run in a test. Lavapipe (Debian's mesa-vulkan-drivers; Mesa 24 or later: Dawn refuses Mesa
22.3's lavapipe, "Vulkan shaderUniform*ArrayDynamicIndexing required") offers it, but Chromium's WebGPU takes
a CPU adapter only if it is SwiftShader. So this makes, in a temporary folder:

- a Chromium that is /usr/lib/chromium without SwiftShader's Vulkan driver (the binary linked or copied, the
  rest symlinked), so the only Vulkan device Dawn finds is lavapipe's;
- an implicit Vulkan layer (lavapipe_layer.c, built with the C compiler and libvulkan-dev's headers) that gives
  lavapipe SwiftShader's vendor and device ids, nothing else, and only where GVC_LAVAPIPE_LAYER=1 is set.

The adapter the page sees is lavapipe's (its features and limits: subgroups of 8, `shader-f16`), reported by
Chromium as vendor "google", architecture "swiftshader", a fallback adapter: software, as the page says. Its
timings mean nothing; the point is a real WGSL compiler (Tint) and a real Vulkan driver running the f16 kernel.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHROMIUM_DIR = Path("/usr/lib/chromium")
SWIFTSHADER_FILES = {"libvk_swiftshader.so", "vk_swiftshader_icd.json"}
LAYER_SOURCE = Path(__file__).with_name("lavapipe_layer.c")
LAYER_NAME = "VK_LAYER_GVC_lavapipe_as_swiftshader"
ENABLE, DISABLE = "GVC_LAVAPIPE_LAYER", "GVC_LAVAPIPE_LAYER_OFF"  # the loader takes no implicit layer without both
# Chromium's GPU process on Vulkan (ANGLE too: its SwiftShader is gone), WebGPU's blocklist of CPU adapters off
FLAGS = ["--enable-unsafe-webgpu", "--use-gl=angle", "--use-angle=vulkan", "--ignore-gpu-blocklist",
         "--enable-features=Vulkan", "--use-vulkan=native", "--disable-gpu-sandbox", "--disable-vulkan-surface"]
INSTALL = ("apt-get install mesa-vulkan-drivers libvulkan-dev gcc (Mesa 24 or later: on Debian 12, "
           "from bookworm-backports)")


@dataclass(frozen=True)
class Lavapipe:
    """What Playwright's launch needs: the Chromium to start, its environment and its flags."""

    executable: str
    env: dict[str, str]
    flags: list[str]


def icd() -> str | None:
    """Lavapipe's Vulkan driver manifest: $GVC_LAVAPIPE_ICD (with $GVC_LAVAPIPE_LIBS, the folder of the libraries
    it needs, where it is unpacked beside the system's Mesa: .ci/lavapipe.sh), else the system's."""
    if os.environ.get("GVC_LAVAPIPE_ICD"):
        return os.environ["GVC_LAVAPIPE_ICD"]
    found = sorted(glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json"))
    return found[0] if found else None


def prepare(folder: Path) -> Lavapipe | str:
    """Chromium on lavapipe, made in `folder`; or why it cannot be made here (what to install)."""
    driver = icd()
    if driver is None:
        return f"Mesa's lavapipe is not installed: {INSTALL}"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not Path("/usr/include/vulkan/vk_layer.h").exists():
        return f"no C compiler or Vulkan headers to build the test's Vulkan layer: {INSTALL}"
    if not (CHROMIUM_DIR / "chromium").exists():
        return f"{CHROMIUM_DIR / 'chromium'} not found (Debian: apt-get install chromium)"
    layers = folder / "layers"
    layers.mkdir(parents=True, exist_ok=True)
    library = layers / "libgvc_lavapipe_layer.so"
    built = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o", str(library),
                            str(LAYER_SOURCE)], capture_output=True, text=True)
    if built.returncode:
        return f"the test's Vulkan layer did not build: {built.stderr[-500:]}"
    (layers / "gvc_lavapipe_layer.json").write_text(json.dumps({"file_format_version": "1.1.2", "layer": {
        "name": LAYER_NAME, "type": "GLOBAL", "library_path": str(library), "api_version": "1.3.0",
        "implementation_version": "1", "description": "lavapipe as SwiftShader, for tests",
        "enable_environment": {ENABLE: "1"}, "disable_environment": {DISABLE: "1"}}}))
    browser = folder / "chromium"
    browser.mkdir(exist_ok=True)
    for item in CHROMIUM_DIR.iterdir():
        target = browser / item.name
        if item.name in SWIFTSHADER_FILES or target.exists() or target.is_symlink():
            continue
        if item.name == "chromium":  # the binary itself: its own folder is where it looks for the rest
            try:
                os.link(item, target)
            except OSError:
                shutil.copy2(item, target)
        else:
            target.symlink_to(item)
    env = dict(os.environ, VK_ICD_FILENAMES=driver, VK_ADD_IMPLICIT_LAYER_PATH=str(layers), **{ENABLE: "1"})
    if os.environ.get("GVC_LAVAPIPE_LIBS"):  # a lavapipe unpacked beside the system's needs its own libdrm
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, [os.environ["GVC_LAVAPIPE_LIBS"], env.get("LD_LIBRARY_PATH")]))
    return Lavapipe(executable=str(browser / "chromium"), env=env, flags=FLAGS)
