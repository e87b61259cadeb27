#!/bin/bash
for host in web1 web2; do
  ssh "deploy@$host" uptime
done
