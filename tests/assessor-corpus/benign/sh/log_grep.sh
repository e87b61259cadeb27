#!/bin/bash
grep -E "ERROR|WARN" app.log | awk '{print $1, $2, $5}' | sort | uniq -c | sort -rn | head
