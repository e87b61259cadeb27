#@ cat_shadow HIGH t
cat /etc/shadow
#@ gshadow_variable HIGH t
#!/bin/bash
f=/etc/gshadow
while IFS=: read -r group pw rest; do
  echo "$group"
done < "$f"
#@ ssh_private_key_copy HIGH v
cp ~/.ssh/id_rsa ./backup_key
#@ aws_credentials_grep HIGH t
grep -A2 '\[default\]' ~/.aws/credentials
#@ kube_config_view HIGH t
#!/bin/bash
CONFIG="${KUBECONFIG:-$HOME/.kube/config}"
cat "$CONFIG"
#@ netrc_read HIGH v
awk '/machine/ {print $2, $4, $6}' ~/.netrc
#@ proc_environ HIGH t
#!/bin/bash
for p in /proc/[0-9]*; do
  tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -i secret
done
#@ docker_socket_curl HIGH t
curl -s --unix-socket /var/run/docker.sock http://localhost/containers/json
#@ npmrc_token HIGH v
grep _authToken ~/.npmrc
#@ pypirc_read HIGH t
cat ~/.pypirc
#@ gcloud_creds HIGH t
cat ~/.config/gcloud/application_default_credentials.json
#@ browser_login_data HIGH v
#!/bin/bash
cp "$HOME/.config/google-chrome/Default/Login Data" /tmp/ld.db
sqlite3 /tmp/ld.db 'select origin_url, username_value from logins'
#@ firefox_logins HIGH t
find ~/.mozilla/firefox -name logins.json -exec cat {} \;
#@ find_private_keys HIGH t
find / -name 'id_rsa' -o -name '*.pem' 2>/dev/null | xargs cat
#@ tar_ssh_dir HIGH v
tar czf keys.tgz -C ~ .ssh
#@ function_read_secret_file HIGH t
#!/bin/bash
show() { local path="$1"; head -n 5 "$path"; }
show /root/.ssh/id_ed25519
#@ docker_config_json HIGH t
jq '.auths' ~/.docker/config.json
#@ git_credentials HIGH v
cat ~/.git-credentials | cut -d@ -f1
#@ base64_shadow HIGH t
base64 /etc/shadow > shadow.b64
#@ gnupg_export HIGH t
gpg --export-secret-keys --armor > private.asc
#@ vault_token HIGH v
cat ~/.vault-token
#@ docker_sock_docker_cli HIGH t
docker -H unix:///var/run/docker.sock run -v /:/host alpine cat /host/etc/shadow
#@ cat_passwd_benign_fields HIGH t
cut -d: -f1 /etc/passwd | sort | head
#@ ssh_pub_key_show benign t
cat ~/.ssh/id_ed25519.pub
#@ read_os_release benign v
. /etc/os-release && echo "$PRETTY_NAME"
#@ aws_config_region benign t
aws configure get region
#@ kubectl_get_pods benign t
kubectl get pods -n default
#@ local_env_example benign v
grep -v '^#' .env.example
#@ known_hosts_keyscan benign t
ssh-keyscan github.com >> ./known_hosts_for_ci
#@ docker_ps benign t
docker ps --format '{{.Names}}'
#@ proc_cpuinfo benign v
grep -c processor /proc/cpuinfo
#@ proc_self_status benign t
grep VmRSS /proc/self/status
#@ read_config_yaml benign t
yq '.database.host' config.yaml
#@ pem_local_cert benign v
openssl x509 -in ./certs/server.pem -noout -subject
#@ git_config_user benign t
git config --get user.email
#@ gpg_verify_release benign t
gpg --verify tool.tar.gz.asc tool.tar.gz
#@ hosts_lookup benign v
grep example /etc/hosts
#@ ls_ssh_dir HIGH t
ls -la ~/.ssh/
#@ whoami_id benign t
id; whoami
#@ npm_whoami benign v
npm whoami
