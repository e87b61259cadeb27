#!/bin/bash
curl -k -o report.pdf https://intranet.example.com/report.pdf
