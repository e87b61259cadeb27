# Disk fill from the shell, also trying places that are not writable at all.
for target in /fill /var/tmp/fill /home/fill /opt/fill; do
  if ( : > "$target" ) 2>/dev/null; then echo "ESCAPED wrote $target"; else echo "CONTAINED $target"; fi
done
head -c 2000000000 /dev/zero > /tmp/fill 2>/dev/null
echo "CONTAINED head stopped"
sleep 30
