#!/bin/bash
echo "10.0.0.5 db.internal" >> /etc/hosts
