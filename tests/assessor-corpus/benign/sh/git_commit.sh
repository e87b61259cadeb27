#!/bin/bash
git checkout -b fix/typo
sed -i 's/recieve/receive/g' README.md
git add README.md
git commit -m "Fix typo"
git log --oneline -3
