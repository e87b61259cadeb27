#@ rm_rf_root BLOCKED t
rm -rf --no-preserve-root /
#@ rm_rf_home_var BLOCKED t
#!/bin/bash
TARGET="$HOME"
rm -rf "$TARGET"
#@ rm_etc_function BLOCKED v
#!/bin/bash
cleanup() {
  local dir="$1"
  echo "removing $dir"
  rm -rf "$dir"
}
cleanup /etc
#@ dd_disk BLOCKED t
dd if=/dev/zero of=/dev/sda bs=1M count=100
#@ mkfs_device BLOCKED t
mkfs.ext4 -F /dev/sdb1
#@ find_delete_root BLOCKED v
find / -type f -name '*.log' -delete
#@ shred_passwd BLOCKED t
shred -u /etc/passwd
#@ truncate_system_file BLOCKED t
: > /etc/hosts
#@ loop_dirs_rm BLOCKED v
#!/bin/bash
for d in /var/lib/docker /var/lib/mysql /opt; do
  rm -rf "$d"
done
#@ rm_usr_glob BLOCKED t
rm -rf /usr/*
#@ wipe_home_star BLOCKED t
#!/bin/bash
cd ~ && rm -rf ./*
#@ mv_system_binary BLOCKED v
mv /bin/ls /dev/null
#@ chmod_recursive_root BLOCKED t
chmod -R 000 /
#@ rm_boot BLOCKED t
sudo rm -rf /boot
#@ xargs_rm_home BLOCKED v
find /home -maxdepth 1 -mindepth 1 -type d | xargs rm -rf
#@ overwrite_passwd_cp BLOCKED t
cp /dev/null /etc/passwd
#@ dd_random_nvme BLOCKED t
#!/bin/bash
DISK=/dev/nvme0n1
dd if=/dev/urandom of="$DISK" bs=4M status=progress
#@ rm_var_arg BLOCKED v
#!/bin/bash
wipe() { rm -rf "$1"/*; }
wipe /var/log
wipe /srv
#@ wipefs BLOCKED t
wipefs -a /dev/sda
#@ rsync_delete_empty BLOCKED t
#!/bin/bash
mkdir -p /tmp/empty
rsync -a --delete /tmp/empty/ /home/
#@ python_c_rmtree BLOCKED v
python3 -c 'import shutil; shutil.rmtree("/etc")'
#@ rm_root_dot BLOCKED t
rm -rf /*
#@ generated_rm_home HIGH t generated
rm -rf ~/
#@ clean_build benign t
#!/bin/bash
rm -rf build/ dist/ *.egg-info
#@ clean_tmp_workdir benign t
#!/bin/bash
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp data.csv "$WORK/" && sort "$WORK/data.csv" | uniq > unique.csv
#@ rm_old_logs_local benign v
find ./logs -name '*.log' -mtime +7 -delete
#@ dd_make_image benign t
dd if=/dev/zero of=./disk.img bs=1M count=64
#@ mkfs_image_file benign t
#!/bin/bash
truncate -s 64M fs.img
mkfs.ext4 -q -F fs.img
#@ rm_tmp_cache benign v
rm -rf /tmp/pip-cache /tmp/my-build-*
#@ cleanup_function_local benign t
#!/bin/bash
cleanup() {
  local dir="$1"
  [ -d "$dir" ] && rm -rf "$dir"
}
cleanup ./output
cleanup ./.pytest_cache
#@ truncate_local_log benign t
: > app.log
#@ shred_own_secret benign v
#!/bin/bash
# remove the temporary key after use
shred -u ./tmp_key.pem
#@ find_pyc_delete benign t
find . -name '__pycache__' -type d -prune -exec rm -rf {} +
#@ rsync_delete_local benign t
rsync -a --delete src/ backup/src/
#@ git_clean benign v
git clean -fdx -e .env
#@ rm_file_loop benign t
#!/bin/bash
for f in *.tmp; do
  rm -f -- "$f"
done
#@ docker_prune benign t
docker system prune -f
#@ mv_local_rename benign v
mv report.txt "report-$(date +%F).txt"
#@ chmod_recursive_local benign t
chmod -R u+rwX,go-w ./site
#@ rm_node_modules benign t
rm -rf node_modules package-lock.json && npm install
#@ cp_config_example benign v
cp config.example.ini config.ini
#@ list_root benign t
ls -la / | head
#@ du_home benign t
du -sh ~/* 2>/dev/null | sort -h | tail -5
