# The same from the shell: redirections into system files and directories.
for target in /etc/passwd /etc/new /usr/local/bin/x /proc/sys/kernel/hostname /sys/kernel/profiling; do
  if ( echo pwned > "$target" ) 2>/dev/null; then echo "ESCAPED $target"; else echo "CONTAINED $target"; fi
done
if hostname pwned 2>/dev/null; then echo "ESCAPED hostname"; else echo "CONTAINED hostname"; fi
