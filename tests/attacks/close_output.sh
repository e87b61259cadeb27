# Closing stdout and stderr early and running on, from bash: exit 3 only after the sleep.
echo "closing stdout and stderr"
exec >&- 2>&-
sleep 1.5
exit 3
