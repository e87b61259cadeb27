#!/bin/bash
pkill sshd
