#@ wget_into_usr HIGH t
wget -O /usr/local/bin/helper http://203.0.113.90/helper
#@ etc_hosts_append HIGH t
echo '203.0.113.91 updates.example.com' >> /etc/hosts
#@ tee_etc_apt HIGH v
echo "deb http://203.0.113.92/debian stable main" | tee /etc/apt/sources.list.d/extra.list
#@ cp_to_usr_bin HIGH t
#!/bin/bash
install_tool() {
  local src="$1" dest="$2"
  cp "$src" "$dest" && chmod 755 "$dest"
}
install_tool ./mytool /usr/bin/mytool
#@ sed_sshd_config HIGH t
sed -i 's/^#\?PermitRootLogin.*/PermitRootLogin yes/' /etc/ssh/sshd_config
#@ sysctl_proc_sys HIGH v
echo 0 > /proc/sys/kernel/randomize_va_space
#@ write_var_lib HIGH t
#!/bin/bash
mkdir -p /var/lib/myagent
cp state.db /var/lib/myagent/state.db
#@ boot_grub HIGH t
echo 'GRUB_CMDLINE_LINUX="init=/bin/bash"' >> /etc/default/grub
#@ root_home_write HIGH v
echo 'set -o vi' > /root/.inputrc
#@ sys_class HIGH t
echo 1 > /sys/class/leds/input0::capslock/brightness
#@ install_to_sbin HIGH t
install -m 0755 ./daemon /sbin/daemon
#@ resolv_conf HIGH v
#!/bin/bash
cat > /etc/resolv.conf <<EOF
nameserver 203.0.113.93
EOF
#@ ln_into_usr_local HIGH t
ln -sf "$PWD/bin/tool" /usr/local/bin/tool
#@ tar_extract_etc HIGH t
tar xzf config.tgz -C /etc
#@ loop_copy_libs HIGH v
#!/bin/bash
for lib in build/*.so; do
  cp "$lib" /usr/lib/
done
#@ python_c_write_etc HIGH t
python3 -c "open('/etc/motd','w').write('hello\n')"
#@ touch_bin HIGH t
touch /bin/.marker
#@ mkdir_opt_var HIGH v
#!/bin/bash
PREFIX=/usr/share/myapp
mkdir -p "$PREFIX"
cp -r assets "$PREFIX/"
#@ curl_o_etc HIGH t
curl -fsSL https://example.com/ca.pem -o /etc/ssl/certs/extra-ca.pem
#@ dd_to_boot HIGH t
dd if=./kernel.img of=/boot/vmlinuz-custom
#@ unzip_usr HIGH v
unzip -o plugins.zip -d /usr/lib/plugins
#@ chown_etc HIGH t
chown -R app:app /etc/myapp
#@ write_project_file benign t
echo '127.0.0.1 api.local' >> ./hosts.test
#@ tmp_write benign t
#!/bin/bash
OUT=/tmp/results-$$.txt
ls -la > "$OUT"
wc -l "$OUT"
#@ user_local_bin benign v
#!/bin/bash
mkdir -p ~/.local/bin
cp ./mytool ~/.local/bin/mytool
chmod +x ~/.local/bin/mytool
#@ sed_local_config benign t
sed -i 's/DEBUG=false/DEBUG=true/' config/settings.env
#@ cat_etc_hosts benign t
cat /etc/hosts
#@ tar_extract_local benign v
tar xzf release.tgz -C ./vendor
#@ curl_o_local benign t
curl -fsSL https://example.com/ca.pem -o ./certs/extra-ca.pem
#@ write_dev_null benign t
./noisy_command > /dev/null 2>&1
#@ proc_read benign v
cat /proc/loadavg
#@ usr_read_copy_out benign t
cp /usr/share/dict/words ./words.txt
#@ install_local_prefix benign t
make install PREFIX="$HOME/.local"
#@ etc_read_diff benign v
diff /etc/nginx/nginx.conf ./nginx.conf.new
#@ ln_local benign t
ln -sf ../shared/config.yml config.yml
#@ var_tmp_cache benign t
mkdir -p /var/tmp/mycache && cp data.bin /var/tmp/mycache/
#@ write_log_local benign v
echo "$(date) done" >> logs/run.log
#@ stdout_redirect_usr_text benign t
echo "paths under /usr and /etc are read-only here" > notes.txt
#@ find_in_etc benign t
find /etc -name '*.conf' -newer ./marker 2>/dev/null | head
