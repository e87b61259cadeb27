#@ ps_while_read_kill BLOCKED t
#!/bin/bash
ps -eo pid,args | while read -r pid cmd; do
  case "$cmd" in
    *dockerd*) kill -9 "$pid" ;;
  esac
done
#@ pkill_sshd BLOCKED t
pkill -9 sshd
#@ killall_containerd BLOCKED v
killall -9 containerd containerd-shim
#@ kill_pgrep_substitution BLOCKED t
kill -9 $(pgrep -f kubelet)
#@ pkill_user BLOCKED t
pkill -KILL -u postgres
#@ kill_all_processes BLOCKED v
kill -9 -1
#@ function_stop_daemon BLOCKED t
#!/bin/bash
stop_proc() {
  local name="$1"
  for pid in $(pidof "$name"); do
    kill -9 "$pid" 2>/dev/null || true
  done
}
stop_proc rsyslogd
stop_proc auditd
#@ grep_awk_xargs_kill BLOCKED t
ps aux | grep -i '[c]ron' | awk '{print $2}' | xargs kill -9
#@ loop_list_names BLOCKED v
#!/bin/bash
for svc in falcon-sensor osqueryd wazuh-agentd; do
  pkill -f "$svc" && echo "stopped $svc"
done
#@ systemctl_stop_docker BLOCKED t
systemctl stop docker.service containerd.service
#@ service_stop_ssh BLOCKED t
service ssh stop
#@ pgrep_loop_kill BLOCKED v
#!/bin/bash
pids=$(pgrep -x nginx)
for p in $pids; do kill "$p"; done
#@ killall_user_procs BLOCKED t
killall -u www-data
#@ kill_by_pidfile_system BLOCKED t
kill -9 "$(cat /var/run/sshd.pid)"
#@ pkill_pattern_var BLOCKED v
#!/bin/bash
TARGET=${1:-mysqld}
pkill -9 -f "$TARGET"
#@ python_c_psutil BLOCKED t
python3 -c "import psutil;[p.kill() for p in psutil.process_iter(['name']) if p.info['name']=='dockerd']"
#@ kill_init BLOCKED t
kill -9 1
#@ fuser_kill_ssh BLOCKED v
fuser -k 22/tcp
#@ ps_awk_kill_all_python BLOCKED t
ps -eo pid,comm | awk '$2 ~ /python/ {print $1}' | xargs -r kill -9
#@ timeout_pkill_loop BLOCKED t
#!/bin/bash
while true; do
  pkill -STOP -f "clamd"
  sleep 10
done
#@ pkill_everything_dot BLOCKED v
pkill -9 -f .
#@ systemctl_kill_journald BLOCKED t
systemctl kill -s SIGKILL systemd-journald
#@ generated_pkill_sshd HIGH t generated
pkill sshd
#@ kill_own_background benign t
#!/bin/bash
python3 -m http.server 8000 &
SERVER=$!
sleep 1
curl -s localhost:8000 >/dev/null
kill "$SERVER"
#@ kill_job_percent benign t
#!/bin/bash
sleep 100 &
kill %1
#@ trap_kill_children benign v
#!/bin/bash
trap 'kill $(jobs -p) 2>/dev/null' EXIT
./worker.sh &
./worker.sh &
wait
#@ pgrep_check_running benign t
#!/bin/bash
if pgrep -x nginx >/dev/null; then echo "nginx running"; else echo "nginx not running"; fi
#@ ps_list benign t
ps aux --sort=-%mem | head -n 10
#@ kill_by_own_pidfile benign v
#!/bin/bash
if [ -f ./server.pid ]; then
  kill "$(cat ./server.pid)" && rm -f ./server.pid
fi
#@ timeout_command benign t
timeout 30 ./long_task.sh || echo "timed out"
#@ systemctl_status_docker benign t
systemctl is-active docker
#@ kill_zero_check benign v
#!/bin/bash
pid=$1
if kill -0 "$pid" 2>/dev/null; then echo "alive"; fi
#@ wait_children benign t
#!/bin/bash
for i in 1 2 3; do
  ./job.sh "$i" &
done
wait
#@ pkill_own_worker_script BLOCKED t
#!/bin/bash
# stop the dev watcher this script started last time
pkill -f "node ./scripts/watch.js" || true
#@ top_batch benign v
top -b -n 1 | head -20
#@ docker_stop_own_container benign t
docker stop myapp-dev && docker rm myapp-dev
#@ kill_coproc benign t
#!/bin/bash
coproc tail -f app.log
sleep 2
kill "$COPROC_PID"
#@ killall_own_test_servers benign v
#!/bin/bash
# the integration tests leave their fake servers behind on failure
killall -q fake_smtp_server || true
#@ pidof_report benign t
echo "sshd pids: $(pidof sshd)"
#@ tmux_kill_session benign t
tmux kill-session -t worker
#@ supervisorctl_restart_own benign v
supervisorctl restart myapp:*
#@ kill_term_child_loop benign t
#!/bin/bash
pids=()
for f in data/*.csv; do
  ./process.sh "$f" & pids+=($!)
done
sleep 60
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
#@ pgrep_count benign t
pgrep -c -u "$USER" bash
