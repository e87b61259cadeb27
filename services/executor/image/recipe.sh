#!/usr/bin/env bash
# The sandbox image's root filesystem, built offline from Debian packages (no registry needed):
#   recipe.sh OUT.tar
# The executor hashes this file into the image's `airlock.recipe` label, so editing it makes
# `ensure_image` rebuild; `docker import` of OUT.tar then makes the image.
# It carries python3 and bash (the two languages the assessor rates), python3-pip (for the
# package-install step, which runs in a separate container with no user code), coreutils,
# python-is-python3 (`python` as well as `python3`, which agent-written code and tools expect),
# and the system libraries the scientific wheels on PyPI link against but do not bundle
# (manylinux leaves them to the system): the C++ runtime (pandas, scipy, matplotlib, contourpy),
# OpenMP (scikit-learn, numba), the gfortran runtime, zlib, and DejaVu fonts (matplotlib and
# Pillow draw text with them). docs/sandbox.md lists the contents.
set -euo pipefail
out="${1:?usage: recipe.sh OUT.tar}"
suite="${AIRLOCK_IMAGE_SUITE:-bookworm}"
mirror="${AIRLOCK_IMAGE_MIRROR:-http://deb.debian.org/debian}"

mmdebstrap \
  --variant=essential \
  --include=python3,python3-pip,python-is-python3 \
  --include=libstdc++6,libgomp1,libgfortran5,zlib1g,fonts-dejavu-core \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='echo "sandbox:x:1000:1000:airlock sandbox:/tmp:/usr/sbin/nologin" >> "$1/etc/passwd"' \
  --customize-hook='echo "sandbox:x:1000:" >> "$1/etc/group"' \
  `# No setuid or setgid programs: no-new-privileges already neutralises them; this removes them.` \
  --customize-hook='find "$1" -xdev -type f -perm /6000 -exec chmod ug-s {} +' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
  --customize-hook='mkdir -p "$1/opt/airlock/packages"' \
  "$suite" "$out" "$mirror"
