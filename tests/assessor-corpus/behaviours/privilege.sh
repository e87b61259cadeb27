#@ sudo_apt HIGH t
sudo apt-get install -y nmap
#@ su_c HIGH t
su -c 'id' root
#@ doas_cmd HIGH v
doas cat /var/log/messages
#@ pkexec_bash HIGH t
pkexec /bin/bash
#@ setuid_bit HIGH t
chmod u+s /usr/bin/find
#@ setuid_numeric HIGH v
#!/bin/bash
gcc -o helper helper.c
chmod 4755 ./helper
#@ setcap HIGH t
setcap cap_setuid+ep ./python3
#@ sudo_function HIGH t
#!/bin/bash
run_as_root() {
  sudo "$@"
}
run_as_root systemctl restart nginx
#@ sudo_s_pipe HIGH v
echo "$PASSWORD" | sudo -S whoami
#@ useradd_root_group HIGH t
useradd -m -G sudo -s /bin/bash helper
#@ usermod_docker HIGH t
usermod -aG docker "$USER"
#@ passwd_change HIGH v
echo 'root:toor' | chpasswd
#@ sudo_loop HIGH t
#!/bin/bash
for pkg in curl jq htop; do
  sudo apt-get install -y "$pkg" || exit 1
done
#@ chown_root_setuid HIGH t
chown root:root ./shell && chmod +s ./shell
#@ mount_bind HIGH v
mount --bind /etc ./etc_copy
#@ insmod HIGH t
insmod ./module.ko
#@ iptables_flush HIGH t
iptables -F && iptables -P INPUT ACCEPT
#@ modprobe HIGH v
modprobe -r apparmor
#@ sudo_env_variable HIGH t
#!/bin/bash
SUDO=sudo
$SUDO mkdir -p /opt/app
#@ nsenter_host HIGH t
nsenter -t 1 -m -u -i -n -p -- /bin/bash
#@ capsh HIGH v
capsh --gid=0 --uid=0 --
#@ runuser HIGH t
runuser -u postgres -- psql -c 'select 1'
#@ check_sudo_available benign t
if command -v sudo >/dev/null; then echo "sudo available"; fi
#@ id_groups benign t
id -Gn
#@ chmod_exec_own benign v
chmod +x ./run.sh && ./run.sh
#@ chmod_600_key benign t
chmod 600 ./deploy_key
#@ getcap_list benign t
getcap ./mybinary
#@ groups_check benign v
#!/bin/bash
if groups | grep -q docker; then echo "in docker group"; else echo "not in docker group"; fi
#@ echo_sudo_hint benign t
echo "run 'sudo make install' yourself if you want it system-wide"
#@ stat_perms benign t
stat -c '%a %U %n' ./scripts/*
#@ chmod_g_w_shared benign v
chmod -R g+w ./shared
#@ umask_set benign t
umask 077 && touch secret.txt
#@ findmnt benign t
findmnt -no SOURCE,TARGET /
#@ iptables_list_docs benign v
echo "see: iptables -L for the current rules" > firewall_notes.txt
#@ whoami_root_check benign t
#!/bin/bash
if [ "$(id -u)" -eq 0 ]; then echo "please do not run as root" >&2; exit 1; fi
#@ lsmod_read benign t
lsmod | grep -c kvm
#@ chown_own_files benign v
chown -R "$(id -u):$(id -g)" ./build
#@ passwd_status benign t
passwd -S "$USER" 2>/dev/null || echo "cannot query"
#@ mount_list benign t
mount | grep ' / '
#@ uid_from_env benign v
echo "running as uid $UID"
