#!/usr/bin/env bash
# Build the Linux packages from a configured build dir, then install the .deb with apt,
# run the installed programs, purge the package and check that nothing it installed is
# left behind.
#
#   packaging/ci/linux_package_check.sh BUILD_DIR
#
# Needs root (apt-get install). Installs the tools it uses (rpm for the .rpm, librsvg2-bin
# for the icon renders, the validators) when they are missing. Safe to run again: a
# previous chorus package is purged first, and the trap purges it on failure too.
set -euo pipefail

log() { printf '[linux-package] %s\n' "$*"; }
die() { printf '[linux-package] FAIL: %s\n' "$*" >&2; exit 1; }

[[ $# -eq 1 ]] || die "usage: $0 BUILD_DIR"
BUILD_DIR=$(realpath "$1")
REPO_ROOT=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../..")
PEER_DIR=$(realpath -m "$REPO_ROOT/../shared/peer")
[[ -f $BUILD_DIR/CMakeCache.txt ]] || die "$BUILD_DIR is not a configured CMake build dir"
[[ $(id -u) -eq 0 ]] || die "needs root for apt-get install/remove"
t_start=$SECONDS

# ---- tools ---------------------------------------------------------------------------
need_pkgs=()
command -v rpmbuild >/dev/null || need_pkgs+=(rpm)
command -v rsvg-convert >/dev/null || need_pkgs+=(librsvg2-bin)
command -v desktop-file-validate >/dev/null || need_pkgs+=(desktop-file-utils)
command -v appstreamcli >/dev/null || need_pkgs+=(appstream)
command -v file >/dev/null || need_pkgs+=(file)
if ((${#need_pkgs[@]})); then
  log "installing ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
  # A renderer that appeared after configure must be picked up by CMake.
  cmake "$BUILD_DIR" >/dev/null
fi

purge_chorus() {
  local p
  for p in chorus-cuda chorus; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok'; then
      DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -qq "$p" >/dev/null
    fi
  done
}
on_exit() {
  local rc=$?
  if ((rc != 0)); then
    log "cleaning up after failure"
    purge_chorus || true
  fi
  exit "$rc"
}
trap on_exit EXIT
purge_chorus  # a leftover from an interrupted run would hide what this one installs

# ---- build and package ---------------------------------------------------------------
log "building $BUILD_DIR"
cmake --build "$BUILD_DIR" -j2 >/dev/null
cd "$BUILD_DIR"
rm -f chorus_*.deb chorus-cuda_*.deb chorus-*.rpm chorus-*-linux-*.tar.gz ./*.sha256
t_cpack=$SECONDS
log "cpack (DEB RPM TGZ)"
cpack -G "DEB;RPM;TGZ" >cpack.log 2>&1 || { cat cpack.log; die "cpack failed"; }
log "cpack took $((SECONDS - t_cpack)) s"

shopt -s nullglob
debs=(chorus_*.deb); rpms=(chorus-[0-9]*.rpm); tgzs=(chorus-*-linux-*.tar.gz)
shopt -u nullglob
((${#debs[@]} == 1)) || die "expected one chorus_*.deb, found ${#debs[@]}"
((${#rpms[@]} == 1)) || die "expected one chorus-*.rpm, found ${#rpms[@]}"
((${#tgzs[@]} == 1)) || die "expected one chorus-*-linux-*.tar.gz, found ${#tgzs[@]}"
deb=${debs[0]}
log "packages: $(ls chorus_*.deb chorus-cuda_*.deb chorus-*.rpm chorus-*-linux-*.tar.gz 2>/dev/null | xargs)"

# ---- what the packages say -----------------------------------------------------------
depends=$(dpkg-deb -f "$deb" Depends)
log "deb Depends: $depends"
[[ $depends == *libc6* ]] || die "Depends lacks libc6: shlibdeps did not run"
# The listing is kept in a variable: `dpkg-deb -c | grep -q` would die of SIGPIPE under pipefail.
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's#^\./#/#')
has_gui=0
grep -qx /usr/bin/chorus <<<"$contents" && has_gui=1
grep -qx /usr/bin/chorus-cli <<<"$contents" || die "$deb has no /usr/bin/chorus-cli"
grep -qx /usr/share/doc/chorus/copyright <<<"$contents" || die "$deb has no copyright file"
rpm_requires=$(rpm -qpR "${rpms[0]}")
grep -q '^libc\.so\.6' <<<"$rpm_requires" || die "rpm has no automatic requirements"
tgz_contents=$(tar -tzf "${tgzs[0]}")
grep -q '/bin/chorus-cli$' <<<"$tgz_contents" || die "tarball has no bin/chorus-cli"
if ((has_gui)); then
  [[ $depends == *libqt6widgets6* ]] || die "GUI package does not depend on libqt6widgets6"
  for f in usr/share/applications/chorus.desktop usr/share/metainfo/io.github.chorus.Chorus.metainfo.xml \
           usr/share/icons/hicolor/scalable/apps/chorus.svg usr/share/icons/hicolor/48x48/apps/chorus.png \
           usr/share/icons/hicolor/128x128/apps/chorus.png usr/share/icons/hicolor/256x256/apps/chorus.png; do
    grep -qx "/$f" <<<"$contents" || die "$deb lacks /$f"
  done
  metainfos=$(grep '^/usr/share/metainfo/.*\.xml$' <<<"$contents" || true)
  desktops=$(grep '^/usr/share/applications/.*\.desktop$' <<<"$contents" || true)
  (($(wc -l <<<"$metainfos") == 1)) || log "WARNING: more than one AppStream file:" $metainfos
  (($(wc -l <<<"$desktops") == 1)) || log "WARNING: more than one desktop entry:" $desktops
else
  log "this build has no GUI (CHORUS_GUI=OFF or app/gui missing): checking chorus-cli only"
fi

# ---- install -------------------------------------------------------------------------
files_before=$(mktemp)
log "apt-get install ./$deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$deb" >apt-install.log 2>&1 ||
  { cat apt-install.log; die "apt-get install failed"; }
dpkg -L chorus | sort >"$files_before"
log "installed $(wc -l <"$files_before") paths"

# ---- run the installed programs (from PATH, outside the build tree) --------------------
cd /
[[ $(command -v chorus-cli) == /usr/bin/chorus-cli ]] || die "chorus-cli is not /usr/bin/chorus-cli"
tiny_model=$PEER_DIR/logits/tiny-llama-q8_0.gguf
if [[ -f $tiny_model ]]; then
  info=$(chorus-cli info --model "$tiny_model") || die "chorus-cli info failed"
  grep -qi llama <<<"$info" || die "chorus-cli info does not name the architecture: $info"
  log "chorus-cli info on the tiny model: ok"
fi

if ((has_gui)); then
  appstreamcli validate --no-net /usr/share/metainfo/io.github.chorus.Chorus.metainfo.xml >/dev/null ||
    die "installed AppStream metainfo does not validate"
  desktop-file-validate /usr/share/applications/chorus.desktop || die "installed desktop entry does not validate"
  version_out=$(QT_QPA_PLATFORM=offscreen chorus --version) || die "chorus --version failed"
  log "chorus --version: $version_out"
  [[ -n $version_out ]] || die "chorus --version printed nothing"

  default_model=${XDG_DATA_HOME:-$HOME/.local/share}/chorus/models/SmolLM2-135M-Instruct.Q4_1.gguf
  demo_args=()
  if [[ -f $default_model ]]; then
    # Named explicitly: the run below has a scratch home, where the default is not.
    log "demo with the default model $default_model"
    demo_args=(--model "$default_model")
  elif [[ -f $tiny_model ]]; then
    log "no default model; demo with the tiny model $tiny_model"
    demo_args=(--model "$tiny_model")
  elif QT_QPA_PLATFORM=offscreen chorus --help 2>&1 | grep -q -- --fake-engine; then
    log "no model present: demo with --fake-engine (the engine is NOT exercised)"
    demo_args=(--fake-engine)
  else
    log "no model present and no --fake-engine: demo without a model"
  fi
  shot=$BUILD_DIR/package-check-screenshot.png  # kept for a person to look at
  rm -f "$shot"
  # A throw-away home keeps the chat store and settings of this run off the machine.
  scratch_home=$(mktemp -d)
  t_demo=$SECONDS
  HOME=$scratch_home XDG_DATA_HOME=$scratch_home/.local/share XDG_CONFIG_HOME=$scratch_home/.config \
    XDG_RUNTIME_DIR=$scratch_home QT_QPA_PLATFORM=offscreen \
    chorus -platform offscreen --demo 1 --screenshot "$shot" --quit-after-ms 60000 "${demo_args[@]}" \
    || die "chorus --demo 1 failed"
  rm -rf "$scratch_home"
  [[ -s $shot ]] || die "chorus --demo did not write the screenshot $shot"
  file "$shot" | grep -q 'PNG image data' || die "$shot is not a PNG: $(file "$shot")"
  log "demo took $((SECONDS - t_demo)) s, screenshot $shot: $(file -b "$shot")"
fi

# ---- remove and look for leftovers ---------------------------------------------------
log "apt-get remove --purge chorus"
DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -qq chorus >/dev/null
! dpkg-query -W -f='${Status}' chorus 2>/dev/null | grep -q 'install ok' || die "chorus is still installed"
left=()
while IFS= read -r path; do
  [[ $path == /. || -z $path ]] && continue
  if [[ -L $path || -f $path ]]; then
    left+=("$path")
  elif [[ -d $path ]]; then
    # Shared directories (/usr/bin, the icon theme's) stay; one only Chorus owned must go.
    dpkg -S "$path" >/dev/null 2>&1 || left+=("$path/ ($(ls -A "$path" | head -3 | xargs))")
  fi
done <"$files_before"
rm -f "$files_before"
((${#left[@]} == 0)) || die "left behind after purge: ${left[*]}"
log "nothing left behind"
log "OK in $((SECONDS - t_start)) s"
