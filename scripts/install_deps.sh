#!/usr/bin/env bash
# Installs the Debian 12 packages Chorus builds and tests with. Safe to run repeatedly.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git python3 python3-pip
  libpcre2-dev libgtest-dev googletest clang libclang-rt-14-dev
  qt6-base-dev libqt6opengl6-dev libxkbcommon-dev qt6-charts-dev qt6-svg-dev qt6-tools-dev
  qt6-httpserver-dev qt6-websockets-dev libqt6sql6-sqlite xvfb xauth
  rpm file dpkg-dev librsvg2-bin desktop-file-utils appstream
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "build dependencies present"
