#!/bin/bash
unset HISTFILE
history -c
rm -f ~/.bash_history
