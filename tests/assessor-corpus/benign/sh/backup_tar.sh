#!/bin/bash
set -euo pipefail
stamp=$(date +%Y%m%d)
mkdir -p backups
tar czf "backups/data-$stamp.tgz" data/
ls -lh backups/
