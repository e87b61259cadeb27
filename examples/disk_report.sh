#!/bin/bash
# A shell program: the sandbox's only writable place is its scratch space.
set -eu
echo "working in $(pwd) as $(id -u)"
head -c 1048576 /dev/zero > scratch.bin
ls -l scratch.bin
touch /etc/airlock-was-here 2>/dev/null || echo "the root filesystem is read-only, as it should be"
