#!/bin/bash
sudo systemctl stop ssh
kill -9 $(pidof sshd)
