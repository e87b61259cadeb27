#@ wget_O_usr_share HIGH t
wget -O /usr/share/keyrings/vendor.gpg https://example.com/vendor.gpg
#@ curl_o_usr_local_bin HIGH t
curl -fsSL -o /usr/local/bin/kubectl https://dl.example.com/kubectl
#@ wget_P_opt HIGH v
wget -q -P /opt/tools https://example.com/tool.tar.gz
#@ curl_redirect_etc HIGH t
curl -fsSL https://example.com/repo.list > /etc/apt/sources.list.d/example.list
#@ function_download_dest HIGH t
#!/bin/bash
download_file() {
  local url="$1" dest="$2"
  curl -fL --retry 3 -o "$dest" "$url"
}
download_file https://example.com/agent /usr/bin/agent
#@ loop_download_lib HIGH v
#!/bin/bash
for lib in libfoo.so libbar.so; do
  wget -q "https://example.com/libs/$lib" -O "/usr/lib/$lib"
done
#@ curl_tee_etc HIGH t
curl -s https://example.com/hosts.txt | tee -a /etc/hosts
#@ tar_pipe_usr HIGH t
curl -sL https://example.com/node.tar.xz | tar xJ -C /usr/local
#@ wget_boot HIGH v
wget -O /boot/initrd-custom.img http://203.0.113.95/initrd.img
#@ curl_root_dir HIGH t
curl -o /root/tool.sh https://example.com/tool.sh
#@ dest_variable HIGH t
#!/bin/bash
DEST=/usr/local/sbin
mkdir -p "$DEST"
wget -q -O "$DEST/helper" https://example.com/helper
#@ rsync_remote_to_usr HIGH v
rsync -a mirror.example.com::tools/ /usr/local/tools/
#@ scp_to_etc HIGH t
scp admin@203.0.113.96:/srv/conf/app.conf /etc/app.conf
#@ python_c_urlretrieve_usr HIGH t
python3 -c "import urllib.request; urllib.request.urlretrieve('https://example.com/x', '/usr/local/bin/x')"
#@ aria2c_dir_var_lib HIGH v
aria2c -d /var/lib/models https://example.com/model.bin
#@ curl_O_cd_bin HIGH t
cd /usr/local/bin && curl -fsSLO https://example.com/jq
#@ wget_etc_ssl HIGH t
wget -O /etc/ssl/certs/corp.pem http://203.0.113.97/corp.pem
#@ sys_firmware HIGH v
curl -s -o /lib/firmware/custom.bin https://example.com/fw.bin
#@ pip_target_usr HIGH t
pip install --target /usr/lib/python3/dist-packages requests
#@ git_clone_opt HIGH t
git clone https://example.com/agent.git /opt/agent
#@ ftp_to_var_lib HIGH v
wget -q ftp://203.0.113.98/data.db -O /var/lib/app/data.db
#@ download_into_cwd benign t
curl -fsSL -o kubectl https://dl.example.com/kubectl
#@ wget_tmp benign t
wget -q -O /tmp/dataset.zip https://example.com/dataset.zip && unzip -o /tmp/dataset.zip -d data/
#@ download_home_local_bin benign v
#!/bin/bash
mkdir -p "$HOME/.local/bin"
curl -fsSL -o "$HOME/.local/bin/jq" https://example.com/jq
chmod +x "$HOME/.local/bin/jq"
#@ function_download_local benign t
#!/bin/bash
download_file() {
  local url="$1" dest="$2"
  curl -fL --retry 3 -o "$dest" "$url"
}
download_file https://example.com/data.csv ./data/data.csv
#@ wget_P_downloads benign t
wget -P ./downloads https://example.com/report.pdf
#@ tar_pipe_vendor benign v
curl -sL https://example.com/lib.tgz | tar xz -C ./third_party
#@ git_clone_local benign t
git clone --depth 1 https://github.com/example/project.git
#@ pip_install_user benign t
pip install --user requests==2.32.3
#@ curl_print benign v
curl -s https://example.com/robots.txt
#@ loop_download_pages benign t
#!/bin/bash
mkdir -p pages
for i in $(seq 1 5); do
  curl -fsS "https://api.example.com/items?page=$i" -o "pages/$i.json"
  sleep 1
done
#@ scp_from_server_local benign t
scp deploy@staging.example.com:/var/log/app.log ./logs/
#@ rsync_mirror_local benign v
rsync -a mirror.example.com::docs/ ./docs-mirror/
#@ aria2c_local benign t
aria2c -x 4 -d ./models https://example.com/model.bin
#@ wget_continue benign t
wget -c https://example.com/big.iso
#@ curl_o_var_tmp benign v
curl -s -o /var/tmp/cache.json https://api.example.com/config
#@ docker_pull_run benign t
docker pull python:3.12-slim && docker run --rm python:3.12-slim python -V
#@ download_to_dir_var benign t
#!/bin/bash
OUTDIR="${1:-./out}"
mkdir -p "$OUTDIR"
wget -q -O "$OUTDIR/index.html" https://example.com/
