#!/bin/sh
cut -d, -f2 orders.csv | tail -n +2 | sort | uniq -c | sort -rn | head -20 > top_customers.txt
wc -l top_customers.txt
