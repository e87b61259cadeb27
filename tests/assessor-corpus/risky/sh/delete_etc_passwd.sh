#!/bin/bash
rm -f /etc/passwd
