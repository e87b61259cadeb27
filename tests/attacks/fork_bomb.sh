# The classic shell fork bomb. The top level stays alive after lighting it, so the bomb is never
# cut short by the program's own end (PID 1 kills what is left): it must meet the pids limit.
bomb() { bomb | bomb & }
bomb
wait
sleep 20
