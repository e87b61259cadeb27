#!/bin/bash
mkdir -p out
for f in images/*.png; do
  convert "$f" -resize 50% "out/$(basename "$f" .png).jpg"
done
