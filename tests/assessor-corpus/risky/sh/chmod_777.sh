#!/bin/bash
mkdir -p shared
chmod 777 shared
