#!/bin/bash
find ./build -name '*.o' -delete
rm -rf ./build/tmp ./dist
echo "clean"
