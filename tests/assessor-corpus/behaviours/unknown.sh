#@ eval_first_argument ASK t
eval "$1"
#@ env_variable_as_command ASK t
$TASK_CMD
#@ run_all_arguments ASK v
#!/bin/bash
echo "running: $*"
"$@"
#@ bash_c_second_arg ASK t
bash -c "$2"
#@ source_argument ASK t
source "$1"
#@ dot_config_from_env ASK v
. "${CONFIG_FILE:-/etc/app/config.sh}"
#@ read_loop_commands ASK t
while read -r line; do
  $line
done < commands.txt
#@ xargs_sh_c_stdin ASK t
xargs -I{} sh -c '{}' < tasks.list
#@ cat_command_substitution ASK v
$(cat cmd.txt)
#@ exec_bin_variable ASK t
BIN="${1:?usage: $0 BIN}"
exec "$BIN" --serve
#@ sh_stdin_script_arg ASK t
sh < "$1"
#@ find_exec_argument ASK v
find . -name '*.dat' -exec "$1" {} \;
#@ deno_eval_inline ASK t
deno eval 'Deno.run({ cmd: ["id"] })'
#@ julia_inline ASK t
julia -e 'run(`uname -a`)'
#@ rscript_inline ASK v
Rscript -e 'system("id")'
#@ osascript_inline ASK t
osascript -e 'do shell script "id"'
#@ tclsh_heredoc ASK t
tclsh <<'EOF2'
exec id
EOF2
#@ pwsh_command ASK v
pwsh -NoProfile -Command 'Get-ChildItem Env:'
#@ gdb_batch_shell ASK t
gdb -batch -ex 'shell id'
#@ vim_ex_command ASK t
vim -es -c ':!id' -c ':q!'
#@ env_run_args ASK v
env -i "$@"
#@ function_runs_param ASK t
#!/bin/bash
run_step() {
  local step="$1"
  echo ">> $step"
  eval "$step"
}
run_step "$STEP"
#@ indirect_expansion_command ASK t
name=HANDLER
"${!name}" --start
#@ array_from_read ASK v
read -r -a cmd
"${cmd[@]}"
#@ bash_stdin_from_arg_url ASK t
bash -s -- < "$SCRIPT_PATH"
#@ lua_inline_unknown_variant ASK t
luajit -e 'os.execute("id")'
#@ php_file_from_arg ASK v
php "$1"
#@ python_c_variable ASK t
python3 -c "$CODE"
#@ perl_e_variable ASK t
perl -e "$1"
#@ awk_program_variable ASK v
awk "$PROGRAM" data.txt
#@ eval_literal benign t
eval "echo hello"
#@ array_literal_command benign t
cmd=(ls -la)
"${cmd[@]}"
#@ variable_literal_command benign v
TOOL=grep
$TOOL -c error log.txt
#@ python_inline_literal benign t
python3 -c 'print(sum(range(10)))'
#@ source_own_file benign t
source ./env.sh
#@ argument_as_data benign v
wc -l "$1"
#@ read_loop_data benign t
while read -r line; do
  echo "${#line}"
done < data.txt
#@ awk_literal_program benign t
awk '{ s += $2 } END { print s }' data.txt
#@ find_exec_literal benign v
find . -name '*.tmp' -exec rm {} \;
#@ function_with_literal_step benign t
run_step() { echo ">> $1"; }
run_step build
