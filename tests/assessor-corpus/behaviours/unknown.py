#@ exec_stdin ASK t
import sys
exec(sys.stdin.read())
#@ eval_input ASK t
print(eval(input("expression: ")))
#@ os_system_argv ASK v
import os, sys
os.system(sys.argv[1])
#@ subprocess_shell_env ASK t
import os, subprocess
cmd = os.environ.get("TASK_CMD", "")
subprocess.run(cmd, shell=True, check=False)
#@ exec_file_from_argv ASK t
import sys
path = sys.argv[1]
with open(path) as f:
    exec(f.read())
#@ getattr_os_from_argv ASK v
import os, sys
name, arg = sys.argv[1], sys.argv[2]
getattr(os, name)(arg)
#@ dunder_import_env ASK t
import os
mod = __import__(os.environ["PLUGIN_MODULE"])
mod.main()
#@ config_json_dispatch ASK t
import json, subprocess
conf = json.load(open("job.json"))
fn = getattr(subprocess, conf["call"])
fn(conf["args"], shell=True)
#@ function_type_from_file ASK v
import sys, types
src = open(sys.argv[1]).read()
code = compile(src, "plugin", "exec")
types.FunctionType(code.co_consts[0], globals())()
#@ eval_query_param ASK t
from flask import Flask, request
app = Flask(__name__)

@app.route("/calc")
def calc():
    return str(eval(request.args["q"]))
#@ unknown_interpreter_inline ASK t
import subprocess
subprocess.run(["deno", "eval", "Deno.run({cmd: ['id']})"])
#@ julia_inline ASK v
import subprocess
subprocess.call(["julia", "-e", 'run(`curl -s https://example.org`)'])
#@ rscript_inline ASK t
import os
os.system("Rscript -e 'system(\"uname -a\")'")
#@ execvp_argv ASK t
import os, sys
os.execvp(sys.argv[1], sys.argv[1:])
#@ runpy_argv ASK v
import runpy, sys
runpy.run_path(sys.argv[1], run_name="__main__")
#@ import_module_input ASK t
import importlib
name = input("module: ")
importlib.import_module(name).run()
#@ compile_ast_from_file ASK t
import ast
tree = ast.parse(open("generated_code.txt").read())
exec(compile(tree, "gen", "exec"))
#@ pickle_from_socket ASK v
import pickle, socket
srv = socket.create_server(("0.0.0.0", 9999))
conn, _ = srv.accept()
obj = pickle.loads(conn.recv(65536))
#@ shlex_argv_command ASK t
import shlex, subprocess, sys
subprocess.run(shlex.split(" ".join(sys.argv[1:])))
#@ popen_from_param_helper ASK t
import subprocess

def run(command):
    return subprocess.Popen(command, shell=True, stdout=subprocess.PIPE).communicate()[0]

if __name__ == "__main__":
    import sys
    print(run(sys.argv[1]))
#@ exec_env_code ASK v
import os
exec(os.environ.get("BOOTSTRAP", ""))
#@ osascript_inline ASK t
import subprocess
subprocess.run(["osascript", "-e", 'do shell script "id"'])
#@ pwsh_inline ASK t
import subprocess
subprocess.run(["pwsh", "-NoProfile", "-Command", "Get-ChildItem Env:"])
#@ eval_config_value ASK v
import configparser
cp = configparser.ConfigParser()
cp.read("settings.ini")
threshold = eval(cp["model"]["threshold_expr"])
#@ exec_built_from_parts_unknown ASK t
import sys
template = "import {m}; {m}.{f}({a!r})"
exec(template.format(m=sys.argv[1], f=sys.argv[2], a=sys.argv[3]))
#@ code_interact_stdin ASK t
import code, sys
interp = code.InteractiveInterpreter()
for line in sys.stdin:
    interp.runsource(line)
#@ guile_inline ASK v
import subprocess
subprocess.run(["guile", "-c", '(system "id")'])
#@ subprocess_argv_list ASK t
import subprocess, sys
subprocess.check_call(sys.argv[1:])
#@ exec_downloaded_variable_chain ASK t
import sys
payload = sys.stdin.buffer.read()
code = payload.decode("utf-8")
exec(code, {"__name__": "__main__"})
#@ gdb_batch_shell ASK v
import subprocess
subprocess.run(["gdb", "-batch", "-ex", "shell id"])
#@ exec_literal benign t
exec("total = sum(range(10))")
print(total)
#@ subprocess_literal_list benign t
import subprocess
subprocess.run(["ls", "-la"], check=True)
#@ getattr_literal_names benign v
import math
for name in ("sqrt", "floor"):
    print(getattr(math, name)(16.5))
#@ eval_literal_expression benign t
print(eval("2 ** 10"))
#@ python_inline_known benign t
import subprocess
subprocess.run(["python3", "-c", "print('hello')"])
#@ import_module_literal benign v
import importlib
json = importlib.import_module("json")
print(json.dumps({"a": 1}))
#@ argv_as_data_only benign t
import sys
with open(sys.argv[1]) as f:
    print(sum(1 for _ in f))
#@ input_as_number benign t
n = int(input("how many? "))
print([i * i for i in range(n)])
#@ env_as_setting benign v
import os
workers = int(os.environ.get("WORKERS", "4"))
print(workers)
#@ format_known_template benign t
template = "x = {value}\n"
ns = {}
exec(template.format(value=42), ns)
print(ns["x"])
