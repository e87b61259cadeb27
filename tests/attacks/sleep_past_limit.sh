# Sleeping past the limit: no CPU used, still killed at the wall time.
echo "going to sleep"
sleep 3600
echo "ESCAPED woke up"
