cd build || exit 1
r​m -rf ./cache
echo cleaned
