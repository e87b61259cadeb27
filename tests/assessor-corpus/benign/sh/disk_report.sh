#!/bin/bash
df -h /
du -sh ./* 2>/dev/null | sort -h | tail -10
