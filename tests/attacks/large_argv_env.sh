# The same for bash, which gets its arguments through execve.
echo "argv ${#1} env ${#AIRLOCK_BIG_ENV}"
