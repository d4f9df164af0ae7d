# Sourced by .ci/run (or by hand before tests/e2e/test_browser_f16.py, as `source .ci/lavapipe.sh DIR`): Mesa's
# lavapipe, a software Vulkan with shaderFloat16, for the test that runs the race's f16 kernel in Chromium
# (tests/e2e/lavapipe.py). Chromium's WebGPU (Dawn) needs the lavapipe of Mesa 24 or later: Debian 12's own
# (22.3) lacks the dynamic indexing of sampled and storage images that Dawn requires. So on Debian 12 the newer
# driver is taken from bookworm-backports (on the mirror of the system's own list) and unpacked into DIR beside
# the system's Mesa, which stays as it is; elsewhere the system's mesa-vulkan-drivers (.ci/run installs it) is
# used. Exports GVC_LAVAPIPE_ICD and GVC_LAVAPIPE_LIBS where it unpacks one; says why where it cannot.
# shellcheck shell=bash
gvc_lavapipe() {
  local dir="$1" codename list=/etc/apt/sources.list.d/gvc-bookworm-backports.sources
  codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
  [ "$codename" = bookworm ] || return 0
  if ! apt-cache policy | grep -q bookworm-backports; then
    [ -f /etc/apt/sources.list.d/debian.sources ] || { echo "no deb822 Debian list to copy" >&2; return 1; }
    # the system's own first Debian stanza (not security's), its suites replaced by bookworm-backports
    awk 'BEGIN { RS = ""; ORS = "\n" } /Suites:.*bookworm/ && !/security/ { print; exit }' \
      /etc/apt/sources.list.d/debian.sources | sed 's/^Suites:.*/Suites: bookworm-backports/' > "$list"
    [ -s "$list" ] || { rm -f "$list"; echo "no Debian stanza for bookworm found" >&2; return 1; }
    apt-get update -q || return 1
  fi
  mkdir -p "$dir/debs" || return 1
  (cd "$dir/debs" && apt-get download -q mesa-vulkan-drivers/bookworm-backports libdrm2/bookworm-backports \
    libdrm-amdgpu1/bookworm-backports) || return 1
  local deb libs="$dir/root/usr/lib/x86_64-linux-gnu"
  for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root" || return 1; done
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' \
    "$libs/libvulkan_lvp.so" > "$dir/lvp_icd.json"
  export GVC_LAVAPIPE_ICD="$dir/lvp_icd.json" GVC_LAVAPIPE_LIBS="$libs"
}
gvc_lavapipe "$1" || echo "lavapipe of Mesa 24 or later not set up: tests/e2e/test_browser_f16.py will say so" >&2
