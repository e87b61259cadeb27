#!/bin/bash
if timeout 2 bash -c 'echo > /dev/tcp/localhost/5432'; then
  echo "postgres is up"
fi
